package tracker

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
)

// The deployments' buckets of the state (schema version 4).
const (
	// bucketDeployments holds the followed deployments (deployRecordV4),
	// keyed by storeKey(project, status id).
	bucketDeployments = "deployments"
	// bucketDeployIntents holds the deployment trigger intents
	// (deployIntentV4), keyed by storeKey(project, intent id).
	bucketDeployIntents = "deploy_intents"
)

// deployRecord is a followed deployment as the tracker works with it;
// deployRecordV4 is its form in the state.
type deployRecord struct {
	Project, Kind, ID string
	// Origin is OriginGateway (triggered through the gateway) or
	// OriginTrack (handed over with its status id).
	Origin    string
	TrackedAt time.Time
	// Status is the API's latest status ("" before the first read of a
	// triggered deployment: the trigger's answer has none).
	Status string
	// CreatedAt and EndedAt are the API's (zero until it gives them).
	CreatedAt, EndedAt time.Time
	// Branch and SHA are the commit's ref and sha, PreviewURL the
	// preview's; each bounded (bounded.Label) when read.
	Branch, SHA, PreviewURL string
	// TerminalAt is when it was first seen final, or declared lost.
	TerminalAt time.Time
	// Counted: its final status was counted (or deliberately not: it was
	// final when first seen). Written with the status, so a restart never
	// counts it again.
	Counted bool
	// Lost: the API answered 404 repeatedly; no longer polled.
	Lost bool
	// IdemKey, RequestHash and Code: the trigger's Idempotency-Key, the
	// hash of its request and the HTTP status of the API's answer, for a
	// retry with the key.
	IdemKey, RequestHash string
	Code                 int
	// SubmittedBy is the gateway's basic-auth user who triggered or handed
	// it over.
	SubmittedBy string
}

// final reports whether the deployment will not change any more.
func (r *deployRecord) final() bool { return r.Lost || apiclient.IsDeploymentFinal(r.Status) }

// deployRecordV4 is the state's form of a deployment. Its field names are
// the file format; they must not follow apiclient.Deployment.
type deployRecordV4 struct {
	Project     string    `json:"project"`
	Kind        string    `json:"kind"`
	ID          string    `json:"statusId"`
	Origin      string    `json:"origin"`
	TrackedAt   time.Time `json:"trackedAt"`
	Status      string    `json:"status,omitempty"`
	CreatedAt   time.Time `json:"createdAt,omitzero"`
	EndedAt     time.Time `json:"endedAt,omitzero"`
	Branch      string    `json:"branch,omitempty"`
	SHA         string    `json:"sha,omitempty"`
	PreviewURL  string    `json:"previewUrl,omitempty"`
	TerminalAt  time.Time `json:"terminalAt,omitzero"`
	Counted     bool      `json:"counted,omitempty"`
	Lost        bool      `json:"lost,omitempty"`
	IdemKey     string    `json:"idempotencyKey,omitempty"`
	RequestHash string    `json:"requestHash,omitempty"`
	Code        int       `json:"code,omitempty"`
	SubmittedBy string    `json:"submittedBy,omitempty"`
}

func encodeDeployRecord(r *deployRecord) ([]byte, error) {
	data, err := json.Marshal(deployRecordV4(*r))
	if err != nil {
		return nil, fmt.Errorf("encoding deployment %s/%s: %w", r.Project, r.ID, err)
	}
	return data, nil
}

func decodeDeployRecord(data []byte) (deployRecord, error) {
	var v deployRecordV4
	if err := json.Unmarshal(data, &v); err != nil {
		return deployRecord{}, fmt.Errorf("decoding deployment: %w", err)
	}
	if v.Project == "" || v.ID == "" || (v.Kind != KindUpdate && v.Kind != KindPreview) {
		return deployRecord{}, errors.New("decoding deployment: no project, status id or kind")
	}
	return deployRecord(v), nil
}

// deployIntent is a trigger intent: written (fsync) before a trigger is
// sent upstream, deleted in the transaction that writes the deployment,
// or once the API's answer says nothing was started. One still there
// after a restart is a trigger of unknown outcome: its Idempotency-Key
// answers 409 until it is forgotten, Retention after it was sent (a
// deployment cannot be found by its branch: there is no list endpoint).
type deployIntent struct {
	ID, Project, Kind, IdemKey, RequestHash string
	StartedAt                               time.Time
	// inFlight: this process is sending it (not persisted).
	inFlight bool
}

type deployIntentV4 struct {
	ID          string    `json:"id"`
	Project     string    `json:"project"`
	Kind        string    `json:"kind"`
	IdemKey     string    `json:"idempotencyKey,omitempty"`
	RequestHash string    `json:"requestHash"`
	StartedAt   time.Time `json:"startedAt"`
}

func encodeDeployIntent(in *deployIntent) ([]byte, error) {
	data, err := json.Marshal(deployIntentV4{ID: in.ID, Project: in.Project, Kind: in.Kind, IdemKey: in.IdemKey,
		RequestHash: in.RequestHash, StartedAt: in.StartedAt})
	if err != nil {
		return nil, fmt.Errorf("encoding deployment intent %s/%s: %w", in.Project, in.ID, err)
	}
	return data, nil
}

func decodeDeployIntent(data []byte) (deployIntent, error) {
	var v deployIntentV4
	if err := json.Unmarshal(data, &v); err != nil {
		return deployIntent{}, fmt.Errorf("decoding deployment intent: %w", err)
	}
	if v.ID == "" || v.Project == "" || v.RequestHash == "" || (v.Kind != KindUpdate && v.Kind != KindPreview) {
		return deployIntent{}, errors.New("decoding deployment intent: no id, project, kind or request hash")
	}
	return deployIntent{ID: v.ID, Project: v.Project, Kind: v.Kind, IdemKey: v.IdemKey, RequestHash: v.RequestHash, StartedAt: v.StartedAt}, nil
}

// pickDeployment prefers, of two versions of a deployment, the final one
// (its count is written with it), then the one read last.
func pickDeployment(a, b []byte) []byte {
	ra, errA := decodeDeployRecord(a)
	rb, errB := decodeDeployRecord(b)
	switch {
	case errA != nil:
		return b
	case errB != nil || ra.Counted || ra.Lost:
		return a
	case rb.Counted || rb.Lost:
		return b
	}
	return a
}
