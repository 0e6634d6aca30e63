package tracker

import (
	"encoding/json"
	"fmt"
	"time"
)

// The state's values are JSON of each kind's own versioned forms (recordV1,
// deployRecord, the intents'): a kind declares the form and what makes one
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

// intentV's fields are what the engine needs of an intent (pending) for a
// kind whose intent embeds it.
func (v intentV) intentID() string       { return v.ID }
func (v intentV) intentProject() string  { return v.Project }
func (v intentV) intentStart() time.Time { return v.StartedAt }
func (v intentV) intentKey() string      { return v.IdempotencyKey }
func (v intentV) requestHash() string    { return v.RequestHash }

// opIntentCodec reads and writes the intents of an op kind, T: the
// intent is its own state form (its JSON tags: the engine's intentV
// through opIntent, and the kind's fields), so the form of every op kind's
// intent is the engine's and what the kind adds. what names it in errors;
// valid checks the kind's fields, named by missing.
type opIntentCodec[T any, P interface {
	*T
	pending
	whole() bool
}] struct {
	what, missing string
	valid         func(P) bool
}

func (c opIntentCodec[T, P]) encode(in P) ([]byte, error) {
	return encodeState(in, c.what, in.intentProject(), in.intentID())
}

func (c opIntentCodec[T, P]) decode(data []byte) (P, error) {
	v, err := decodeState(data, c.what, func(v *T) bool { return P(v).whole() && c.valid(v) }, "id, project, request hash or "+c.missing)
	return &v, err
}

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

// opState is the part of a followed operation's record that the engine
// keeps for a kind that embeds it (its fields are the record's own in the
// JSON; a kind adds its id and its own fields beside it): its project, how
// it came to be followed and when, the API's latest status and createdAt,
// when it was first seen final or declared lost, whether its final status
// was counted (written with the status, so a restart never counts it
// again), whether the API lost it, and its start's Idempotency-Key,
// request hash, the API's answer and the gateway's user. Every string in
// it from a client or the API is bounded when read.
type opState struct {
	Project string `json:"project"`
	// Origin is OriginGateway (started through the gateway) or
	// OriginTrack (handed over with its id).
	Origin    string    `json:"origin"`
	TrackedAt time.Time `json:"trackedAt"`
	// Status is the API's latest ("" before the first read of one whose
	// start's answer has none).
	Status    string    `json:"status,omitempty"`
	CreatedAt time.Time `json:"createdAt,omitzero"`
	// TerminalAt is when it was first seen final, or declared lost.
	TerminalAt time.Time `json:"terminalAt,omitzero"`
	// Counted: its final status was counted (or deliberately not: it was
	// final when first seen).
	Counted bool `json:"counted,omitempty"`
	// Lost: the API answered 404 repeatedly; no longer polled.
	Lost        bool   `json:"lost,omitempty"`
	IdemKey     string `json:"idempotencyKey,omitempty"`
	RequestHash string `json:"requestHash,omitempty"`
	Code        int    `json:"code,omitempty"`
	SubmittedBy string `json:"submittedBy,omitempty"`
}

// state is the record's engine part (opRecord), for a record that embeds
// it.
func (o *opState) state() *opState { return o }

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
