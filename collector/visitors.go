package collector

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
)

// Defaults for VisitorsConfig fields left at zero.
const (
	DefaultRefreshTimeout = 2 * time.Minute
	// maxRetryInterval bounds how long a failed refresh waits before the next
	// attempt when RetryInterval is not set (and CacheTTL is longer).
	maxRetryInterval = 30 * time.Second
)

// VisitorsConfig configures a Visitors collector.
type VisitorsConfig struct {
	// Projects are the project ids to export; duplicates are ignored.
	Projects []string
	// Windows are the date ranges to export; duplicates are ignored.
	Windows []Window
	// Location is the time zone whose calendar defines "today" (nil = UTC).
	Location *time.Location
	// PageSize is the visitors page size, 1..apiclient.MaxPageSize.
	PageSize int
	// MaxPages caps one walk through the pages (0 = apiclient.DefaultMaxPages).
	MaxPages int
	// MaxPaths keeps the top N paths by deduplicated total, ties broken by
	// path (0 = no cap).
	MaxPaths int
	// PathInclude, when set, keeps only paths it matches (regexp.MatchString:
	// unanchored unless the pattern anchors itself).
	PathInclude *regexp.Regexp
	// PathExclude, when set, drops paths it matches. It wins over PathInclude.
	PathExclude *regexp.Regexp
	// CacheTTL is how old a snapshot may get before a scrape refreshes it
	// (0 = refresh on every scrape, still one refresh at a time).
	CacheTTL time.Duration
	// MaxStaleness: a snapshot older than this is no longer served (0 =
	// served forever). It must be 0 or at least CacheTTL.
	MaxStaleness time.Duration
	// RefreshTimeout bounds one background refresh of a project and window,
	// all its pages and retries (0 = DefaultRefreshTimeout).
	RefreshTimeout time.Duration
	// RetryInterval is how long after a failed refresh the next one may start
	// (0 = the smaller of CacheTTL and 30s). It stops every scrape from
	// hammering an API that is down; apiclient separately holds requests
	// back for as long as a Retry-After asked.
	RetryInterval time.Duration
	// Now is the clock (nil = time.Now). It dates snapshots and refresh
	// durations, and decides TTL and staleness.
	Now func() time.Time
}

