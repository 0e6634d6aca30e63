package apiclient

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// The agent job endpoints.
var (
	EndpointCreateJob = operationEndpoint("create_job")
	EndpointGetJob    = operationEndpoint("get_job")
	// EndpointSendMessage is the follow-up message to an existing job.
	EndpointSendMessage = operationEndpoint("send_message")
)

// CreateJob starts an agent job. It is not idempotent, so it is retried
// only when the request certainly did not reach the server.
func (c *Client) CreateJob(ctx context.Context, projectID, prompt string) (*Job, error) {
	job, _, err := c.CreateJobWithStatus(ctx, projectID, prompt)
	return job, err
}

// CreateJobWithStatus is CreateJob that also returns the HTTP status of the
// API's successful answer (the API does not document whether it is 200 or
// 201; the agent gateway echoes it).
func (c *Client) CreateJobWithStatus(ctx context.Context, projectID, prompt string) (*Job, int, error) {
	project, err := segment("project id", projectID)
	if err != nil {
		return nil, 0, fmt.Errorf("create job: %w", err)
	}
	body, err := json.Marshal(CreateJobRequest{Prompt: prompt})
	if err != nil {
		return nil, 0, fmt.Errorf("create job: encoding request: %w", err)
	}
	var (
		job    Job
		status int
	)
	err = c.do(ctx, request{
		endpoint: EndpointCreateJob,
		method:   "POST",
		path:     "/v2/agent/" + project + "/job",
		body:     body,
		status:   &status,
	}, &job)
	if err != nil {
		return nil, 0, err
	}
	if job.ID == "" {
		return nil, status, fmt.Errorf("mintlify API %s: response has no job id", EndpointCreateJob)
	}
	return &job, status, nil
}

// GetJob reads an agent job's current state.
func (c *Client) GetJob(ctx context.Context, projectID, jobID string) (*Job, error) {
	project, err := segment("project id", projectID)
	if err != nil {
		return nil, fmt.Errorf("get job: %w", err)
	}
	id, err := segment("job id", jobID)
	if err != nil {
		return nil, fmt.Errorf("get job: %w", err)
	}
	var job Job
	err = c.do(ctx, request{
		endpoint:   EndpointGetJob,
		method:     "GET",
		path:       "/v2/agent/" + project + "/job/" + id,
		idempotent: true,
	}, &job)
	if err != nil {
		return nil, err
	}
	return &job, nil
}

// SendMessage sends a follow-up instruction to an existing job; the API
// processes it asynchronously and the job turns active again. Like a
// create it is not idempotent (each message is a new turn, and the API
// counts each against its 100 per project per hour), so it is retried only
// when the request certainly did not reach the server. It returns the HTTP
// status of the successful answer and the job when the API's answer holds
// one (nil when the body is empty or not a job: the API does not document
// the answer's shape).
func (c *Client) SendMessage(ctx context.Context, projectID, jobID, prompt string) (*Job, int, error) {
	project, err := segment("project id", projectID)
	if err != nil {
		return nil, 0, fmt.Errorf("send message: %w", err)
	}
	id, err := segment("job id", jobID)
	if err != nil {
		return nil, 0, fmt.Errorf("send message: %w", err)
	}
	body, err := json.Marshal(CreateJobRequest{Prompt: prompt})
	if err != nil {
		return nil, 0, fmt.Errorf("send message: encoding request: %w", err)
	}
	var (
		raw    json.RawMessage
		status int
	)
	err = c.do(ctx, request{
		endpoint: EndpointSendMessage,
		method:   "POST",
		path:     "/v2/agent/" + project + "/job/" + id + "/message",
		body:     body,
		status:   &status,
		// An empty 2xx body is a valid answer here.
		emptyOK: true,
	}, &raw)
	if err != nil {
		return nil, 0, err
	}
	var job Job
	if len(raw) == 0 || json.Unmarshal(raw, &job) != nil || job.ID == "" {
		return nil, status, nil
	}
	return &job, status, nil
}

// clamp refuses a job's dates outside 2000-2199 (clamper).
func (j *Job) clamp() (fields []string) {
	if !plausible(j.CreatedAt) {
		j.CreatedAt, fields = time.Time{}, append(fields, "createdAt")
	}
	if j.ArchivedAt != nil && !plausible(*j.ArchivedAt) {
		j.ArchivedAt, fields = nil, append(fields, "archivedAt")
	}
	return fields
}
