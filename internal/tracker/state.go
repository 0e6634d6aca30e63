package tracker

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
)

// stateSchema is the layout of the values in the state file, stored in the
// file itself (see store.Open): version 1 is recordV1. A new layout gets a
// new record type, a new version and a migration from the old one.
const stateSchema = "1"

// recordV1 is one tracked job in the state file, as JSON, keyed by
// storeKey. Its field names and encodings are the file format: they must
// not change with apiclient.Job, which is why the job is copied into jobV1
// rather than embedded.
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
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding job %s/%s: %w", r.Project, j.ID, err)
	}
	return data, nil
}

// decodeRecord reads a state file value.
func decodeRecord(data []byte) (record, error) {
	var v recordV1
	if err := json.Unmarshal(data, &v); err != nil {
		return record{}, fmt.Errorf("decoding record: %w", err)
	}
	if v.Project == "" || v.Job.ID == "" {
		return record{}, errors.New("decoding record: no project or job id")
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
	}, nil
}
