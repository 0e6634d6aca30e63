package tracker

import (
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
)

// The agent jobs' forms in the state (schema versions 1 to 3, see
// stateSchema in state.go): a job's record, its create and message
// intents.

// recordV1 is one tracked job in the state file, as JSON, keyed by
// storeKey; version 2 added the last three fields. Its field names and
// encodings are the file format: they must not change with apiclient.Job,
// which is why the job is copied into jobV1 rather than embedded.
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

// messageV3 is a follow-up message sent through the gateway.
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

// encodeRecord is the state file's value for r.
func encodeRecord(r *record) ([]byte, error) {
	j := &r.Job
	v := recordV1{
		Project: r.Project,
		Job: jobV1{
			ID:         j.ID,
			Status:     j.Status,
			Source:     sourceV1{Repository: j.Source.Repository, Ref: j.Source.Ref},
			Model:      j.Model,
			PRLink:     j.PRLink,
			CreatedAt:  j.CreatedAt,
			ArchivedAt: j.ArchivedAt,
		},
		Origin:     r.Origin,
		TrackedAt:  r.TrackedAt,
		TerminalAt: r.TerminalAt,
		Counted:    r.Counted,
		PRCounted:  r.PRCounted,
		Lost:       r.Lost,
		WatchEnded: r.WatchEnded,

		IdempotencyKey: r.IdemKey,
		RequestHash:    r.RequestHash,
		CreateStatus:   r.CreateStatus,

		Turns:         r.Turns,
		TurnStartedAt: r.TurnStartedAt,
		SubmittedBy:   r.SubmittedBy,
		Rebuilt:       r.Rebuilt,
	}
	for _, m := range r.Messages {
		v.Messages = append(v.Messages, messageV3{IdempotencyKey: m.IdemKey, RequestHash: m.RequestHash, At: m.At, Status: m.Status, Turn: m.Turn, By: m.By})
	}
	return encodeState(v, "job", r.Project, j.ID)
}

// decodeRecord reads a state file value.
func decodeRecord(data []byte) (record, error) {
	v, err := decodeState(data, "record", func(v *recordV1) bool { return v.Project != "" && v.Job.ID != "" }, "project or job id")
	if err != nil {
		return record{}, err
	}
	var msgs []messageRecord
	for _, m := range v.Messages {
		msgs = append(msgs, messageRecord{IdemKey: m.IdempotencyKey, RequestHash: m.RequestHash, At: m.At, Status: m.Status, Turn: m.Turn, By: m.By})
	}
	return record{
		Project: v.Project,
		Job: apiclient.Job{
			ID:         v.Job.ID,
			Status:     v.Job.Status,
			Source:     apiclient.Source{Repository: v.Job.Source.Repository, Ref: v.Job.Source.Ref},
			Model:      v.Job.Model,
			PRLink:     v.Job.PRLink,
			CreatedAt:  v.Job.CreatedAt,
			ArchivedAt: v.Job.ArchivedAt,
		},
		Origin:     v.Origin,
		TrackedAt:  v.TrackedAt,
		TerminalAt: v.TerminalAt,
		Counted:    v.Counted,
		PRCounted:  v.PRCounted,
		Lost:       v.Lost,
		WatchEnded: v.WatchEnded,

		IdemKey:      v.IdempotencyKey,
		RequestHash:  v.RequestHash,
		CreateStatus: v.CreateStatus,

		Turns:         v.Turns,
		TurnStartedAt: v.TurnStartedAt,
		Messages:      msgs,
		SubmittedBy:   v.SubmittedBy,
		Rebuilt:       v.Rebuilt,
	}, nil
}

// intentV2 is a create intent in the state file, as JSON, keyed by
// storeKey(project, id): written (fsync) before a create is sent upstream
// and deleted in the transaction that writes the created job, or once the
// API's answer says nothing was created. One that is still there after a
// restart is a create whose outcome is unknown.
type intentV2 struct {
	intentV
	PromptExcerpt string `json:"promptExcerpt"`
}

func encodeIntent(in *intentRecord) ([]byte, error) {
	return encodeState(intentV2{intentV{ID: in.ID, Project: in.Project, IdempotencyKey: in.IdemKey, RequestHash: in.RequestHash, StartedAt: in.StartedAt},
		in.PromptExcerpt}, "create intent", in.Project, in.ID)
}

func decodeIntent(data []byte) (intentRecord, error) {
	v, err := decodeState(data, "create intent", func(v *intentV2) bool { return v.whole() }, "id, project or request hash")
	if err != nil {
		return intentRecord{}, err
	}
	return intentRecord{ID: v.ID, Project: v.Project, IdemKey: v.IdempotencyKey, RequestHash: v.RequestHash,
		PromptExcerpt: v.PromptExcerpt, StartedAt: v.StartedAt}, nil
}

// messageIntentV3 is a message intent in the state file, as JSON, keyed by
// storeKey(project, id): written (fsync) before a follow-up is sent
// upstream and deleted in the transaction that writes the job's new turn,
// or once the API's answer says nothing was done. One that is still there
// at the next start is a follow-up whose outcome is unknown: its job is
// re-checked at once, and its key is kept on the job as of unknown outcome.
type messageIntentV3 struct {
	intentV
	JobID string `json:"jobId"`
	// By is the sender (absent in files of earlier builds: the turn's
	// sender is then unknown).
	By string `json:"by,omitempty"`
}

func encodeMessageIntent(in *messageIntent) ([]byte, error) {
	return encodeState(messageIntentV3{intentV: intentV{ID: in.ID, Project: in.Project, IdempotencyKey: in.IdemKey, RequestHash: in.RequestHash, StartedAt: in.StartedAt},
		JobID: in.JobID, By: in.By}, "message intent", in.Project, in.ID)
}

func decodeMessageIntent(data []byte) (messageIntent, error) {
	v, err := decodeState(data, "message intent", func(v *messageIntentV3) bool {
		return v.whole() && v.JobID != ""
	}, "id, project, job id or request hash")
	if err != nil {
		return messageIntent{}, err
	}
	return messageIntent{ID: v.ID, Project: v.Project, JobID: v.JobID, IdemKey: v.IdempotencyKey, RequestHash: v.RequestHash, StartedAt: v.StartedAt, By: v.By}, nil
}
