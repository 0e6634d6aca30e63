package refresh

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
	"github.com/mintlify-exporter/mintlify_exporter/internal/visitors"
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
type Project = visitors.PlanProject

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
	// PageSize is the visitors page size, 1..apiclient.MaxPageSize.
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

// Scheduler walks every project and window on a plan the budget pays for.
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

// entry is one project×window (or the final day of a project).
type entry struct {
	project string
	// proj is the project's configuration; replaced (with the entry) when
	// a reload changes how it is walked.
	proj   *Project
	spec   sources.Spec
	src    sources.Source
	window visitors.Window
	final  bool
	scope  string
	label  string

	// Guarded by Scheduler.mu.
	// cost is the requests of the last good walk once costKnown, else an
	// estimate; reserved is what the walk in flight reserved.
	cost      int
	costKnown bool
	reserved  int
	interval  time.Duration
	// logged is the plan last logged for the entry.
	logged  string
	nextDue time.Time
	// heldUntil: another replica claimed the walk; not due before then.
	heldUntil time.Time
	// seen is a shared version found older than state's snapshot.
	seen     int64
	inflight chan struct{}
	state    *state
}

// state is an entry's outcome so far. It is immutable.
type state struct {
	good       sources.Snapshot
	attempted  bool
	ok         bool
	failures   int   // walks that failed since the entry was made
	err        error // of the last walk, when it failed
	attemptEnd time.Time
	duration   time.Duration
	// version is good's version in the shared store (0: not shared).
	version int64
}

