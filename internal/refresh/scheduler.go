// The scheduler's loop: its settings and state (Config, Scheduler), New,
// and Run, which starts what is due, sleeps until the next walk is due or a
// walk ends, and stops walks on Close. Its other parts: entries.go (what is
// walked: one entry per project, source, window and scope, and reloads),
// plan.go (how often each entry is walked, and when it is due), walk.go
// (starting due walks within the budget, and one walk), views.go (what it
// publishes to the collector and the status page), shared.go (sharing walks
// with other replicas), planlog.go (what it logs of the plan) and flags.go
// (the plan's flags).

package refresh

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-kit/log"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// FinalDayWindow is the window label of yesterday's settled numbers,
// exported for the first FinalDayExport of each day (see README, History).
const FinalDayWindow = "yesterday"

// FinalDayExport is how long after local midnight yesterday's settled
// numbers are exported: long enough for a daily query to pick them up,
// short enough not to be mistaken for today's.
const FinalDayExport = time.Hour

// Defaults for Config fields left at zero.
const (
	DefaultRefreshTimeout = 2 * time.Minute
	DefaultConcurrency    = 4
	// maxRetryInterval bounds how long a failed walk waits before the next
	// attempt when RetryInterval is not set (and the plan's is longer).
	maxRetryInterval = 30 * time.Second
	// recheck bounds every sleep of Run, so that a day change is noticed.
	recheck = time.Minute
)

// Scopes of a walk: a whole walk of the source (every page), or a walk of
// the site totals alone (one request, limit=1) for the sources that can,
// planned more often so that today's site numbers stay fresh.
const (
	ScopePages = sources.ScopePages
	ScopeSite  = sources.ScopeSite
)

// DefaultSiteInterval is how often today's site totals of visitors and
// views are walked (one request each), whatever the page walks' plan.
const DefaultSiteInterval = 12 * time.Minute

// Project is one project and its analytics sources, as the plan walks
// them: the configuration's validated value.
type Project = analytics.PlanProject

// Config configures a Scheduler.
type Config struct {
	// Projects are the projects to walk, each with its sources, windows,
	// time zone and path policy; ids are distinct.
	Projects []Project
	// SiteInterval is how often today's site totals of visitors and views
	// are walked (0 = DefaultSiteInterval; the budget may stretch it;
	// negative: not walked apart, only with the pages).
	SiteInterval time.Duration
	// StateDir keeps what sources keep across restarts (the assistant's
	// daily counts); "" keeps it in memory.
	StateDir string
	// PageSize is the rows per request of the visitors and views walks,
	// 1..apiclient.MaxPageSize (--analytics.page-size).
	PageSize int
	// MaxPages caps one walk (0 = apiclient.DefaultMaxPages).
	MaxPages int
	// MinInterval is the shortest interval of any window (--analytics.min-interval).
	MinInterval time.Duration
	// MaxStaleness is how long past its planned interval a snapshot is
	// still served while walks fail (0 = served forever).
	MaxStaleness time.Duration
	// RefreshTimeout bounds one walk's requests (0 = DefaultRefreshTimeout).
	RefreshTimeout time.Duration
	// RetryInterval is how long after a failed walk the next may start
	// (0 = the smaller of the planned interval and 30s).
	RetryInterval time.Duration
	// FinalDayDelay is how long after local midnight the finished day is
	// walked once more for the settled numbers (window "yesterday"); it
	// must be below FinalDayExport. Negative disables the final-day walk.
	FinalDayDelay time.Duration
	// Concurrency is how many walks may run at once (0 = DefaultConcurrency).
	Concurrency int
	// Now is the clock (nil = time.Now).
	Now func() time.Time
	// Shared, when set, shares the walks and their snapshots with the
	// other replicas (see Shared); nil: this process walks alone.
	Shared Shared
	// SyncInterval is how often Run serves what other replicas published
	// (0 = DefaultSyncInterval).
	SyncInterval time.Duration
}

// Scheduler walks every project, source and window on a plan the budget
// pays for.
type Scheduler struct {
	client *apiclient.Client
	budget *budget.Budget
	cfg    Config
	logger log.Logger
	now    func() time.Time

	entries []*entry

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// walked is signalled when a walk ends, so Run plans again.
	walked chan struct{}

	// started is when the scheduler was made: every window is due then.
	started time.Time

	mu      sync.Mutex
	closed  bool
	running int
	// starts counts the walks started, for RefreshDue.
	starts int
	// planLog: what was logged of the plan (planlog.go).
	planLog planLog
	// planned is what the plan spends per budget window; siteShare is
	// what today's site totals take of it in their worst window, and
	// pageShare what every other walk may take in any window.
	planned              float64
	siteShare, pageShare int
	// pageLog is when page walks started and what they reserved, oldest
	// first, for pageShare.
	pageLog []pageSend
}

