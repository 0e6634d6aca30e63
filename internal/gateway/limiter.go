package gateway

import (
	"sync"
	"time"
)

// limiter is a sliding-window log per project: at most limit creates in any
// window. It mirrors how the API documents its own limit (100 per hour per
// project), so the gateway refuses locally what the API would refuse.
type limiter struct {
	limit  int
	window time.Duration
	mu     sync.Mutex
	sent   map[string][]time.Time // ascending
}

func newLimiter(limit int, window time.Duration) *limiter {
	return &limiter{limit: limit, window: window, sent: map[string][]time.Time{}}
}

// seed records creates that happened before this process started (from the
// state file), so a restart does not reset the window.
func (l *limiter) seed(project string, times []time.Time, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range times {
		if now.Sub(t) < l.window {
			l.sent[project] = insertSorted(l.sent[project], t)
		}
	}
}

func insertSorted(ts []time.Time, t time.Time) []time.Time {
	i := len(ts)
	for i > 0 && ts[i-1].After(t) {
		i--
	}
	ts = append(ts, time.Time{})
	copy(ts[i+1:], ts[i:])
	ts[i] = t
	return ts
}

// reserve takes a slot at now. When the window is full it returns false and
// how long until the oldest slot frees.
func (l *limiter) reserve(project string, now time.Time) (bool, time.Duration) {
	if l.limit <= 0 {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	ts := l.sent[project]
	drop := 0
	for drop < len(ts) && now.Sub(ts[drop]) >= l.window {
		drop++
	}
	ts = ts[drop:]
	if len(ts) >= l.limit {
		l.sent[project] = ts
		return false, ts[len(ts)-l.limit].Add(l.window).Sub(now)
	}
	l.sent[project] = append(ts, now)
	return true, 0
}

// release gives back a slot taken at t, for a create that certainly never
// reached the API.
func (l *limiter) release(project string, t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ts := l.sent[project]
	for i := len(ts) - 1; i >= 0; i-- {
		if ts[i].Equal(t) {
			l.sent[project] = append(ts[:i], ts[i+1:]...)
			return
		}
	}
}
