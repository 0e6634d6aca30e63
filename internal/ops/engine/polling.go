package engine

import (
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

// Polling is the scheduling state of a followed operation, of any kind:
// poll rounds, backoff and the 404s that make an operation lost are the
// engine's, not a kind's.
type Polling struct {
	// dirty: the record differs from the state (a write failed); the next
	// poll writes it again.
	dirty bool
	// nextPoll: not polled before this; zero means the next round.
	nextPoll   time.Time
	lastPolled time.Time
	errors     int // consecutive poll errors
	notFound   int // consecutive 404s
	lastErr    string
	// pending: picked by a round that has not applied its result yet.
	pending bool
	// recheck: polled at the next round even though the record is no
	// longer Polled (a follow-up of unknown outcome may have made it
	// active again, or it was handed over again).
	recheck bool
	// intentKey is the intent still in the state because the operation's
	// first write failed: deleted by the write that lands.
	intentKey string
}

// Recheck reports whether it is polled again though its record is not
// Polled (Ops.Recheck).
func (p *Polling) Recheck() bool { return p.recheck }

// Unwritten reports whether its record is in memory only (its write has
// not landed).
func (p *Polling) Unwritten() bool { return p.dirty }

// entry is a followed operation in memory.
type entry struct {
	rec Record
	Polling
	// gen counts the changes of the record that are not a poll's (a
	// follow-up, a settle, a bundle): a poll that read before one is read
	// again rather than applied over it.
	gen int
	// unwritten is the event of the read that made the record, when its
	// first write failed: counted once a write of the record lands.
	unwritten Event
}

// polled reports whether e is still polled at now.
func (e *entry) polled(now time.Time, cfg *Config) bool {
	return e.recheck || e.rec.Polled(now, cfg)
}

// dueAt is when en's next poll is due: its schedule, or for one never
// polled here (due at the next round) a poll interval after it was
// followed or the engine opened, so that a first poll a stalled round
// holds back shows as late too.
func (en *entry) dueAt(e *Engine) time.Time {
	if t := en.rec.Base().TrackedAt; en.nextPoll.IsZero() && en.lastPolled.IsZero() && !t.IsZero() {
		if t.Before(e.started) {
			t = e.started
		}
		return t.Add(e.cfg.PollInterval)
	}
	return en.nextPoll
}

// intentOps are the extra operations of the next write of the record:
// the deletion of its intent (in bucket) when its first write failed and
// the intent is still in the state.
func (p *Polling) intentOps(bucket string) []store.Op {
	if p.intentKey == "" {
		return nil
	}
	return []store.Op{{Bucket: bucket, Key: p.intentKey}}
}

// polledOK records a successful poll at at.
func (p *Polling) polledOK(at time.Time) {
	p.pending = false
	p.lastPolled, p.errors, p.notFound, p.lastErr = at, 0, 0, ""
}

// written records the outcome of the write of a changed record: on an
// error the change is kept in memory only (dirty: written again at the
// next poll, or handed over with its intent: Unsaved) and the error is
// shown as the operation's last; a write that landed deleted the intent
// too.
func (p *Polling) written(err error) {
	if err != nil {
		p.dirty, p.lastErr = true, "state: "+err.Error()
		return
	}
	p.dirty, p.intentKey = false, ""
}

// landed records a write of the record that deleted extra (intentOps)
// with it.
func (p *Polling) landed(extra []store.Op) {
	p.dirty = false
	if len(extra) > 0 {
		p.intentKey = ""
	}
}

// EveryInterval is Record.Next of a kind read every poll interval until
// it is final.
func EveryInterval(final bool, at time.Time, cfg *Config) time.Time {
	if final {
		return time.Time{}
	}
	return at.Add(cfg.PollInterval)
}
