package gateway

import (
	"sync"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
)

// limiter is a rolling-window log per project (budget.Log, the analytics
// budget's type): at most limit creates in any window. It mirrors how the
// API documents its own limit (100 per hour per project), so the gateway
// refuses locally what the API would refuse.
type limiter struct {
	limit  int
	window time.Duration
	mu     sync.Mutex
	sent   map[string]*budget.Log
}

func newLimiter(limit int, window time.Duration) *limiter {
	return &limiter{limit: limit, window: window, sent: map[string]*budget.Log{}}
}

// log is project's log. Caller holds mu.
func (l *limiter) log(project string) *budget.Log {
	lg := l.sent[project]
	if lg == nil {
		lg = &budget.Log{Hold: l.window}
		l.sent[project] = lg
	}
	return lg
}

// seed records creates that happened before this process started (from the
// state file), so a restart does not reset the window.
func (l *limiter) seed(project string, times []time.Time, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.log(project).Seed(now, times...)
}

// reserve takes a slot at now. When the window is full it returns false and
// how long until the oldest slot frees.
func (l *limiter) reserve(project string, now time.Time) (bool, time.Duration) {
	if l.limit <= 0 {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	ok, next := l.log(project).Take(now, l.limit)
	if !ok {
		return false, next.Sub(now)
	}
	return true, 0
}

// release gives back a slot taken at t, for a create that certainly never
// reached the API.
func (l *limiter) release(project string, t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.log(project).Release(t)
}
