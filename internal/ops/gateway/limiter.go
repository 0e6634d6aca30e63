package gateway

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/tracker"
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

// orgLimits are the trigger limits the API documents per organization,
// one limiter per limit whatever kind draws on it: deployment updates and
// automation triggers share the updates' (10 per 10 s: a pipeline that
// triggers both is refused here, never by an upstream 429), previews have
// their own. The first time an organization is met, each limiter is
// seeded from what every kind drawing on it started within its window
// (the state's records, which replicas share: the replica that takes the
// gateway over counts what the last one sent).
type orgLimits struct {
	updates, previews *limiter
	mu                sync.Mutex
	seeded            map[string]bool
	// sources are the kinds' recent starts, each into its limiter.
	sources []seedSource
}

// seedSource is a kind's recent starts into lim: recent(window) per
// project.
type seedSource struct {
	lim    *limiter
	window time.Duration
	recent func(window time.Duration) map[string][]time.Time
}

func newOrgLimits() *orgLimits {
	return &orgLimits{updates: newLimiter(UpdateLimit, UpdateWindow), previews: newLimiter(PreviewLimit, PreviewWindow), seeded: map[string]bool{}}
}

// of is the limiter a trigger of kind draws on (a deployment kind; any
// other, an automation, draws on the updates') and its window.
func (o *orgLimits) of(kind string) (*limiter, time.Duration) {
	if kind == tracker.KindPreview {
		return o.previews, PreviewWindow
	}
	return o.updates, UpdateWindow
}

// nothingSent reports whether a trigger that failed with err was never
// sent (its limit slot is then given back).
func nothingSent(err error) bool {
	_, throttled := errors.AsType[*apiclient.ThrottledError](err)
	_, intentErr := errors.AsType[*tracker.IntentError](err)
	return throttled || intentErr
}

// limitMsg is the 429 of a trigger of kind refused here for wait.
func limitMsg(kind string, wait time.Duration) string {
	limit, window, what := UpdateLimit, UpdateWindow, "deployment updates and automation triggers together"
	if kind == tracker.KindPreview {
		limit, window, what = PreviewLimit, PreviewWindow, "previews"
	}
	return fmt.Sprintf("%s limit reached: at most %d %s per %s per organization; nothing was sent; retry in %s",
		kind, limit, what, window, wait.Round(time.Second))
}

// add declares a kind's recent starts into lim (before any request).
func (o *orgLimits) add(lim *limiter, window time.Duration, recent func(time.Duration) map[string][]time.Time) {
	o.sources = append(o.sources, seedSource{lim: lim, window: window, recent: recent})
}

// seed seeds org's logs from every source the first time org is met
// (orgOf names a project's organization) and returns lim.
func (o *orgLimits) seed(lim *limiter, org string, orgOf func(string) string, now time.Time) *limiter {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.seeded[org] {
		o.seeded[org] = true
		for _, src := range o.sources {
			for p, times := range src.recent(src.window) {
				if orgOf(p) == org {
					src.lim.seed(org, times, now)
				}
			}
		}
	}
	return lim
}

// admitTrigger is the tracker's Admit of a trigger that draws on lim for
// org at at: it takes a slot or fails with *limitError; admitted reports
// whether it took one (to give it back when nothing was sent).
func admitTrigger(lim *limiter, org string, at time.Time, admitted *bool) func() error {
	return func() error {
		ok, wait := lim.reserve(org, at)
		if !ok {
			return &limitError{wait: wait}
		}
		*admitted = true
		return nil
	}
}
