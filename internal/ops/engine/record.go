package engine

import (
	"cmp"
	"context"
	"time"
	"unique"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
)

// Op is the engine's part of every kind's record (embedded: its fields
// are the record's own in the JSON): its project, how it came to be
// followed and when, the API's latest status and createdAt, when it was
// first seen final or declared lost, whether its final status was counted
// (written with the status, so a restart never counts it again), whether
// the API lost it, and its start's Idempotency-Key, request hash, the
// API's answer and the gateway's user. Every string in it from a client or
// the API is bounded when read.
type Op struct {
	Project string `json:"project"`
	// Origin is OriginGateway (started through the gateway), OriginTrack
	// (handed over with its id) or a kind's own (automation.Origin).
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

// Origins of a followed operation (Op.Origin).
const (
	OriginGateway = "gateway" // started through the gateway
	OriginTrack   = "track"   // started elsewhere, handed over with its id
)

// StatusLost is the status shown for an operation the API answered 404
// for several times in a row; it is no longer polled.
const StatusLost = "lost"

// Base is the record's engine part (Record.Base), for a record that embeds
// Op.
func (o *Op) Base() *Op { return o }

// SawFinal applies the engine's rule of counting to a record just read in
// status (final says whether that is a final status) at at: a final
// status not counted yet is marked counted (with when), and counted when
// seen live (the event returned), not when seen after the fact.
func (o *Op) SawFinal(final bool, status string, at time.Time, how Sighting) Event {
	if !final || o.Counted {
		return Event{}
	}
	o.Counted, o.TerminalAt = true, at
	if how != SeenLive {
		return Event{}
	}
	return Event{Finished: status}
}

// Missing is Record.Missing of most kinds: the operation is marked lost
// at at, the LostAfter404s-th 404 in a row.
func (o *Op) Missing(n int, at time.Time) (Event, bool) {
	if n < LostAfter404s {
		return Event{}, false
	}
	o.Lost, o.TerminalAt = true, at
	return Event{Lost: true}, true
}

// Keys is Record.Keys of most kinds: none beside the start's.
func (o *Op) Keys() []string { return nil }

// Reached is Record.Reached of most kinds: a final (counted) or lost
// version got further than one that is not.
func (o *Op) Reached() int {
	if o.Counted || o.Lost {
		return 1 << 20
	}
	return 0
}

// Started is when the operation started as far as the exporter knows: the
// API's createdAt, else when it was followed.
func (o *Op) Started() time.Time { return cmp.Or(o.CreatedAt, o.TrackedAt) }

// ViewStatus is the status shown for it: the API's, StatusLost once the
// API lost it, queued (in the kind's word) before its first read.
func (o *Op) ViewStatus(queued string) string {
	if o.Lost {
		return StatusLost
	}
	return cmp.Or(o.Status, queued)
}

// Sighting says how the engine came to know an operation's current state,
// which decides whether what it shows is counted.
type Sighting int

const (
	// SeenLive: started or polled by this engine, so a final status it
	// shows is news and is counted.
	SeenLive Sighting = iota
	// SeenAfterTheFact: first seen now, followed after it started
	// elsewhere; whatever it reached is recorded as counted without
	// counting it (this engine did not see it happen).
	SeenAfterTheFact
)

// Event is the metric update of one written change of an operation,
// applied once the change is written (Kind.Count).
type Event struct {
	// Finished is its final status, seen live; Duration how long it took
	// when Timed (the API said).
	Finished string
	Duration time.Duration
	Timed    bool
	// Lost: the engine gave it up after repeated 404s.
	Lost bool
	// Mark holds a kind's own news, in bits it defines (an agent job's
	// pull request, its new turn).
	Mark uint8
}

// Followed is the exporter's own information about an operation it
// follows, added to the API's object under "tracking" (clients of the API
// ignore unknown fields).
type Followed struct {
	// Origin is OriginGateway, OriginTrack or a kind's own.
	Origin    string    `json:"origin"`
	TrackedAt time.Time `json:"trackedAt"`
	// LastPolledAt is the last successful poll in this process.
	LastPolledAt *time.Time `json:"lastPolledAt,omitempty"`
	// TerminalAt is when the operation was first seen in a final status
	// (or declared lost).
	TerminalAt *time.Time `json:"terminalAt,omitempty"`
	// LastUpstreamStatus is the last status the API reported, set when the
	// status is the exporter's own StatusLost.
	LastUpstreamStatus string `json:"lastUpstreamStatus,omitempty"`
	// LastError is the last poll error, cleared by a successful poll.
	LastError string `json:"lastError,omitempty"`
	// NextCheckAt is when it will be polled next (for a completed job: its
	// next archive re-check); absent when it is due at the next poll round
	// or no longer polled.
	NextCheckAt *time.Time `json:"nextCheckAt,omitempty"`
	// SubmittedBy is the basic-auth user who started it through the
	// gateway (origin gateway) or handed it over (origin track); absent
	// without basic auth.
	SubmittedBy string `json:"submittedBy,omitempty"`
}

// Item is a followed operation as the engine hands it to its kind (for a
// view): a copy of its record, and its polling state.
type Item struct {
	Rec  Record
	Poll Polling
}

// Followed is the tracking block of it (polled: it is still polled).
func (it *Item) Followed(polled bool) Followed {
	op, p := it.Rec.Base(), &it.Poll
	f := Followed{Origin: op.Origin, TrackedAt: op.TrackedAt, LastError: p.lastErr, SubmittedBy: op.SubmittedBy}
	if op.Lost {
		f.LastUpstreamStatus = op.Status
	}
	if t := p.lastPolled; !t.IsZero() {
		f.LastPolledAt = &t
	}
	if t := op.TerminalAt; !t.IsZero() {
		f.TerminalAt = &t
	}
	if t := p.nextPoll; !t.IsZero() && polled {
		f.NextCheckAt = &t
	}
	return f
}

// OpView is what the view of an operation of most kinds shows beside the
// kind's own fields (the view embeds it): its project, status (queued,
// in the kind's word, before the first read; StatusLost once the API lost
// it), createdAt, and how the exporter follows it.
type OpView struct {
	ProjectID string            `json:"projectId"`
	Status    string            `json:"status"`
	CreatedAt apiclient.APITime `json:"createdAt,omitzero"`
	Tracking  Followed          `json:"tracking"`
}

// View is the OpView of it.
func (it *Item) View(queued string) OpView {
	op := it.Rec.Base()
	return OpView{ProjectID: op.Project, Status: op.ViewStatus(queued), CreatedAt: apiclient.APITime{Time: op.CreatedAt},
		Tracking: it.Followed(!it.Rec.Final())}
}

type userKey struct{}

// WithUser returns ctx carrying the user on whose behalf the gateway calls
// the engine (its basic-auth user): a start or a track records it.
func WithUser(ctx context.Context, user string) context.Context {
	return context.WithValue(ctx, userKey{}, user)
}

// UserFrom returns the user WithUser put in ctx ("" when none).
func UserFrom(ctx context.Context) string {
	u, _ := ctx.Value(userKey{}).(string)
	return u
}

// TrackResult says what a track did.
type TrackResult int

const (
	// NewlyTracked: read upstream and followed from now on.
	NewlyTracked TrackResult = iota
	// AlreadyTracked: followed before; nothing was sent upstream.
	AlreadyTracked
)

// Intern shares the strings that repeat across operations (a status, a
// model), which is most of a record's memory after its ids.
func Intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}