// Visitors is a prometheus.Collector exporting unique visitor counts from a
// cache of immutable snapshots, one per project and window. Collect only
// reads snapshots; Refresh (called before a scrape, see RefreshBeforeScrape)
// starts the refreshes that are due.
type Visitors struct {
	client *apiclient.Client
	cfg    VisitorsConfig
	logger log.Logger
	now    func() time.Time

	entries []*visitorsEntry

	// ctx is the parent of every refresh; Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	// mu guards closed and wg.Add, so that no refresh starts after Close
	// has begun waiting.
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// visitorsEntry is one project×window: its current state and its in-flight refresh.
type visitorsEntry struct {
	project string
	window  Window

	// state is replaced, never modified, by the one refresh in flight.
	state atomic.Pointer[visitorsState]

	mu sync.Mutex
	// inflight is non-nil while a refresh runs and is closed when it ends;
	// concurrent scrapes wait on the same channel.
	inflight chan struct{}
}

// state is what Collect reads for one project×window. It is immutable.
type visitorsState struct {
	// good is the last successful snapshot, nil before the first success.
	good *visitorsSnapshot
	// attempted is false until the first refresh finished.
	attempted bool
	// ok reports whether the last finished refresh succeeded.
	ok bool
	// attemptEnd is when the last refresh finished.
	attemptEnd time.Time
	// duration is how long the last refresh took, in seconds.
	duration float64
}

// snapshot is the data of one successful refresh, reduced to what Collect
// emits. It is immutable.
type visitorsSnapshot struct {
	// at is when the refresh finished.
	at time.Time
	// timestamp is at as Unix seconds, precomputed for Collect.
	timestamp        float64
	dateFrom, dateTo string
	site             visitorCounts
	// pages are unique by path, sorted by total descending then path.
	pages   []pageVisitorCounts
	dropped int
}

type visitorCounts struct{ human, ai, total float64 }

type pageVisitorCounts struct {
	path string
	visitorCounts
}

// Label values of the traffic label.
const (
	trafficHuman = "human"
	trafficAI    = "ai"
)

var (
	siteVisitorsDesc = prometheus.NewDesc(
		"mintlify_site_unique_visitors",
		"Unique visitors of the whole site in the window, by traffic (human or ai), as the Mintlify API reports them. "+
			"Unique visitors are not additive: do not sum across windows, and human + ai exceeds the deduplicated total "+
			"(mintlify_site_unique_visitors_deduplicated) when visitors overlap.",
		[]string{"project", "window", "traffic"}, nil)
	siteVisitorsDedupDesc = prometheus.NewDesc(
		"mintlify_site_unique_visitors_deduplicated",
		"The Mintlify API's site-wide unique visitor total for the window, deduplicated across human and AI traffic. "+
			"It is the API's own total, never computed as a sum of the traffic series, and not additive across windows.",
		[]string{"project", "window"}, nil)
	pageVisitorsDesc = prometheus.NewDesc(
		"mintlify_page_unique_visitors",
		"Unique visitors of one page in the window, by traffic (human or ai), as the Mintlify API reports them. "+
			"Not additive: a visitor who reads several pages counts on each, so summing over path does not give the site count; "+
			"do not sum across windows either.",
		[]string{"project", "window", "path", "traffic"}, nil)
	pageVisitorsDedupDesc = prometheus.NewDesc(
		"mintlify_page_unique_visitors_deduplicated",
		"The Mintlify API's unique visitor total of one page in the window, deduplicated across human and AI traffic. "+
			"It is the API's own total, never computed as a sum, and not additive across paths or windows.",
		[]string{"project", "window", "path"}, nil)
	refreshSuccessDesc = prometheus.NewDesc(
		"mintlify_visitors_refresh_success",
		"1 if the last refresh of visitors for this project and window from the Mintlify API succeeded, else 0 (also 0 until the first refresh has finished). "+
			"After a failure the last good data stays exported until it is older than the maximum staleness.",
		[]string{"project", "window"}, nil)
	lastRefreshDesc = prometheus.NewDesc(
		"mintlify_visitors_last_refresh_timestamp_seconds",
		"Unix time at which the last successful refresh of visitors for this project and window finished: the age of the data exported. "+
			"Absent until the first success.",
		[]string{"project", "window"}, nil)
	refreshDurationDesc = prometheus.NewDesc(
		"mintlify_visitors_refresh_duration_seconds",
		"How long the last refresh of visitors for this project and window took (every page and retry), whether it succeeded or not.",
		[]string{"project", "window"}, nil)
	pathsDesc = prometheus.NewDesc(
		"mintlify_visitors_paths",
		"Paths exported for this project and window, after the path filters and the path cap.",
		[]string{"project", "window"}, nil)
	pathsDroppedDesc = prometheus.NewDesc(
		"mintlify_visitors_paths_dropped",
		"Paths the Mintlify API reported for this project and window that are not exported, left out by the path include/exclude filters or the path cap.",
		[]string{"project", "window"}, nil)

	allDescs = []*prometheus.Desc{
		siteVisitorsDesc, siteVisitorsDedupDesc, pageVisitorsDesc, pageVisitorsDedupDesc,
		refreshSuccessDesc, lastRefreshDesc, refreshDurationDesc, pathsDesc, pathsDroppedDesc,
	}
)

// NewVisitors validates cfg and returns a collector with an empty cache.
// Nothing is fetched until the first Refresh.
func NewVisitors(client *apiclient.Client, cfg VisitorsConfig, logger log.Logger) (*Visitors, error) {
	if client == nil {
		return nil, errors.New("visitors collector: nil API client")
	}
	if len(cfg.Projects) == 0 {
		return nil, errors.New("visitors collector: no project")
	}
	if len(cfg.Windows) == 0 {
		return nil, errors.New("visitors collector: no window")
	}
	if cfg.PageSize < 1 || cfg.PageSize > apiclient.MaxPageSize {
		return nil, fmt.Errorf("page size %d outside 1..%d", cfg.PageSize, apiclient.MaxPageSize)
	}
	for _, c := range []struct {
		name string
		v    int64
	}{
		{"max pages", int64(cfg.MaxPages)}, {"max paths", int64(cfg.MaxPaths)},
		{"cache TTL", int64(cfg.CacheTTL)}, {"max staleness", int64(cfg.MaxStaleness)},
		{"refresh timeout", int64(cfg.RefreshTimeout)}, {"retry interval", int64(cfg.RetryInterval)},
	} {
		if c.v < 0 {
			return nil, fmt.Errorf("%s must not be negative", c.name)
		}
	}
	if cfg.MaxStaleness > 0 && cfg.MaxStaleness < cfg.CacheTTL {
		return nil, fmt.Errorf("max staleness %s is shorter than the cache TTL %s: data would vanish between refreshes", cfg.MaxStaleness, cfg.CacheTTL)
	}
	if cfg.Location == nil {
		cfg.Location = time.UTC
	}
	if cfg.RefreshTimeout == 0 {
		cfg.RefreshTimeout = DefaultRefreshTimeout
	}
	if cfg.RetryInterval == 0 {
		cfg.RetryInterval = min(cfg.CacheTTL, maxRetryInterval)
	}
	if logger == nil {
		logger = log.NewNopLogger()
	}
	v := &Visitors{client: client, cfg: cfg, logger: logger, now: cfg.Now}
	if v.now == nil {
		v.now = time.Now
	}

	windows := map[string]Window{}
	var uniqWindows []Window
	for _, w := range cfg.Windows {
		if w.Name == "" || w.Days < 1 || w.Days > MaxWindowDays {
			return nil, fmt.Errorf("invalid window %+v", w)
		}
		if prev, ok := windows[w.Name]; ok {
			if prev != w {
				return nil, fmt.Errorf("window %q given with %d and %d days", w.Name, prev.Days, w.Days)
			}
			continue
		}
		windows[w.Name] = w
		uniqWindows = append(uniqWindows, w)
	}
	seen := map[string]bool{}
	for _, p := range cfg.Projects {
		if p == "" {
			return nil, errors.New("empty project id")
		}
		if seen[p] {
			continue
		}
		seen[p] = true
		for _, w := range uniqWindows {
			e := &visitorsEntry{project: p, window: w}
			e.state.Store(&visitorsState{})
			v.entries = append(v.entries, e)
		}
	}
	v.ctx, v.cancel = context.WithCancel(context.Background())
	return v, nil
}

// Describe implements prometheus.Collector.
func (v *Visitors) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs {
		ch <- d
	}
}

