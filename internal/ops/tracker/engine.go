package tracker

import (
	"context"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
)

// kindEngine is what a kind of operation supplies to the engine's poll
// rounds and retention. The round (round, pollOne) is the engine's: which
// operations are due, the pool of workers, the API's Retry-After pause,
// the poll delay metric, the timeout of a read and a shutdown that is not
// the operation's fault are the same for every kind; reading one
// operation, what a read changes and how long a final one is kept are the
// kind's. Kinds() names each kind's engine part (Kind.engine), so the
// engine never names a kind.
type kindEngine interface {
	// dueLocked marks pending and returns the kind's operations due by
	// limit (the round's slack, see due) in a round starting at now. s.mu
	// is held.
	dueLocked(now, limit time.Time) []pollTask
	// pollingLocked is the polling state of the operation at key, nil when
	// it is no longer followed. s.mu is held.
	pollingLocked(key string) *polling
	// throttledUntil is when the API's pause of the kind's read endpoint
	// (Retry-After) ends, zero when there is none.
	throttledUntil() time.Time
	// read reads one operation from the API (ctx bounds it) and returns
	// how to record what it read, at at, in a round started at roundStart
	// (called with s.wmu held).
	read(ctx context.Context, t pollTask) (apply func(at, roundStart time.Time), err error)
	// applyError records a failed read: the backoff, and an operation lost
	// after repeated 404s. s.wmu is held.
	applyError(t pollTask, err error, at time.Time)
	// load reads the kind's records and intents of the projects want
	// accepts from the state (their idempotency keys into l.keys, the
	// intents whose operation is followed into l.resolved), and returns
	// how to merge them into memory.
	load(l *loadedState, want func(project string) bool, now time.Time) (loadedKind, error)
	// snapshotLocked adds the kind's operations and unknown outcomes to
	// the projects of by (the metrics' and status page's view at now).
	// s.mu is held.
	snapshotLocked(by map[string]*projectJobs, now time.Time)
	// statusLocked adds the kind's own rows to the status page at now.
	// s.mu is held.
	statusLocked(out *status.Jobs, now time.Time)
	// forgetExpired deletes the operations final (or lost) for longer than
	// Retention, and the kind's intents as old: from the state first, then
	// from memory.
	forgetExpired(now time.Time)
	// unsavedLocked adds to out the kind's operations acknowledged
	// upstream whose record is not written yet (Unsaved). s.mu is held.
	unsavedLocked(out []Unsaved) []Unsaved
}

// pollOne reads one operation of any kind and applies what it learned.
func (s *Tracker) pollOne(ctx context.Context, t pollTask, roundStart time.Time) {
	release := func(next time.Time) {
		s.mu.Lock()
		if p := t.kind.pollingLocked(t.key); p != nil {
			p.pollPending = false
			if !next.IsZero() {
				p.nextPoll = next
			}
		}
		s.mu.Unlock()
	}
	if until := t.kind.throttledUntil(); !until.IsZero() {
		// The API asked for a pause (Retry-After): no request, and no
		// worker blocked waiting for it.
		release(until)
		return
	}
	if !t.due.IsZero() {
		s.metrics.pollDelay(s.cfg.Now().Sub(t.due))
	}
	pctx, cancel := context.WithTimeout(ctx, s.cfg.PollTimeout)
	apply, err := t.kind.read(pctx, t)
	cancel()
	at := s.cfg.Now()
	if err != nil && ctx.Err() != nil {
		release(time.Time{}) // shutting down: not the operation's fault
		return
	}
	// The kind derives the record it writes from the one in memory: wmu
	// keeps a follow-up or a settle from writing in between.
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err != nil {
		t.kind.applyError(t, err, at)
		return
	}
	apply(at, roundStart)
}

// lockFollowed takes s.mu and returns the operation at key of m (a kind's
// followed operations); when it is no longer followed it returns nil and
// s.mu is not held.
func lockFollowed[E any](s *Tracker, m map[string]*E, key string) *E {
	s.mu.Lock()
	e := m[key]
	if e == nil {
		s.mu.Unlock()
	}
	return e
}

// finishEvent is the metric update of one persisted change of an
// operation of any kind, applied once the change is written.
type finishEvent struct {
	finished string // its final status, seen live
	// duration is how long it took, when the API says.
	duration   time.Duration
	observeDur bool
}