// New validates cfg's plan settings and returns a Scheduler with nothing
// fetched yet. The projects are the configuration's validated value
// (internal/config checks every rule of a project once, for the file and
// the flags alike): they are not checked again here.
func New(client *apiclient.Client, b *budget.Budget, cfg Config, logger log.Logger) (*Scheduler, error) {
	if client == nil || b == nil {
		return nil, errors.New("refresh: nil API client or budget")
	}
	if cfg.PageSize < 1 || cfg.PageSize > apiclient.MaxPageSize {
		return nil, fmt.Errorf("page size %d outside 1..%d", cfg.PageSize, apiclient.MaxPageSize)
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
			return nil, fmt.Errorf("%s must not be negative", c.name)
		}
	}
	if cfg.MinInterval <= 0 {
		return nil, errors.New("the shortest refresh interval must be positive")
	}
	if cfg.FinalDayDelay >= FinalDayExport {
		return nil, fmt.Errorf("final-day delay %s must be shorter than %s", cfg.FinalDayDelay, FinalDayExport)
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

// entryKey identifies an entry across reloads.
type entryKey struct {
	project, source, label, scope string
}

// entriesFor lays out the entries of projects in priority order: today's
// site totals first, then every source's windows, the freshest (and
// fastest-moving) first, so that today's numbers are never starved by
// longer windows; yesterday's settled numbers come last, correcting a day
// that is already exported with what the plan leaves over. An entry of old
// whose project and source are walked alike is kept as it is, with its
// snapshot, cost and place in the schedule. Caller holds mu (or owns s
// alone).
//
// A kept entry moves to its project in projects only when the caller
// applies moved: until then the running plan is untouched.
func (s *Scheduler) entriesFor(projects []Project, old []*entry) ([]*entry, []movedEntry, error) {
	keep := map[entryKey]*entry{}
	for _, e := range old {
		keep[entryKey{e.project, e.spec.Name, e.label, e.scope}] = e
	}
	var out, finals []*entry
	var moved []movedEntry
	for i := range projects {
		p := &projects[i]
		for _, spec := range p.Specs() {
			def, ok := sources.ByName(spec.Name)
			if !ok { // the configuration knows the same sources: a caller's mistake
				return nil, nil, fmt.Errorf("project %s: no source %q", p.ID, spec.Name)
			}
			// One source per project and spec, shared by its entries (it
			// remembers what its walks cost).
			var src sources.Source
			reuse := func(w visitors.Window, final bool, scope string) (*entry, error) {
				label := w.Name
				if final {
					label = FinalDayWindow
				}
				if o := keep[entryKey{p.ID, spec.Name, label, scope}]; o != nil && o.window == w && sameWalksOfWindow(o, p, spec) {
					moved, src = append(moved, movedEntry{o, p}), o.src
					return o, nil
				}
				if src == nil {
					var err error
					if src, err = def.New(s.sourceConfig(p, spec)); err != nil {
						return nil, fmt.Errorf("project %s: %s: %w", p.ID, spec.Name, err)
					}
				}
				// A site totals walk is one request: its cost is known.
				return &entry{project: p.ID, proj: p, spec: spec, src: src, window: w, final: final, scope: scope, label: label,
					cost: 1, costKnown: scope == ScopeSite, state: &state{}}, nil
			}
			for _, w := range spec.Windows {
				e, err := reuse(w, false, ScopePages)
				if err != nil {
					return nil, nil, err
				}
				out = append(out, e)
				if !def.TotalsOnly || w.Days != 1 {
					continue
				}
				if s.cfg.SiteInterval > 0 {
					if e, err = reuse(w, false, ScopeSite); err != nil {
						return nil, nil, err
					}
					out = append(out, e)
				}
				if s.cfg.FinalDayDelay >= 0 {
					if e, err = reuse(w, true, ScopePages); err != nil {
						return nil, nil, err
					}
					finals = append(finals, e)
				}
			}
		}
	}
	slices.SortStableFunc(out, func(a, b *entry) int {
		if a.scope != b.scope && (a.scope == ScopeSite || b.scope == ScopeSite) {
			if a.scope == ScopeSite {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.weight(), b.weight())
	})
	return append(out, finals...), moved, nil
}

// movedEntry is a kept entry and the project it moves to.
type movedEntry struct {
	e *entry
	p *Project
}

// sameWalksOfWindow reports whether e's window is walked alike under p and
// spec: the same time zone, path policy and source settings. The other
// windows do not matter, so a reload that adds a window walks only it.
func sameWalksOfWindow(e *entry, p *Project, spec sources.Spec) bool {
	a, b := e.proj.Project, p.Project
	a.Windows, b.Windows = nil, nil
	as, bs := e.spec, spec
	as.Windows, bs.Windows = nil, nil
	return a.SameWalks(&b) && as.Equal(bs)
}

// weight is the entry's share of the plan's common factor.
func (e *entry) weight() float64 {
	def, _ := sources.ByName(e.spec.Name) // found by entriesFor
	return float64(e.window.Days) * def.PlanWeight()
}

// sourceConfig is what the source of spec needs for project p.
func (s *Scheduler) sourceConfig(p *Project, spec sources.Spec) sources.Config {
	return sources.Config{
		Client: s.client, Location: p.Loc(), Now: s.now, Logger: s.logger,
		PageSize: s.cfg.PageSize, MaxPages: s.cfg.MaxPages, Paths: p.Paths,
		Settings: spec.Settings,
		StateDir: s.cfg.StateDir,
	}
}

// Update replaces the projects walked, for a configuration reload: an
// entry whose project is walked alike keeps its snapshot, cost and place in
// the schedule (no request is spent on it); new ones are planned within the
// budget; removed ones stop being exported at once (a walk of theirs in
// flight finishes, and its result is dropped).
func (s *Scheduler) Update(projects []Project) error {
	commit, err := s.PrepareUpdate(projects)
	if err != nil {
		return err
	}
	commit()
	return nil
}

// PrepareUpdate does what can fail of Update(projects) and returns the
// commit that makes it the plan: until commit is called, nothing of the
// scheduler changes, so that a reload can prepare every organization before
// it changes any. At most one update is prepared at a time (the caller
// serialises them); commit cannot fail.
func (s *Scheduler) PrepareUpdate(projects []Project) (commit func(), err error) {
	projects = slices.Clone(projects)
	s.mu.Lock()
	entries, moved, err := s.entriesFor(projects, s.entries)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return func() {
		s.mu.Lock()
		for _, m := range moved {
			m.e.proj = m.p
		}
		s.entries = entries
		s.cfg.Projects = projects
		s.planLog.pending = true // a changed plan is logged now, from estimates if need be
		s.replan()
		s.mu.Unlock()
		select {
		case s.walked <- struct{}{}: // plan again now
		default:
		}
	}, nil
}

// replan derives every window's interval from the budget and the walks'
// costs, and logs the plan when it changed. Caller holds mu.
func (s *Scheduler) replan() {
	limit := s.budget.Limit()
	window := s.budget.Window()
	perWindow := Plannable(limit)
	var site, pages []Demand
	var siteEntries, pageEntries []*entry
	for _, e := range s.entries {
		e.cost = s.estimate(e)
		switch {
		case e.final:
			// walked with what the plan leaves over
		case e.scope == ScopeSite:
			site = append(site, Demand{Cost: 1, MinInterval: max(s.cfg.SiteInterval, s.cfg.MinInterval), Days: 1, Midnight: true})
			siteEntries = append(siteEntries, e)
		default:
			minInterval := cmp.Or(e.window.Interval, s.cfg.MinInterval)
			pages = append(pages, Demand{Cost: e.cost, MinInterval: minInterval, Days: e.window.Days,
				Weight: e.weight() / float64(e.window.Days), Midnight: e.window.Days == 1})
			pageEntries = append(pageEntries, e)
		}
	}
	// Today's site totals first, at their own interval, on at most half
	// the budget; page walks share the rest.
	siteIntervals := Intervals(perWindow/2, window, site)
	// Walks are paid whole: with walks of c requests a window holds
	// floor(limit/c) of them, so a budget of 60 carries one walk of 40 an
	// hour, not one and a half.
	if len(pages) > 0 {
		if maxCost := slices.MaxFunc(pages, func(a, b Demand) int { return cmp.Compare(a.Cost, b.Cost) }).Cost; maxCost > 0 {
			perWindow = min(perWindow, float64(limit/maxCost*maxCost))
		}
	}
	siteSpend := spendAt(window, site, siteIntervals)
	s.siteShare = int(math.Ceil(siteSpend))
	s.pageShare = max(s.budget.Limit()-s.siteShare, 1)
	rest := max(perWindow-siteSpend, 0)
	pageIntervals := Intervals(rest, window, pages)
	demands := append(site, pages...)
	intervals := append(siteIntervals, pageIntervals...)
	current := append(siteEntries, pageEntries...)
	s.planned = Spend(window, demands, intervals)
	// The plan is logged at start from estimated costs; then, as walk
	// costs are known once every entry was walked, whenever it changes (a
	// project grew past a page). In between it changes with every first
	// walk: not worth a line each (the first round of a large
	// configuration takes hours).
	known := !slices.ContainsFunc(current, func(e *entry) bool { return !e.state.attempted })
	for i, e := range current {
		if e.interval != intervals[i] && !e.nextDue.IsZero() {
			// Keep the last walk's start, move the next one.
			e.nextDue = e.nextDue.Add(intervals[i] - e.interval)
		}
		e.interval = intervals[i]
	}
	s.logPlan(current, demands, limit, known)
}

// estimate is the requests e's next walk is expected to take: one for site
// totals; its last good walk's; else the most any window of the same
// project and source took, else the most any project took with the source
// (sites of one organization are alike), else the source's own guess.
// Caller holds mu.
func (s *Scheduler) estimate(e *entry) int {
	if e.scope == ScopeSite {
		return 1
	}
	if e.costKnown {
		return e.cost
	}
	same, other := 0, 0
	for _, o := range s.entries {
		if !o.costKnown || o.scope != ScopePages || o.spec.Name != e.spec.Name {
			continue
		}
		if o.project == e.project {
			same = max(same, o.cost)
		}
		other = max(other, o.cost)
	}
	from, to := e.window.Range(s.now(), e.proj.Loc())
	guess := e.src.Estimate(sources.Query{Project: e.project, DateFrom: from, DateTo: to})
	return max(cmp.Or(same, other, guess, 1), e.cost)
}

// Run walks on the plan until ctx ends, then waits for walks in flight.
func (s *Scheduler) Run(ctx context.Context) {
	defer s.Close()
	if s.cfg.Shared != nil {
		// A replica that starts serves what the others published before
		// it plans anything: no request for data that is fresh.
		s.Sync(ctx)
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

// startDue starts the due walks in priority order while the budget can pay
// for each whole walk, and returns when to look again (zero: no idea, look
// again after recheck).
func (s *Scheduler) startDue() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return time.Time{}
	}
	now := s.now()
	var next time.Time
	soonest := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	paused := s.budget.PausedUntil()
	for _, d := range sources.All() { // a 429's Retry-After holds back the organization's quota
		for _, ep := range d.Endpoints {
			if t := s.client.ThrottledUntil(ep); t.After(paused) {
				paused = t
			}
		}
	}
	reserved, probing := 0, false
	for _, e := range s.entries {
		if e.inflight != nil {
			// Requests a walk in flight already sent count in Free too:
			// counting them twice only delays the next start a little.
			reserved += e.reserved
			probing = probing || !e.costKnown
		}
	}
	free := s.budget.Free() - reserved
	blocked := false
	for _, e := range s.order(now) {
		if e.inflight != nil {
			continue
		}
		due, at := s.due(e, now)
		if !due {
			soonest(at)
			continue
		}
		if blocked {
			continue
		}
		if !paused.IsZero() {
			soonest(paused)
			blocked = true
			continue
		}
		need := min(e.cost, s.budget.Effective())
		// One walk of unknown cost at a time: its estimate may be short,
		// and walks never wait for the budget halfway.
		if s.running >= s.cfg.Concurrency || (probing && !e.costKnown) {
			blocked = true // a walk's end wakes Run
			continue
		}
		// Page walks stay within their share of the budget in any
		// window, so that a burst of them (at start, after midnight) never
		// holds today's site totals back.
		if e.scope != ScopeSite && s.siteShare > 0 {
			if used, until := s.pageSpent(now, need); used+need > s.pageShare {
				soonest(until)
				blocked = true
				continue
			}
		}
		if free < need {
			// Strict priority: nothing behind this entry may take the
			// requests it waits for, or a long window could starve today's.
			soonest(s.budget.NextFree(reserved + need))
			blocked = true
			continue
		}
		free -= need
		reserved += need
		e.reserved = need
		if e.scope != ScopeSite {
			s.pageLog = append(s.pageLog, pageSend{at: now, n: need})
		}
		probing = probing || !e.costKnown
		s.start(e, now)
	}
	return next
}

// pageSend is a page walk's reservation at its start.
type pageSend struct {
	at time.Time
	n  int
}

// pageSpent is what page walks reserved in the window up to now, and when
// enough of it leaves the window for need more. Caller holds mu.
func (s *Scheduler) pageSpent(now time.Time, need int) (int, time.Time) {
	hold := s.budget.Window() + s.budget.Window()/100
	cut := 0
	for cut < len(s.pageLog) && !s.pageLog[cut].at.After(now.Add(-hold)) {
		cut++
	}
	s.pageLog = s.pageLog[cut:]
	used := 0
	for _, p := range s.pageLog {
		used += p.n
	}
	over := used + need - s.pageShare
	for _, p := range s.pageLog {
		if over <= 0 {
			break
		}
		over -= p.n
		if over <= 0 {
			return used, p.at.Add(hold)
		}
	}
	return used, now
}

// order is the entries in priority order: today's window first, longer
// windows after it, yesterday's settled numbers last; but a window kept
// waiting longer than its own interval (and than a budget window) goes
// first, so that when single walks are large against the budget, long
// windows still get their turn. Caller holds mu.
func (s *Scheduler) order(now time.Time) []*entry {
	starving := func(e *entry) bool {
		if e.final {
			return false
		}
		since := e.nextDue
		if since.IsZero() {
			since = s.started
		}
		return now.Sub(since) > max(e.interval, s.budget.Window())
	}
	out := slices.Clone(s.entries)
	slices.SortStableFunc(out, func(a, b *entry) int {
		sa, sb := starving(a), starving(b)
		switch {
		case sa && !sb:
			return -1
		case sb && !sa:
			return 1
		}
		return 0
	})
	return out
}

// due reports whether e should be walked at now, or else when it will be.
// Caller holds mu.
func (s *Scheduler) due(e *entry, now time.Time) (bool, time.Time) {
	st := e.state
	if now.Before(e.heldUntil) {
		return false, e.heldUntil
	}
	retryAt := st.attemptEnd.Add(s.retryInterval(e))
	if e.final {
		loc := e.proj.Loc()
		today := visitors.Today(now, loc)
		start := visitors.DayStart(today, loc)
		from, to := e.window.RangeEndingOn(visitors.AddDays(today, -1))
		if st.good != nil && st.good.Meta().DateFrom == from && st.good.Meta().DateTo == to {
			return false, visitors.DayStart(visitors.AddDays(today, 1), loc).Add(s.cfg.FinalDayDelay)
		}
		at := start.Add(s.cfg.FinalDayDelay)
		if st.attempted && !st.ok && retryAt.After(at) {
			at = retryAt
		}
		if !now.Before(start.Add(FinalDayExport)) { // too late today
			return false, visitors.DayStart(visitors.AddDays(today, 1), loc).Add(s.cfg.FinalDayDelay)
		}
		return !now.Before(at), at
	}
	if !st.attempted {
		return true, now
	}
	if !st.ok && now.Before(retryAt) {
		return false, retryAt
	}
	if st.good == nil {
		return true, now
	}
	// Today's window has new dates after midnight: refresh it at once
	// (yesterday's numbers are not served as today's). Longer windows keep
	// their plan, or midnight would spend a day's budget at once.
	if e.window.Days == 1 {
		if from, to := e.window.Range(now, e.proj.Loc()); from != st.good.Meta().DateFrom || to != st.good.Meta().DateTo {
			return true, now
		}
	}
	return !now.Before(e.nextDue), e.nextDue
}

func (s *Scheduler) retryInterval(e *entry) time.Duration {
	if s.cfg.RetryInterval > 0 {
		return s.cfg.RetryInterval
	}
	if e.final {
		return maxRetryInterval
	}
	return min(max(e.interval, time.Second), maxRetryInterval)
}

// start runs one walk of e in its own goroutine. Caller holds mu.
func (s *Scheduler) start(e *entry, now time.Time) {
	done := make(chan struct{})
	e.inflight = done
	s.running++
	s.starts++
	s.wg.Add(1)
	go s.walk(e, now, done)
}

// walk fetches every page of e, then swaps in its new state.
func (s *Scheduler) walk(e *entry, start time.Time, done chan struct{}) {
	defer s.wg.Done()
	s.mu.Lock()
	cost, effective := e.cost, s.budget.Effective()
	key := ""
	if s.cfg.Shared != nil {
		key = sharedKey(e)
	}
	s.mu.Unlock()
	timeout := s.cfg.RefreshTimeout
	if cost > effective {
		// A walk larger than the whole budget waits for it between pages.
		timeout += time.Duration((cost-1)/effective) * s.budget.Window()
	}
	ctx, cancel := context.WithTimeout(s.ctx, timeout)
	defer cancel()
	if cost <= effective {
		// The walk's requests were reserved: it fails rather than wait
		// for the budget halfway (its estimate was short; it reserves
		// more next time).
		ctx = budget.WithoutWaiting(ctx)
	}

	day := visitors.Today(start, e.proj.Loc())
	if e.final {
		day = visitors.AddDays(day, -1)
	}
	from, to := e.window.RangeEndingOn(day)
	var (
		snap    sources.Snapshot
		err     error
		token   int64
		release = func() {}
	)
	if key != "" {
		walkCtx, tok, rel, walk, cerr := s.claim(ctx, e, key)
		switch {
		case cerr == nil && !walk: // another replica's snapshot is fresh
			s.endWithoutWalk(e, time.Time{}, done)
			return
		case errors.Is(cerr, ErrHeld): // another replica is walking it
			s.endWithoutWalk(e, s.now().Add(heldWait), done)
			return
		case cerr != nil:
			err = fmt.Errorf("shared plan: %w", cerr)
		default:
			ctx, token, release = walkCtx, tok, rel
		}
	}
	if err == nil {
		snap, err = e.src.Walk(ctx, sources.Query{Project: e.project, DateFrom: from, DateTo: to, TotalsOnly: e.scope == ScopeSite})
	}
	end := s.now()

	s.mu.Lock()
	old := e.state
	next := &state{good: old.good, attempted: true, ok: err == nil, err: err, attemptEnd: end, duration: max(end.Sub(start), 0), failures: old.failures}
	if err != nil {
		next.failures++
	}
	if err != nil {
		var exhausted *budget.ExhaustedError
		if errors.As(err, &exhausted) {
			// The site outgrew the requests reserved for it: reserve more.
			e.cost = min(e.cost*2, max(e.cost+1, s.budget.Limit()))
		}
		lvl := level.Warn(s.logger)
		if s.ctx.Err() != nil {
			lvl = level.Debug(s.logger) // shutting down: not worth a warning
		}
		serving := "no data yet"
		if old.good != nil {
			serving = "last good data from " + old.good.Meta().At.UTC().Format(time.RFC3339)
		}
		lvl.Log("msg", "analytics refresh failed", "project", e.project, "source", e.spec.Name, "window", e.label, "scope", e.scope,
			"date_from", from, "date_to", to, "duration", end.Sub(start), "serving", serving, "err", err)
	} else {
		next.good, next.version = snap, token
		e.cost, e.costKnown = max(snap.Meta().Requests, 1), true
		e.nextDue = start.Add(e.interval)
		level.Debug(s.logger).Log("msg", "analytics refreshed", "project", e.project, "source", e.spec.Name, "window", e.label,
			"scope", e.scope, "date_from", from, "date_to", to, "requests", snap.Meta().Requests, "duration", end.Sub(start))
	}
	e.state = next
	e.inflight = nil
	e.reserved = 0
	s.running--
	if !old.attempted || cost != e.cost {
		s.replan()
	}
	s.mu.Unlock()
	if err == nil && token > 0 {
		s.publish(e, key, token, snap, start, next.duration)
	}
	release()
	close(done)
	s.wake()
}

// endWithoutWalk ends a walk that sent nothing because another replica
// walked (or is walking, until heldUntil) the demand.
func (s *Scheduler) endWithoutWalk(e *entry, heldUntil time.Time, done chan struct{}) {
	s.mu.Lock()
	e.heldUntil = heldUntil
	e.inflight = nil
	e.reserved = 0
	s.running--
	s.mu.Unlock()
	close(done)
	s.wake()
}

// wake makes Run plan again.
func (s *Scheduler) wake() {
	select {
	case s.walked <- struct{}{}:
	default:
	}
}

// Planned is the requests the plan spends per budget window.
func (s *Scheduler) Planned() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.planned
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

// View is a demand's state: sources.View, what the collector reads.
type View = sources.View

// Views returns one view per project and window, in a stable order.
func (s *Scheduler) Views() []View {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	out := make([]View, 0, len(s.entries))
	for _, e := range s.entries {
		st := e.state
		if loc := e.proj.Loc(); e.final && !now.Before(visitors.DayStart(visitors.Today(now, loc), loc).Add(FinalDayExport)) {
			continue // yesterday's numbers matter only in the first hour of today
		}
		v := View{Project: e.project, Source: e.spec.Name, Scope: e.scope, Window: e.label, Attempted: st.attempted, OK: st.ok, Duration: st.duration,
			LastAttempt: st.attemptEnd, Err: st.err, Failures: st.failures, Running: e.inflight != nil, Cost: e.cost, CostKnown: e.costKnown,
			SharedVersion: st.version}
		if _, at := s.due(e, now); !v.Running {
			v.NextDue = at
		}
		if !e.final {
			v.Interval = e.interval
		}
		if st.good != nil {
			v.LastSuccess = st.good.Meta().At
			if s.servable(e, st.good, now) {
				v.Data = st.good
			}
		}
		out = append(out, v)
	}
	return out
}

// servable reports whether a snapshot answers its window's question at now.
// Caller holds mu.
func (s *Scheduler) servable(e *entry, snap sources.Snapshot, now time.Time) bool {
	m := snap.Meta()
	loc := e.proj.Loc()
	today := visitors.Today(now, loc)
	if e.final {
		from, to := e.window.RangeEndingOn(visitors.AddDays(today, -1))
		return m.DateFrom == from && m.DateTo == to &&
			now.Before(visitors.DayStart(today, loc).Add(FinalDayExport))
	}
	// Staleness is judged against the plan: a window planned every 6h is
	// not dropped after an hour; max staleness is the grace past a missed
	// planned walk.
	// A window planned less often than once a budget window may start up
	// to a budget window late (its plan counts on averages), so that much
	// more grace.
	grace := s.cfg.MaxStaleness
	if e.interval >= s.budget.Window() {
		grace += s.budget.Window()
	}
	if s.cfg.MaxStaleness > 0 && now.Sub(m.At) > e.interval+grace {
		return false
	}
	// Past midnight a 1d snapshot of the old date would show yesterday's
	// full day as today's: serve nothing rather than a wrong answer.
	if e.window.Days == 1 {
		from, to := e.window.Range(now, loc)
		return m.DateFrom == from && m.DateTo == to
	}
	return true
}

// Preview is the plan cfg's projects would start with under a budget of
// limit requests an hour, before any walk has told what walks cost (the
// sources' guesses stand in): what `config check` prints. Nothing is sent.
func Preview(cfg Config, limit int) ([]View, float64, error) {
	b, err := budget.New(budget.Config{Limit: limit})
	if err != nil {
		return nil, 0, err
	}
	c, err := apiclient.New(apiclient.Config{BaseURL: "http://preview.invalid"})
	if err != nil {
		return nil, 0, err
	}
	s, err := New(c, b, cfg, nil)
	if err != nil {
		return nil, 0, err
	}
	defer s.Close()
	return s.Views(), s.Planned(), nil
}
