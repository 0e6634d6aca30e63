package tracker

import (
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
	return encodeState(deployRecordV4(*r), "deployment", r.Project, r.ID)
}

func decodeDeployRecord(data []byte) (deployRecord, error) {
	v, err := decodeState(data, "deployment", func(v *deployRecordV4) bool {
		return v.Project != "" && v.ID != "" && validDeployKind(v.Kind)
	}, "project, status id or kind")
	return deployRecord(v), err
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

// deployIntentV4 is the state's form of a trigger intent: the engine's
// (intentV) and the deployment's kind.
type deployIntentV4 struct {
	intentV
	Kind string `json:"kind"`
}

func encodeDeployIntent(in *deployIntent) ([]byte, error) {
	return encodeState(deployIntentV4{intentForm(in), in.Kind}, "deployment intent", in.Project, in.ID)
}

func decodeDeployIntent(data []byte) (deployIntent, error) {
	v, err := decodeState(data, "deployment intent", func(v *deployIntentV4) bool {
		return v.whole() && validDeployKind(v.Kind)
	}, "id, project, kind or request hash")
	if err != nil {
		return deployIntent{}, err
	}
	return deployIntent{ID: v.ID, Project: v.Project, Kind: v.Kind, IdemKey: v.IdempotencyKey, RequestHash: v.RequestHash, StartedAt: v.StartedAt}, nil
}

// validDeployKind reports whether k is a kind of deployment the API has.
func validDeployKind(k string) bool { return k == KindUpdate || k == KindPreview }

// pickDeployment prefers, of two versions of a deployment, the final one
// (its count is written with it), then the one read last (pickRecord).
func pickDeployment(a, b []byte) []byte {
	return pickRecord(a, b, decodeDeployRecord, func(r deployRecord) bool { return r.Counted || r.Lost },
		func(deployRecord, deployRecord) bool { return false })
}
