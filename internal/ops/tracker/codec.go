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

// intentV's fields are what the engine needs of an intent (pending) for a
// kind whose intent embeds it.
func (v intentV) intentID() string       { return v.ID }
func (v intentV) intentProject() string  { return v.Project }
func (v intentV) intentStart() time.Time { return v.StartedAt }
func (v intentV) intentKey() string      { return v.IdempotencyKey }
func (v intentV) requestHash() string    { return v.RequestHash }

// pickRecord prefers, of two versions a and b of a kind's record (decode
// reads them), the readable one, then the final one (done: its count is
// written with it), then b when further says it got further than a, else a.
func pickRecord[R any](a, b []byte, decode func([]byte) (R, error), done func(R) bool, further func(a, b R) bool) []byte {
	ra, errA := decode(a)
	rb, errB := decode(b)
	switch {
	case errA != nil:
		return b
	case errB != nil || done(ra):
		return a
	case done(rb) || further(ra, rb):
		return b
	}
	return a
}

// opState is the part of a followed operation's record the engine's
// rules keep for a kind that embeds it (its fields are the record's own in
// the JSON): when it was first seen final or declared lost, whether its
// final status was counted (written with the status, so a restart never
// counts it again), whether the API lost it, and its start's
// Idempotency-Key, request hash, the API's answer and the gateway's user.
type opState struct {
	TerminalAt  time.Time `json:"terminalAt,omitzero"`
	Counted     bool      `json:"counted,omitempty"`
	Lost        bool      `json:"lost,omitempty"`
	IdemKey     string    `json:"idempotencyKey,omitempty"`
	RequestHash string    `json:"requestHash,omitempty"`
	Code        int       `json:"code,omitempty"`
	SubmittedBy string    `json:"submittedBy,omitempty"`
}

// sawFinal applies the engine's rule of counting to a record of any kind
// that embeds opState, just read in status (final says whether that is a
// final status) at at: a final status not counted yet is marked counted
// (with when), and counted when seen live (the event returned), not when
// seen after the fact.
func (o *opState) sawFinal(final bool, status string, at time.Time, how sighting) finishEvent {
	if !final || o.Counted {
		return finishEvent{}
	}
	o.Counted, o.TerminalAt = true, at
	if how != seenLive {
		return finishEvent{}
	}
	return finishEvent{finished: status}
}