// Collect implements prometheus.Collector. It only reads the current states:
// no I/O, no waiting on refreshes.
//
// Per project×window it always emits refresh_success, refresh_duration once
// a refresh has finished, and last_refresh_timestamp once one has succeeded
// (it is omitted, not 0, before that: a 0 would read as a 56-year-old
// snapshot on every dashboard, and refresh_success=0 already flags an
// exporter that never got data). The data series, paths and paths_dropped
// come from the last good snapshot while it is no older than MaxStaleness
// and its dates are still the window's, and vanish together when not.
func (v *Visitors) Collect(ch chan<- prometheus.Metric) {
	now := v.now()
	for _, e := range v.entries {
		st := e.state.Load()
		p, w := e.project, e.window.Name
		v.gauge(ch, refreshSuccessDesc, boolFloat(st.ok), p, w)
		if st.attempted {
			v.gauge(ch, refreshDurationDesc, st.duration, p, w)
		}
		s := st.good
		if s == nil {
			continue
		}
		v.gauge(ch, lastRefreshDesc, s.timestamp, p, w)
		if v.cfg.MaxStaleness > 0 && now.Sub(s.at) > v.cfg.MaxStaleness {
			continue
		}
		// Past midnight in the window's time zone, a snapshot of the old
		// dates answers another question ("1d" would show yesterday's full
		// day as today) until a refresh succeeds: serve nothing rather than
		// a wrong answer. One date computation per project×window.
		if from, to := e.window.Range(now, v.cfg.Location); from != s.dateFrom || to != s.dateTo {
			continue
		}
		v.gauge(ch, pathsDesc, float64(len(s.pages)), p, w)
		v.gauge(ch, pathsDroppedDesc, float64(s.dropped), p, w)
		v.gauge(ch, siteVisitorsDesc, s.site.human, p, w, trafficHuman)
		v.gauge(ch, siteVisitorsDesc, s.site.ai, p, w, trafficAI)
		v.gauge(ch, siteVisitorsDedupDesc, s.site.total, p, w)
		for i := range s.pages {
			pg := &s.pages[i]
			v.gauge(ch, pageVisitorsDesc, pg.human, p, w, pg.path, trafficHuman)
			v.gauge(ch, pageVisitorsDesc, pg.ai, p, w, pg.path, trafficAI)
			v.gauge(ch, pageVisitorsDedupDesc, pg.total, p, w, pg.path)
		}
	}
}

