package job

import (
	"encoding/json"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

// The agent jobs' forms in the state (schema versions 1 to 3): a job's
// record (recordV1), its create and follow-up intents (Intent,
// messageIntent). Their field names and encodings are the file format:
// they must not change with apiclient.Job, which is why the job is copied
// into jobV1 rather than embedded.

// recordV1 is one followed job, keyed by its project and id; version 2
// added the key, hash and status of its create, version 3 its turns,
// follow-ups and submitter.
type recordV1 struct {
	Project    string    `json:"project"`
	Job        jobV1     `json:"job"`
	Origin     string    `json:"origin"`
	TrackedAt  time.Time `json:"trackedAt"`
	TerminalAt time.Time `json:"terminalAt,omitzero"`
	Counted    counted   `json:"counted,omitempty"`
	PRCounted  bool      `json:"prCounted,omitempty"`
	Lost       bool      `json:"lost,omitempty"`
	WatchEnded bool      `json:"watchEnded,omitempty"`
	// Version 2.
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
	RequestHash    string `json:"requestHash,omitempty"`
	CreateStatus   int    `json:"createStatus,omitempty"`
	// Version 3.
	Turns         int         `json:"turns,omitempty"`
	TurnStartedAt time.Time   `json:"turnStartedAt,omitzero"`
	Messages      []messageV3 `json:"messages,omitempty"`
	SubmittedBy   string      `json:"submittedBy,omitempty"`
	// Rebuilt (version 3, later): state salvage rebuilt the record from its
	// key; what else it held is lost.
	Rebuilt bool `json:"rebuilt,omitempty"`
}

// messageV3 is a follow-up sent through the gateway.
type messageV3 struct {
	IdempotencyKey string    `json:"idempotencyKey,omitempty"`
	RequestHash    string    `json:"requestHash,omitempty"`
	At             time.Time `json:"at"`
	Status         int       `json:"status,omitempty"`
	Turn           int       `json:"turn,omitempty"`
	By             string    `json:"by,omitempty"`
}

// jobV1 is the upstream job as version 1 stores it (the API's own field
// names, as of the v2 agent API).
type jobV1 struct {
	ID         string     `json:"id"`
	Status     string     `json:"status"`
	Source     sourceV1   `json:"source"`
	Model      string     `json:"model"`
	PRLink     *string    `json:"prLink"`
	CreatedAt  time.Time  `json:"createdAt"`
	ArchivedAt *time.Time `json:"archivedAt"`
}

type sourceV1 struct {
	Repository string `json:"repository"`
	Ref        string `json:"ref"`
}

// MarshalJSON writes r in its state form.
func (r *Record) MarshalJSON() ([]byte, error) {
	j := &r.Job
	v := recordV1{Project: r.Project, Origin: r.Origin, TrackedAt: r.TrackedAt, TerminalAt: r.TerminalAt, Counted: r.Counts,
		PRCounted: r.PRCounted, Lost: r.Lost, WatchEnded: r.WatchEnded, IdempotencyKey: r.IdemKey, RequestHash: r.RequestHash,
		CreateStatus: r.Code, Turns: r.Turns, TurnStartedAt: r.TurnStartedAt, SubmittedBy: r.SubmittedBy, Rebuilt: r.Rebuilt,
		Job: jobV1{ID: j.ID, Status: r.Status, Source: sourceV1(j.Source), Model: j.Model, PRLink: j.PRLink, CreatedAt: r.CreatedAt, ArchivedAt: j.ArchivedAt}}
	for _, m := range r.Messages {
		v.Messages = append(v.Messages, messageV3{IdempotencyKey: m.IdemKey, RequestHash: m.RequestHash, At: m.At, Status: m.Status, Turn: m.Turn, By: m.By})
	}
	return json.Marshal(v)
}

// UnmarshalJSON reads r from its state form (any version).
func (r *Record) UnmarshalJSON(data []byte) error {
	var v recordV1
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*r = Record{Op: engine.Op{Project: v.Project, Origin: v.Origin, TrackedAt: v.TrackedAt, Status: v.Job.Status, CreatedAt: v.Job.CreatedAt,
		TerminalAt: v.TerminalAt, Lost: v.Lost, IdemKey: v.IdempotencyKey, RequestHash: v.RequestHash, Code: v.CreateStatus, SubmittedBy: v.SubmittedBy},
		Job:    apiclient.Job{ID: v.Job.ID, Source: apiclient.Source(v.Job.Source), Model: v.Job.Model, PRLink: v.Job.PRLink, ArchivedAt: v.Job.ArchivedAt},
		Counts: v.Counted, PRCounted: v.PRCounted, WatchEnded: v.WatchEnded, Turns: v.Turns, TurnStartedAt: v.TurnStartedAt, Rebuilt: v.Rebuilt}
	for _, m := range v.Messages {
		r.Messages = append(r.Messages, message{IdemKey: m.IdempotencyKey, RequestHash: m.RequestHash, At: m.At, Status: m.Status, Turn: m.Turn, By: m.By})
	}
	j := r.job()
	boundJob(&j)
	r.setJob(j)
	return nil
}

// Rebuild makes what can be made of an unreadable value from its key
// (engine.Rebuilder): a job, polled at once (its first poll is taken as a
// sighting after the fact: nothing it shows is counted), or a create of
// unknown outcome for an operator to resolve. What the value held beside
// its key is lost, idempotency keys included: the job is marked rebuilt,
// which its view and mintlify_agent_state_unreadable_records show. An
// unreadable follow-up's intent is dropped: it names its job only in its
// value.
func (*Kind) Rebuild(bucket, project, id string, now time.Time) ([]byte, bool) {
	var v any
	switch bucket {
	case store.Jobs:
		v = &Record{Op: engine.Op{Project: project, Origin: engine.OriginTrack, TrackedAt: now, Status: statusUnread}, Job: apiclient.Job{ID: id}, Rebuilt: true}
	case bucketIntents:
		v = &Intent{IntentBase: engine.IntentBase{ID: id, Project: project, RequestHash: "unreadable", StartedAt: now},
			PromptExcerpt: "(unreadable: rebuilt by state salvage)"}
	default:
		return nil, false
	}
	data, err := json.Marshal(v)
	return data, err == nil
}
