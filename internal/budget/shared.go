package budget

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// SharedLedger is a rolling-window ledger kept outside the process and
// shared by every replica of the exporter (RedisLedger keeps one per
// organization in Redis). It decides atomically and on its own clock, so
// that replicas' clocks do not matter: the durations it returns count from
// its own now.
type SharedLedger interface {
	// Take counts one request as sent if the window, the pause and the
	// limit allow it, and reports the state after.
	Take(ctx context.Context, q LedgerQuery) (LedgerState, error)
	// Read reports the state without taking.
	Read(ctx context.Context, q LedgerQuery) (LedgerState, error)
	// Reject tells every replica of a 429: nothing is sent for pause,
	// and the limit is halved for halve.
	Reject(ctx context.Context, pause, halve time.Duration) error
}

// LedgerQuery is what a Budget asks its shared ledger.
type LedgerQuery struct {
	// Limit is the configured limit per window (halved by the ledger
	// while a 429's halving is in force).
	Limit int
	// Hold is how long a request counts after it was sent.
	Hold time.Duration
	// N is how many requests NextFree answers for (at least 1).
	N int
	// PausedFor and HalvedFor are this process's own 429 pause and
	// halving still in force, which count even when telling the other
	// replicas failed.
	PausedFor, HalvedFor time.Duration
}

// LedgerState is a shared ledger's answer.
type LedgerState struct {
	// Taken: Take counted the request, which may leave.
	Taken bool
	// Spent is how many requests were sent in the last Hold, every
	// replica's together.
	Spent int
	// Effective is the limit in force.
	Effective int
	// NextFree is how long until N more requests may leave (0 = now).
	NextFree time.Duration
	// PausedFor and HalvedFor are how long the pause and the halving
	// after a 429 last (0 = not in force).
	PausedFor, HalvedFor time.Duration
}

// ErrLedgerUnavailable means a request was not sent because the shared
// ledger could not be asked: no request leaves unpaid.
var ErrLedgerUnavailable = errors.New("analytics request not sent: the shared ledger (Redis) is unreachable")

// sharedReadTimeout bounds a read of the shared ledger for a method
// without a context (metrics, the status page, the plan's look-ahead); the
// ledger's own timeout is usually shorter.
const sharedReadTimeout = 5 * time.Second

// sharedQuery is the question for n requests at now. Caller holds mu.
func (b *Budget) sharedQuery(now time.Time, n int) LedgerQuery {
	return LedgerQuery{Limit: b.limit, Hold: b.hold(), N: max(n, 1),
		PausedFor: max(0, b.pausedUntil.Sub(now)), HalvedFor: max(0, b.halvedUntil.Sub(now))}
}

// sharedView is the shared ledger's state in this process's clock, or,
// when the ledger cannot be asked (ok false), what is safe: nothing free,
// the last known spend, another look after a short while.
func (b *Budget) sharedView(n int) (now time.Time, st LedgerState, ok bool) {
	b.mu.Lock()
	now = b.now()
	q := b.sharedQuery(now, n)
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), sharedReadTimeout)
	defer cancel()
	st, err := b.shared.Read(ctx, q)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil {
		return now, LedgerState{Spent: b.lastSpent, Effective: b.effective(now), NextFree: b.unreachableRetry(),
			PausedFor: q.PausedFor, HalvedFor: q.HalvedFor}, false
	}
	b.lastSpent = st.Spent
	return now, st, true
}

// unreachableRetry is when to look again at a shared ledger that did not
// answer: 5s in an hour's window.
func (b *Budget) unreachableRetry() time.Duration { return b.window / 720 }

// free is how many requests the shared ledger lets leave now.
func (b *Budget) sharedFree() int {
	_, st, ok := b.sharedView(1)
	if !ok || st.PausedFor > 0 {
		return 0
	}
	return max(0, st.Effective-st.Spent)
}

// sharedTake asks the shared ledger for one request.
func (b *Budget) sharedTake(ctx context.Context) (now time.Time, st LedgerState, changed chan struct{}, err error) {
	b.mu.Lock()
	now, changed = b.now(), b.changed
	q := b.sharedQuery(now, 1)
	b.mu.Unlock()
	st, err = b.shared.Take(ctx, q)
	if err != nil {
		return now, st, changed, fmt.Errorf("%w: %w", ErrLedgerUnavailable, err)
	}
	b.mu.Lock()
	b.lastSpent = st.Spent
	b.mu.Unlock()
	return now, st, changed, nil
}

// waitShared is Wait on the shared ledger: every request is paid there
// before it leaves, and none leaves when the ledger cannot be asked.
func (b *Budget) waitShared(ctx context.Context, noWait bool) error {
	for {
		now, st, changed, err := b.sharedTake(ctx)
		if err != nil || st.Taken {
			return err
		}
		if err := b.sleep(ctx, noWait, now, now.Add(st.NextFree), changed); err != nil {
			return err
		}
	}
}

// rejectShared tells the other replicas of a 429.
func (b *Budget) rejectShared(pause time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), sharedReadTimeout)
	defer cancel()
	// A failure leaves this process's own pause and halving, which every
	// query carries; the other replicas hear of the 429 when they get one.
	_ = b.shared.Reject(ctx, pause, b.window)
}
