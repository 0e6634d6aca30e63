package apiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// The deployment endpoints (OpenAPI openapi.json of the public reference):
// trigger an update of the configured branch, create or redeploy a preview
// of a branch, and read a deployment's status by the id either answered.
// None of them draws on the analytics quota; the two triggers have
// organization-wide limits of their own (10 per 10 s shared by updates
// with the automation trigger, 5 previews a minute), which the gateway
// enforces before a request leaves.
var (
	EndpointTriggerUpdate    = operationEndpoint("trigger_update")
	EndpointTriggerPreview   = operationEndpoint("trigger_preview")
	EndpointDeploymentStatus = operationEndpoint("deployment_status")
)

// Deployment statuses the API documents. Any other value is not final
// (IsDeploymentFinal): it is followed further, and shown as it is.
const (
	DeploymentQueued     = "queued"
	DeploymentInProgress = "in_progress"
	DeploymentSuccess    = "success"
	DeploymentFailure    = "failure"
)

// IsDeploymentFinal reports whether a deployment in this status will not
// change again. An unknown status (say "building") is not final.
func IsDeploymentFinal(status string) bool {
	return status == DeploymentSuccess || status == DeploymentFailure
}

// Deployment is the update-status object, with what the exporter reads of
// it. The summary, the logs, the screenshots, the author and the commit's
// message and files are free text or of no use to a follower: they are
// not decoded, so that nothing of them can end up in a label, a log line
// or the state.
type Deployment struct {
	ID        string `json:"_id"`
	ProjectID string `json:"projectId"`
	Status    string `json:"status"`
	// CreatedAt and EndedAt are zero when the API gives none (EndedAt
	// while the deployment runs).
	CreatedAt APITime          `json:"createdAt"`
	EndedAt   APITime          `json:"endedAt"`
	Subdomain string           `json:"subdomain"`
	Source    string           `json:"source"`
	Commit    DeploymentCommit `json:"commit"`
}

// DeploymentCommit is the commit a deployment builds: sha and ref (the
// branch).
type DeploymentCommit struct {
	SHA string `json:"sha"`
	Ref string `json:"ref"`
}

// APITime is a date of the API as an ISO string: null, absent or "" is the
// zero time, anything else must be in a form parseTime reads (RFC 3339 with
// or without fractions, or without T or zone, read as UTC).
type APITime struct{ time.Time }

// UnmarshalJSON implements json.Unmarshaler.
func (t *APITime) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		t.Time = time.Time{}
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("date: want an ISO string or null: %w", err)
	}
	if s == "" {
		t.Time = time.Time{}
		return nil
	}
	v, err := parseTime(s)
	if err != nil {
		return fmt.Errorf("date: %w", err)
	}
	t.Time = v
	return nil
}

// MarshalJSON writes the zero time as null.
func (t APITime) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	return json.Marshal(t.UTC().Format(time.RFC3339Nano))
}

// Triggered is the API's answer to a trigger: the status id to follow, the
// preview's URL for a preview, and the HTTP status of the answer.
type Triggered struct {
	StatusID   string `json:"statusId"`
	PreviewURL string `json:"previewUrl,omitempty"`
	// Code is the HTTP status of the API's answer (202 as documented).
	Code int `json:"-"`
}

// TriggerUpdate queues a deployment of the project's configured branch. It
// is not idempotent (each call is a deployment), so it is retried only when
// the request certainly did not reach the server.
func (c *Client) TriggerUpdate(ctx context.Context, projectID string) (*Triggered, error) {
	project, err := segment("project id", projectID)
	if err != nil {
		return nil, fmt.Errorf("trigger update: %w", err)
	}
	return c.trigger(ctx, EndpointTriggerUpdate, "/v1/project/update/"+project, nil)
}

// TriggerPreview creates, or redeploys, the preview of branch. Not
// idempotent either.
func (c *Client) TriggerPreview(ctx context.Context, projectID, branch string) (*Triggered, error) {
	project, err := segment("project id", projectID)
	if err != nil {
		return nil, fmt.Errorf("trigger preview: %w", err)
	}
	if branch == "" {
		return nil, fmt.Errorf("trigger preview: empty branch")
	}
	body, err := json.Marshal(struct {
		Branch string `json:"branch"`
	}{branch})
	if err != nil {
		return nil, fmt.Errorf("trigger preview: encoding request: %w", err)
	}
	// An answer without previewUrl still started a deployment that its
	// status id follows: it is not an error.
	return c.trigger(ctx, EndpointTriggerPreview, "/v1/project/preview/"+project, body)
}

func (c *Client) trigger(ctx context.Context, endpoint, path string, body []byte) (*Triggered, error) {
	var out Triggered
	err := c.do(ctx, request{endpoint: endpoint, method: "POST", path: path, body: body, status: &out.Code}, &out)
	if err != nil {
		return nil, err
	}
	if out.StatusID == "" {
		return nil, fmt.Errorf("mintlify API %s: response has no statusId", endpoint)
	}
	return &out, nil
}

// ErrOtherProject: the API answered a deployment status naming another
// project than the one asked for (a status id handed over with the wrong
// project); the tracker says so too of a static export followed for
// another project of the organization.
var ErrOtherProject = errors.New("the operation belongs to another project")

// DeploymentStatus reads a deployment's current state. projectID is the
// project the caller holds it for: an answer naming another project is
// ErrOtherProject (the endpoint's path has no project; an organization's
// key reads every project of the organization).
func (c *Client) DeploymentStatus(ctx context.Context, projectID, statusID string) (*Deployment, error) {
	id, err := segment("status id", statusID)
	if err != nil {
		return nil, fmt.Errorf("deployment status: %w", err)
	}
	var d Deployment
	err = c.do(ctx, request{
		endpoint:   EndpointDeploymentStatus,
		method:     "GET",
		path:       "/v1/project/update-status/" + id,
		idempotent: true,
		// The body holds the summary, logs and commit message: an error
		// never quotes it.
		private: true,
	}, &d)
	if err != nil {
		return nil, err
	}
	if d.ProjectID != "" && d.ProjectID != projectID {
		return nil, fmt.Errorf("mintlify API %s: status %s: %w", EndpointDeploymentStatus, statusID, ErrOtherProject)
	}
	return &d, nil
}

// clamp refuses a deployment's dates outside 2000-2199 (clamper).
func (d *Deployment) clamp() (fields []string) {
	if !plausible(d.CreatedAt.Time) {
		d.CreatedAt, fields = APITime{}, append(fields, "createdAt")
	}
	if !plausible(d.EndedAt.Time) {
		d.EndedAt, fields = APITime{}, append(fields, "endedAt")
	}
	return fields
}