// New validates cfg's plan settings and returns a Scheduler with nothing
// fetched yet. The projects are the configuration's validated value
// (internal/config checks every rule of a project once, for the file and
// the flags alike): they are not checked again here.
func New(client *apiclient.Client, b *budget.Budget, cfg Config, logger log.Logger) (*Scheduler, error) {
	if client == nil || b == nil {
		return nil, errors.New("refresh: nil API client or budget")
	}
	if err := checkConfig(cfg); err != nil {
		return nil, err
	}
	if cfg.RefreshTimeout == 0 {
		cfg.RefreshTimeout = DefaultRefreshTimeout
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.SyncInterval <= 0 {
		cfg.SyncInterval = DefaultSyncInterval
	}
	if logger == nil {
		logger = log.NewNopLogger()
	}
	s := &Scheduler{client: client, budget: b, cfg: cfg, logger: logger, now: cfg.Now, walked: make(chan struct{}, 1)}
	if s.now == nil {
		s.now = time.Now
	}
	s.started = s.now()
	if cfg.SiteInterval == 0 {
		cfg.SiteInterval = DefaultSiteInterval
	}
	s.cfg = cfg
	var err error
	if s.entries, _, err = s.entriesFor(cfg.Projects, nil); err != nil {
		return nil, err
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.mu.Lock()
	s.planLog.pending = true
	s.replan()
	s.mu.Unlock()
	return s, nil
}

// checkConfig checks cfg's plan settings (the projects are checked by
// internal/config).
func checkConfig(cfg Config) error {
	if cfg.PageSize < 1 || cfg.PageSize > apiclient.MaxPageSize {
		return fmt.Errorf("page size %d outside 1..%d", cfg.PageSize, apiclient.MaxPageSize)
	}
	for _, c := range []struct {
		name string
		v    int64
	}{
		{"max pages", int64(cfg.MaxPages)},
		{"shortest interval", int64(cfg.MinInterval)}, {"max staleness", int64(cfg.MaxStaleness)},
		{"refresh timeout", int64(cfg.RefreshTimeout)}, {"retry interval", int64(cfg.RetryInterval)},
		{"concurrency", int64(cfg.Concurrency)},
	} {
		if c.v < 0 {
			return fmt.Errorf("%s must not be negative", c.name)
		}
	}
	if cfg.MinInterval <= 0 {
		return errors.New("the shortest refresh interval must be positive")
	}
	if cfg.FinalDayDelay >= FinalDayExport {
		return fmt.Errorf("final-day delay %s must be shorter than %s", cfg.FinalDayDelay, FinalDayExport)
	}
	return nil
}

// Run walks on the plan until ctx ends, then waits for walks in flight.
func (s *Scheduler) Run(ctx context.Context) {
	defer s.Close()
	if s.cfg.Shared != nil {
		// A replica that starts serves what the others published before
		// it plans anything: no request for data that is fresh. So does a
		// process that restarts on its state directory, which then drops
		// what the configuration no longer walks.
		s.Sync(ctx)
		s.forget()
		s.wg.Go(func() {
			t := time.NewTicker(s.cfg.SyncInterval)
			defer t.Stop()
			for {
				select {
				case <-s.ctx.Done():
					return
				case <-t.C:
					s.Sync(s.ctx)
				}
			}
		})
	}
	for {
		// next is on the scheduler's clock, which tests move by hand.
		wait := recheck
		if next := s.startDue(); !next.IsZero() {
			wait = min(max(next.Sub(s.now()), 10*time.Millisecond), recheck)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-s.walked:
			t.Stop()
		case <-t.C:
		}
	}
}

// RefreshDue walks everything that is due and that the budget pays for,
// round after round (a walk of unknown cost goes alone, so its end may let
// others start), until nothing more starts or ctx ends. Tests drive the
// scheduler with it; Run does the same on a timer.
func (s *Scheduler) RefreshDue(ctx context.Context) {
	for {
		s.mu.Lock()
		before := s.starts
		s.mu.Unlock()
		s.startDue()
		s.mu.Lock()
		// A walk started by this round may have ended already: another
		// round is due then, or what it held back would wait.
		started := s.starts != before
		var waits []chan struct{}
		for _, e := range s.entries {
			if e.inflight != nil {
				waits = append(waits, e.inflight)
			}
		}
		s.mu.Unlock()
		if len(waits) == 0 && !started {
			return
		}
		for _, ch := range waits {
			select {
			case <-ch:
			case <-ctx.Done():
				return
			}
		}
	}
}

// wake makes Run plan again.
func (s *Scheduler) wake() {
	select {
	case s.walked <- struct{}{}:
	default:
	}
}

// Close cancels walks in flight and waits for them. After Close nothing
// new starts and the last states stay readable.
func (s *Scheduler) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
}
