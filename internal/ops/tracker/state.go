package tracker

import (
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

// stateSchema is the layout of the values in the state file, stored in the
// file itself (see store.Open). A new layout gets a new version and a
// migration from the old one.
//
// Version 2 adds to recordV1 the idempotency key of the create, the hash of
// its request and the status of its first answer, all omitted when empty,
// and a bucket of create intents (intentV2). A version 1 file is a version 2
// file without either, so it is read as it is and re-stamped "2" (which the
// release that wrote it then refuses, rather than drop what it does not
// know).
//
// Version 3 adds to the record the job's turns (turns, turnStartedAt), its
// follow-up messages (messageV3) and who submitted it (submittedBy), all
// omitted when empty, and a bucket
// of message intents (messageIntentV3). Versions 1 and 2 are read as they
// are (a job with one turn and no messages) and the file is re-stamped
// "3": a release that does not know turns refuses it rather than lose a
// turn in progress.
//
// Version 4 adds the deployments: a bucket of followed deployments
// (deployRecordV4) and one of trigger intents (deployIntentV4). Earlier
// versions are read as they are (no deployment), and the file is
// re-stamped "4": a release that does not know deployments refuses it
// rather than leave a deployment in progress unfollowed and uncounted.
const stateSchema = "4"

// olderSchemas are the versions this tracker still reads.
var olderSchemas = []string{"1", "2", "3"}

// bucketIntents holds the create intents, keyed by storeKey(project, id).
const bucketIntents = "intents"

// bucketMessageIntents holds the message intents, keyed by
// storeKey(project, id).
const bucketMessageIntents = "message_intents"

// storeOptions are the state file's options for the tracker.
// Layout is the state's schema, the older schemas it still reads, and its
// buckets beside store.Jobs: what another store of the state (Redis) must
// stamp and hold.
func Layout() (schema string, upgrades, buckets []string) {
	o := storeOptions(&Config{})
	return o.Schema, o.Upgrades, o.Buckets
}

func storeOptions(cfg *Config) store.Options {
	return store.Options{Schema: stateSchema, Upgrades: olderSchemas, Buckets: []string{bucketIntents, bucketMessageIntents, bucketDeployments, bucketDeployIntents},
		LockTimeout: cfg.LockTimeout, WriteTimeout: cfg.StateWriteTimeout, BeforeCommit: cfg.beforeStateWrite}
}

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

// intentV is what the state's intent of every kind holds (embedded, its
// fields are the intent's own in the JSON): its id, project, the
// request's Idempotency-Key and hash, and when it was sent. A kind adds
// its fields beside them.
type intentV struct {
	ID             string    `json:"id"`
	Project        string    `json:"project"`
	IdempotencyKey string    `json:"idempotencyKey,omitempty"`
	RequestHash    string    `json:"requestHash"`
	StartedAt      time.Time `json:"startedAt"`
}

// whole reports whether the intent has what every kind's needs.
func (v *intentV) whole() bool { return v.ID != "" && v.Project != "" && v.RequestHash != "" }

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
