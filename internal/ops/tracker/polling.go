package tracker

import (
	"net/http"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

// polling is the scheduling state of a followed operation of any kind,
// embedded in each kind's entry: poll rounds, backoff and the 404s that
// make an operation lost are the engine's, not a kind's.
type polling struct {
	// dirty: the record differs from the state (a write failed); the
	// next poll writes it again.
	dirty bool
	// nextPoll: not polled before this; zero means the next round.
	nextPoll   time.Time
	lastPolled time.Time
	errors     int // consecutive poll errors
	notFound   int // consecutive 404s
	lastErr    string
	// pollPending: picked by a round that has not applied its result yet.
	pollPending bool
	// intentKey is the intent still in the state because the operation's
	// first write failed: deleted by the write that lands.
	intentKey string
}

// intentOps are the extra operations of the next write of the record: the
// deletion of its intent (in bucket, the kind's intents) when the record's
// first write failed and the intent is still in the state. s.mu is held.
func (p *polling) intentOps(bucket string) []store.Op {
	if p.intentKey == "" {
		return nil
	}
	return []store.Op{{Bucket: bucket, Key: p.intentKey}}
}

// polledOK records a successful poll at at. s.mu is held.
func (p *polling) polledOK(at time.Time) {
	p.pollPending = false
	p.lastPolled, p.errors, p.notFound, p.lastErr = at, 0, 0, ""
}

// pollFailed records a failed poll at at: its error, and the backoff
// before the next (doubling, never sooner than the API's Retry-After). It
// reports whether the API answered 404, and whether that was the
// lostAfter404s-th time in a row (the operation is then lost). s.mu is
// held.
func (s *Tracker) pollFailed(p *polling, err error, at time.Time) (notFound, lost bool) {
	p.pollPending = false
	p.errors++
	p.lastErr = pollErrorText(err)
	p.nextPoll = at.Add(s.backoff(p.errors, err, at))
	if apiclient.StatusCode(err) != http.StatusNotFound {
		p.notFound = 0
		return false, false
	}
	p.notFound++
	return true, p.notFound >= lostAfter404s
}

// written records the outcome of the write of a changed record: on an
// error the change is kept in memory only (dirty: written again at the
// next poll, or handed over with its intent: handoff.go) and the error is
// shown as the operation's last; a write that landed deleted the intent
// too. s.mu is held.
func (p *polling) written(err error) {
	if err != nil {
		p.dirty, p.lastErr = true, "state file: "+err.Error()
		return
	}
	p.dirty, p.intentKey = false, ""
}

// retryWrite keeps a changed record whose write failed (err) in memory
// only, as written does, and polls the operation again at next: the poll
// then writes it again. s.mu is held.
func (p *polling) retryWrite(err error, next time.Time) {
	p.written(err)
	p.nextPoll = next
}

// landed records the write of the record that deleted extra (intentOps)
// with it: the intent is gone from the state too. s.mu is held.
func (p *polling) landed(extra []store.Op) {
	if len(extra) > 0 {
		p.intentKey = ""
	}
}

// writePolledLocked writes the record a poll changed, of any kind (write:
// the kind's write of it, with extra operations), with the deletion of
// its intent (in bucket) when the record's first write failed. On a
// failure the change is kept in memory only and the operation polled
// again at retry; it reports whether the write landed. s.mu is held, and
// released during the write.
func (s *Tracker) writePolledLocked(p *polling, bucket string, write func(extra ...store.Op) error, retry time.Time) bool {
	extra := p.intentOps(bucket)
	s.mu.Unlock()
	err := write(extra...)
	s.mu.Lock()
	if err != nil {
		p.retryWrite(err, retry)
		return false
	}
	p.landed(extra)
	return true
}

// tracking completes f, the tracking of an operation of any kind, with
// what its polling state knows: the last poll, when it ended
// (terminalAt) and, while it is not final, the next check.
func (p *polling) tracking(f Followed, terminalAt time.Time, final bool) Followed {
	if t := p.lastPolled; !t.IsZero() {
		f.LastPolledAt = &t
	}
	if !terminalAt.IsZero() {
		f.TerminalAt = &terminalAt
	}
	if t := p.nextPoll; !t.IsZero() && !final {
		f.NextCheckAt = &t
	}
	return f
}
