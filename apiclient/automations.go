package apiclient

import (
	"context"
	"fmt"
)

// EndpointTriggerAutomation runs an automation now (OpenAPI openapi.json of
// the public reference: POST /v1/workflow/{projectId}/{workflowSchemaId}/trigger).
// It shares the organization's 10 requests per 10 s with
// EndpointTriggerUpdate, which the gateway enforces before a request
// leaves; it does not draw on the analytics quota.
var EndpointTriggerAutomation = operationEndpoint("trigger_automation")

// AutomationTrigger is the API's answer to a trigger: the automation, the
// queued run (instanceId) and the background job processing it (jobId),
// which get-job may or may not know: a run whose job it does not know
// cannot be followed. An id the API leaves out, or answers unusable
// (CheckID: empty, over MaxIDLength, unprintable), is "": the run was
// queued all the same.
type AutomationTrigger struct {
	SchemaID   string `json:"schemaId"`
	InstanceID string `json:"instanceId"`
	JobID      string `json:"jobId"`
	// Code is the HTTP status of the API's answer (202 as documented).
	Code int `json:"-"`
}

// TriggerAutomation queues a run of an automation with a custom schedule.
// The API answers 400 for a malformed id, an inactive automation or one
// without a custom schedule, and 404 for one it does not know or that is
// another project's: both are an *APIError carrying the API's {error} text.
// Like every trigger it is not idempotent (each call is a run), so it is
// retried only when the request certainly did not reach the server.
func (c *Client) TriggerAutomation(ctx context.Context, projectID, workflowSchemaID string) (AutomationTrigger, error) {
	project, err := idSegment("project id", projectID)
	if err != nil {
		return AutomationTrigger{}, fmt.Errorf("trigger automation: %w", err)
	}
	schema, err := idSegment("automation id", workflowSchemaID)
	if err != nil {
		return AutomationTrigger{}, fmt.Errorf("trigger automation: %w", err)
	}
	var out AutomationTrigger
	err = c.do(ctx, request{
		endpoint: EndpointTriggerAutomation,
		method:   "POST",
		path:     "/v1/workflow/" + project + "/" + schema + "/trigger",
		status:   &out.Code,
		// A 202 without a body still queued the run: it is not followed.
		emptyOK: true,
	}, &out)
	if err != nil {
		return AutomationTrigger{}, err
	}
	// Every field of the answer is optional in the reference: the
	// automation is the one asked for when the API does not say.
	out.SchemaID, out.InstanceID, out.JobID = answeredID(out.SchemaID), answeredID(out.InstanceID), answeredID(out.JobID)
	if out.SchemaID == "" {
		out.SchemaID = workflowSchemaID
	}
	return out, nil
}
