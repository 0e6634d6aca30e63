package tracker

import (
	"encoding/json"
	"fmt"
	"time"
)

// The state's values are JSON of each kind's own versioned forms (recordV1,
// deployRecordV4, the intents'): a kind declares the form and what makes one
// whole; writing and reading it, and the errors that name what failed, are
// the engine's, the same for every kind.

// encodeState is the state's value for v, a kind's record or intent in its
// state form; what, project and id name it in the error.
func encodeState(v any, what, project, id string) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding %s %s/%s: %w", what, project, id, err)
	}
	return data, nil
}

// decodeState reads a state value into its form V. whole reports whether
// the value holds what the kind cannot do without (its ids), and missing
// names that in the error: a value without them is skipped as unreadable
// rather than followed under an empty id.
func decodeState[V any](data []byte, what string, whole func(*V) bool, missing string) (V, error) {
	var v V
	if err := json.Unmarshal(data, &v); err != nil {
		return v, fmt.Errorf("decoding %s: %w", what, err)
	}
	if !whole(&v) {
		return v, fmt.Errorf("decoding %s: no %s", what, missing)
	}
	return v, nil
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

// intentForm is the engine's part of the state form of in, an intent of
// any kind; the kind's form embeds it and adds its own fields.
func intentForm[I pending](in I) intentV {
	return intentV{ID: in.intentID(), Project: in.intentProject(), IdempotencyKey: in.intentKey(), RequestHash: in.requestHash(), StartedAt: in.intentStart()}
}
