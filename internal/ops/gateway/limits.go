package gateway

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
	"github.com/prometheus/client_golang/prometheus"
)

// Limiter is a local limit the gateway applies before a request leaves:
// at most limit requests in any window per scope, a project or (ByOrg)
// its organization. It mirrors a limit the API documents, so that the
// gateway refuses locally what the API would refuse. The first time a
// scope is met, its log is seeded with what the kinds drawing on the
// limit sent within the window (Seed: the state's records, which replicas
// share: a restart, or the replica that takes the gateway over, counts
// what was sent before). Kinds that draw on one limit share it by name
// (deployment updates and automation triggers: 10 per 10 s per
// organization).
type Limiter struct {
	g          *Gateway
	what, noun string
	limit      int
	window     time.Duration
	byOrg      bool
	refused    prometheus.Counter

	mu      sync.Mutex
	logs    map[string]*budget.Log
	seeded  map[string]bool
	sources []func(window time.Duration) map[string][]time.Time
}

// Limit is the limiter called name (the first call makes it: at most
// limit requests, what ("create") counted as noun ("jobs"), per window,
// per project or, byOrg, per organization; a limit of 0 or less is off).
func (g *Gateway) Limit(name, what, noun string, limit int, window time.Duration, byOrg bool) *Limiter {
	g.mu.Lock()
	defer g.mu.Unlock()
	if l := g.limits[name]; l != nil {
		return l
	}
	l := &Limiter{g: g, what: what, noun: noun, limit: limit, window: window, byOrg: byOrg, logs: map[string]*budget.Log{}, seeded: map[string]bool{},
		refused: g.limited.WithLabelValues(name)}
	g.limits[name] = l
	return l
}

// Seed adds what a kind sent within a window, per project (its
// engine.Ops.Recent), to the seed of every scope first met.
func (l *Limiter) Seed(recent func(window time.Duration) map[string][]time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sources = append(l.sources, recent)
}

// scope is project's scope of the limit.
func (l *Limiter) scope(project string) string {
	if l.byOrg {
		return l.g.Organization(project)
	}
	return project
}

// logLocked is scope's log. l.mu is held.
func (l *Limiter) logLocked(scope string) *budget.Log {
	lg := l.logs[scope]
	if lg == nil {
		lg = &budget.Log{Hold: l.window}
		l.logs[scope] = lg
	}
	return lg
}

// seed seeds project's scope the first time it is met. It reads the
// engine's records: never under the engine's lock (Admit's function runs
// under it), nor l's (the engine's is taken under it).
func (l *Limiter) seed(project string, now time.Time) {
	scope := l.scope(project)
	l.mu.Lock()
	done, sources := l.seeded[scope], slices.Clone(l.sources)
	l.mu.Unlock()
	if done {
		return
	}
	var times []time.Time
	for _, recent := range sources {
		for p, ts := range recent(l.window) {
			if l.scope(p) == scope {
				times = append(times, ts...)
			}
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.seeded[scope] {
		l.seeded[scope] = true
		l.logLocked(scope).Seed(now, times...)
	}
}

// The API's documented limit of updates (of the documentation, and
// automation triggers: they share it) per organization.
const (
	UpdateLimit  = 10
	UpdateWindow = 10 * time.Second
)

// Updates is the organization's limit the API sets on updates of the
// documentation and automation triggers together: one limiter counts
// both, so that a pipeline that triggers both is refused here, never by
// an upstream 429.
func (g *Gateway) Updates() *Limiter {
	return g.Limit("updates", "update", "documentation updates and automation triggers together", UpdateLimit, UpdateWindow, true)
}

// LimitError is a local limit refusing a request for Wait.
type LimitError struct {
	What  string
	Limit int
	Per   string
	Wait  time.Duration
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s limit reached: at most %d %s; nothing was sent; retry in %s", e.What, e.Limit, e.Per, e.Wait.Round(time.Second))
}

// Admit is the engine's Start.Admit of a request of project arriving at
// at: it takes a slot, or fails with *LimitError; admitted reports whether
// it took one (Release gives it back when nothing was sent). The scope is
// seeded now, before the engine calls the function under its lock.
func (l *Limiter) Admit(project string, at time.Time, admitted *bool) func() error {
	l.seed(project, at)
	return func() error {
		if l.limit <= 0 {
			return nil
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		ok, next := l.logLocked(l.scope(project)).Take(at, l.limit)
		if !ok {
			l.refused.Inc()
			per := fmt.Sprintf("%s per %s per project", l.noun, l.window)
			if l.byOrg {
				per = fmt.Sprintf("%s per %s per organization", l.noun, l.window)
			}
			return &LimitError{What: l.what, Limit: l.limit, Per: per, Wait: next.Sub(at)}
		}
		*admitted = true
		return nil
	}
}

// Release gives back project's slot taken at t, for a request that
// certainly never reached the API.
func (l *Limiter) Release(project string, t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.logLocked(l.scope(project)).Release(t)
}

// NothingSent reports whether a start that failed with err was never sent
// (its limit slot is then given back): the API's Retry-After still ran,
// or its intent could not be written.
func NothingSent(err error) bool {
	_, throttled := errors.AsType[*apiclient.ThrottledError](err)
	_, intentErr := errors.AsType[*engine.IntentError](err)
	return throttled || intentErr
}
