package apiclient

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
)

// CreateJob starts an agent job. It is not idempotent, so it is retried
// only when the request certainly did not reach the server.
func (c *Client) CreateJob(ctx context.Context, projectID, prompt string) (*Job, error) {
	if projectID == "" {
		return nil, fmt.Errorf("create job: empty project id")
	}
	body, err := json.Marshal(CreateJobRequest{Prompt: prompt})
	if err != nil {
		return nil, fmt.Errorf("create job: encoding request: %w", err)
	}
	var job Job
	err = c.do(ctx, request{
		endpoint: EndpointCreateJob,
		method:   "POST",
		path:     "/v2/agent/" + url.PathEscape(projectID) + "/job",
		body:     body,
	}, &job)
	if err != nil {
		return nil, err
	}
	if job.ID == "" {
		return nil, fmt.Errorf("mintlify API %s: response has no job id", EndpointCreateJob)
	}
	return &job, nil
}

// GetJob reads an agent job's current state.
func (c *Client) GetJob(ctx context.Context, projectID, jobID string) (*Job, error) {
	if projectID == "" || jobID == "" {
		return nil, fmt.Errorf("get job: empty project or job id")
	}
	var job Job
	err := c.do(ctx, request{
		endpoint:   EndpointGetJob,
		method:     "GET",
		path:       "/v2/agent/" + url.PathEscape(projectID) + "/job/" + url.PathEscape(jobID),
		idempotent: true,
	}, &job)
	if err != nil {
		return nil, err
	}
	return &job, nil
}
