package budget

import (
	"slices"
	"time"
)

// Log is a rolling-window log of send times: at most a limit of them in
// any Hold. It is the one limiter type of the exporter: the analytics
// Budget keeps one per organization, the gateway one per project for
// creates and one for messages. The zero value with Hold set is empty and
// ready. A Log is not safe for concurrent use: its owner locks.
type Log struct {
	// Hold is how long a send counts after it was made.
	Hold time.Duration
	// times are the sends still counting (after the last prune), oldest
	// first.
	times []time.Time
}

// prune drops the sends that no longer count at now.
func (l *Log) prune(now time.Time) {
	cut := 0
	for cut < len(l.times) && !l.times[cut].After(now.Add(-l.Hold)) {
		cut++
	}
	if cut > 0 {
		l.times = append(l.times[:0], l.times[cut:]...)
	}
}

// Len is how many sends count at now.
func (l *Log) Len(now time.Time) int {
	l.prune(now)
	return len(l.times)
}

// Take records a send at now if fewer than limit count, and otherwise
// reports when the next one may be made.
func (l *Log) Take(now time.Time, limit int) (bool, time.Time) {
	if l.Len(now) >= limit {
		return false, l.NextFree(now, limit, 1)
	}
	l.times = append(l.times, now) // now is never before the last send
	return true, time.Time{}
}

// Release forgets a send made at t, for one that certainly never left.
func (l *Log) Release(t time.Time) {
	for i := len(l.times) - 1; i >= 0; i-- {
		if l.times[i].Equal(t) {
			l.times = slices.Delete(l.times, i, i+1)
			return
		}
	}
}

// Seed records sends made before this process started (read from a state
// or ledger file), so that a restart does not reset the window; those that
// no longer count at now are left out.
func (l *Log) Seed(now time.Time, times ...time.Time) {
	for _, t := range times {
		if !t.After(now.Add(-l.Hold)) {
			continue
		}
		i := len(l.times)
		for i > 0 && l.times[i-1].After(t) {
			i--
		}
		l.times = slices.Insert(l.times, i, t)
	}
}

// NextFree is when n more sends fit under limit (now if they already do),
// each send leaving the log Hold after it was made. n is clamped to
// 1..limit: for more than the limit it answers for the whole limit.
func (l *Log) NextFree(now time.Time, limit, n int) time.Time {
	l.prune(now)
	n = min(max(n, 1), limit)
	if over := len(l.times) - (limit - n); over > 0 {
		return l.times[over-1].Add(l.Hold)
	}
	return now
}

// Times are the sends that counted at the last call, oldest first; the
// slice is the log's own, to be read before the log changes.
func (l *Log) Times() []time.Time { return l.times }
