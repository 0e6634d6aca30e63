package tracker

import (
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
)

// deployRecord is a followed deployment: its own state form (version
// 4), the engine's part (opState) and the deployment's. Its field names
// are the file format; they must not follow apiclient.Deployment.
type deployRecord struct {
	Kind string `json:"kind"`
	ID   string `json:"statusId"`
	// EndedAt is the API's (zero until it gives it).
	EndedAt time.Time `json:"endedAt,omitzero"`
	// Branch and SHA are the commit's ref and sha, PreviewURL the
	// preview's; each bounded (bounded.Label) when read.
	Branch     string `json:"branch,omitempty"`
	SHA        string `json:"sha,omitempty"`
	PreviewURL string `json:"previewUrl,omitempty"`
	// opState is the engine's part: project, origin, status, createdAt,
	// when it ended, whether it was counted or lost, and its trigger's
	// Idempotency-Key, hash, answer and user.
	opState
}

// final reports whether the deployment will not change any more.
func (r *deployRecord) final() bool { return r.Lost || apiclient.IsDeploymentFinal(r.Status) }

// The deployment's part of opRecord.
func (r *deployRecord) opID() string { return r.ID }
func (r *deployRecord) valid() bool  { return validDeployKind(r.Kind) }

// deployIntent is a trigger intent: written (fsync) before a trigger is
// sent upstream, deleted in the transaction that writes the deployment,
// or once the API's answer says nothing was started. One still there
// after a restart is a trigger of unknown outcome: its Idempotency-Key
// answers 409 until it is forgotten, Retention after it was sent (a
// deployment cannot be found by its branch: there is no list endpoint).
// It is its own state form (version 4): the engine's intent (opIntent)
// and the deployment's kind.
type deployIntent struct {
	opIntent
	Kind string `json:"kind"`
}

// triggerCodec reads and writes the trigger intents.
var triggerCodec = opIntentCodec[deployIntent, *deployIntent]{what: "deployment intent", missing: "kind",
	valid: func(in *deployIntent) bool { return validDeployKind(in.Kind) }}

// validDeployKind reports whether k is a kind of deployment the API has.
func validDeployKind(k string) bool { return k == KindUpdate || k == KindPreview }