// gauge emits one const gauge. Label values are valid UTF-8 by construction
// (buildSnapshot sanitises paths), so the error cannot happen; if it ever
// did, the series is skipped rather than panicking inside Gather or turning
// the whole scrape into an error.
func (v *Visitors) gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, val float64, labelValues ...string) {
	m, err := prometheus.NewConstMetric(d, prometheus.GaugeValue, val, labelValues...)
	if err != nil {
		level.Error(v.logger).Log("msg", "skipping invalid visitors series", "err", err)
		return
	}
	ch <- m
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Refresh starts a refresh of every project×window that is due and waits for
// them until ctx is done. Refreshes are shared: a project×window already
// being refreshed is waited on, not fetched again. Past ctx, refreshes carry
// on in the background (bounded by RefreshTimeout, owned by v until Close)
// and the caller serves the cache.
//
// A project×window is due when it has no snapshot, when its snapshot is at
// least CacheTTL old, or when the calendar day moved on so its date range
// changed; but never sooner than RetryInterval after a failed refresh.
func (v *Visitors) Refresh(ctx context.Context) {
	now := v.now()
	var waits []chan struct{}
	for _, e := range v.entries {
		if ch := v.start(e, now); ch != nil {
			waits = append(waits, ch)
		}
	}
	for _, ch := range waits {
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

// start returns the channel of e's in-flight refresh, starting one if e is
// due, or nil if nothing is to be waited for.
func (v *Visitors) start(e *visitorsEntry, now time.Time) chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.inflight != nil {
		return e.inflight
	}
	if !v.due(e, now) {
		return nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return nil
	}
	done := make(chan struct{})
	e.inflight = done
	v.wg.Add(1)
	go v.refresh(e, done)
	return done
}

func (v *Visitors) due(e *visitorsEntry, now time.Time) bool {
	st := e.state.Load()
	if !st.attempted {
		return true
	}
	if !st.ok && now.Sub(st.attemptEnd) < v.cfg.RetryInterval {
		return false
	}
	s := st.good
	if s == nil || now.Sub(s.at) >= v.cfg.CacheTTL {
		return true
	}
	from, to := e.window.Range(now, v.cfg.Location)
	return from != s.dateFrom || to != s.dateTo
}

// refresh fetches every page of e, then swaps in its new state.
func (v *Visitors) refresh(e *visitorsEntry, done chan struct{}) {
	defer v.wg.Done()
	ctx, cancel := context.WithTimeout(v.ctx, v.cfg.RefreshTimeout)
	defer cancel()

	start := v.now()
	from, to := e.window.Range(start, v.cfg.Location)
	res, err := v.client.AllVisitors(ctx, e.project, apiclient.VisitorsQuery{DateFrom: from, DateTo: to}, v.cfg.PageSize, v.cfg.MaxPages)
	end := v.now()
	old := e.state.Load()
	next := &visitorsState{
		good:       old.good,
		attempted:  true,
		ok:         err == nil,
		attemptEnd: end,
		duration:   max(end.Sub(start), 0).Seconds(),
	}
	if err != nil {
		lvl := level.Warn(v.logger)
		if v.ctx.Err() != nil {
			lvl = level.Debug(v.logger) // shutting down: not worth a warning
		}
		serving := "no data yet"
		if old.good != nil {
			serving = "last good data from " + old.good.at.UTC().Format(time.RFC3339)
		}
		lvl.Log("msg", "visitors refresh failed", "project", e.project, "window", e.window.Name,
			"date_from", from, "date_to", to, "duration", end.Sub(start), "serving", serving, "err", err)
	} else {
		next.good = v.buildSnapshot(res, from, to, end)
		level.Debug(v.logger).Log("msg", "visitors refreshed", "project", e.project, "window", e.window.Name,
			"date_from", from, "date_to", to, "requests", res.Requests, "paths", len(next.good.pages),
			"paths_dropped", next.good.dropped, "duplicate_rows", res.DuplicatePaths, "duration", end.Sub(start))
	}
	e.state.Store(next)

	e.mu.Lock()
	e.inflight = nil
	e.mu.Unlock()
	close(done)
}

// buildSnapshot reduces an API result to what Collect emits: paths made
// valid label values and merged (first row wins, as in apiclient), filtered,
// ranked and capped.
func (v *Visitors) buildSnapshot(res *apiclient.Visitors, from, to string, at time.Time) *visitorsSnapshot {
	s := &visitorsSnapshot{
		at:        at,
		timestamp: float64(at.UnixNano()) / 1e9,
		dateFrom:  from,
		dateTo:    to,
		site:      countsOf(res.Totals),
	}
	seen := make(map[string]struct{}, len(res.Pages))
	pages := make([]pageVisitorCounts, 0, len(res.Pages))
	for _, p := range res.Pages {
		path := strings.ToValidUTF8(p.Path, "\uFFFD")
		if _, dup := seen[path]; dup {
			continue
		}
		seen[path] = struct{}{}
		if (v.cfg.PathInclude != nil && !v.cfg.PathInclude.MatchString(path)) ||
			(v.cfg.PathExclude != nil && v.cfg.PathExclude.MatchString(path)) {
			s.dropped++
			continue
		}
		pages = append(pages, pageVisitorCounts{path: path, visitorCounts: countsOf(p.VisitorCounts)})
	}
	slices.SortFunc(pages, func(a, b pageVisitorCounts) int {
		if c := cmp.Compare(b.total, a.total); c != 0 {
			return c
		}
		return strings.Compare(a.path, b.path)
	})
	if v.cfg.MaxPaths > 0 && len(pages) > v.cfg.MaxPaths {
		s.dropped += len(pages) - v.cfg.MaxPaths
		// A copy, so that the dropped tail's memory is released.
		pages = slices.Clone(pages[:v.cfg.MaxPaths])
	}
	s.pages = pages
	return s
}

func countsOf(c apiclient.VisitorCounts) visitorCounts {
	return visitorCounts{human: float64(c.Human), ai: float64(c.AI), total: float64(c.Total)}
}

// Close cancels refreshes in flight and waits for their goroutines. After
// Close, Refresh starts nothing and Collect keeps serving the cache.
func (v *Visitors) Close() {
	v.mu.Lock()
	v.closed = true
	v.mu.Unlock()
	v.cancel()
	v.wg.Wait()
}

// Refresher is what RefreshBeforeScrape needs; *Visitors implements it.
type Refresher interface {
	Refresh(ctx context.Context)
}

// ScrapeTimeoutHeader is the header in which Prometheus sends its scrape
// timeout, in seconds.
const ScrapeTimeoutHeader = "X-Prometheus-Scrape-Timeout-Seconds"

// RefreshBeforeScrape wraps a /metrics handler: before serving it runs
// r.Refresh for at most the scrape's budget, so that a scrape is answered
// before Prometheus gives up on it whatever the API does.
//
// The budget is the X-Prometheus-Scrape-Timeout-Seconds header less a safety
// margin for gathering, encoding and the network (10% of it, at least 250ms,
// at most half of it), else defaultTimeout less the same margin. A defaultTimeout <= 0 starts due
// refreshes without waiting for them. The wait also ends when the client
// goes away.
func RefreshBeforeScrape(next http.Handler, r Refresher, defaultTimeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ctx, cancel := context.WithTimeout(req.Context(), refreshBudget(req.Header.Get(ScrapeTimeoutHeader), defaultTimeout))
		r.Refresh(ctx)
		cancel()
		next.ServeHTTP(w, req)
	})
}

// refreshBudget derives the refresh wait from the scrape timeout header.
func refreshBudget(header string, defaultTimeout time.Duration) time.Duration {
	t := defaultTimeout
	// The upper bound keeps the conversion below from overflowing.
	if secs, err := strconv.ParseFloat(strings.TrimSpace(header), 64); err == nil && secs > 0 && secs <= 24*3600 {
		t = time.Duration(secs * float64(time.Second))
	}
	if t <= 0 {
		return 0
	}
	// The default is a scrape timeout too, so it gets the same margin.
	margin := min(max(t/10, 250*time.Millisecond), t/2)
	return t - margin
}
