package collector

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/refresh"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/visitors"
)

// testKey is the API key of every harness; no log line may contain it.
const testKey = "mint_test_secret_0123456789"

// fixedNow is the default time of the fake clock: 15:00 UTC, so that the
// fake's counts for today are well above zero.
var fixedNow = time.Date(2026, 3, 10, 15, 0, 0, 0, time.UTC)

// bigBudget is the harness's default analytics budget: large enough never
// to hold a walk back, so that only the budget tests see it at work.
const bigBudget = 100000

type (
	// fakeClock is shared by the scheduler, the budget and the fake API.
	fakeClock  = testutil.Clock
	syncBuffer = testutil.SyncBuffer
)

// harness is a refresh scheduler walking the fake API over real HTTP, with
// its Visitors collector served through promhttp over real HTTP too.
type harness struct {
	t       testing.TB
	clock   *fakeClock
	fake    *fakeapi.Server
	api     *httptest.Server
	budget  *budget.Budget
	client  *apiclient.Client
	reg     *prometheus.Registry
	sched   *refresh.Scheduler
	v       *Analytics
	metrics *httptest.Server
	logs    *syncBuffer
}

type harnessOptions struct {
	fake fakeapi.Options
	// cfg: zero fields get test defaults (project "docs", window 1d, page
	// size 250, max pages 10, shortest interval 5m, the harness clock).
	cfg planConfig
	// finalDay keeps cfg.FinalDayDelay as given; otherwise the harness
	// disables the final-day walk (FinalDayDelay -1).
	finalDay bool
	// budget configures the analytics budget; a zero Limit is bigBudget.
	// Its clock is always the harness's.
	budget        budget.Config
	now           time.Time
	clientTimeout time.Duration
	// plainRegistry uses prometheus.NewRegistry instead of the pedantic one.
	plainRegistry bool
}

func newHarness(t testing.TB, o harnessOptions) *harness {
	t.Helper()
	if o.now.IsZero() {
		o.now = fixedNow
	}
	h := &harness{t: t, clock: testutil.NewClock(o.now), logs: &syncBuffer{}}
	o.fake.APIKey = testKey
	if o.fake.Now == nil {
		o.fake.Now = h.clock.Now
	}
	h.fake = fakeapi.New(o.fake)
	h.api = httptest.NewServer(h.fake)
	t.Cleanup(h.api.Close)

	if o.plainRegistry {
		h.reg = prometheus.NewRegistry()
	} else {
		h.reg = prometheus.NewPedanticRegistry()
	}
	if o.budget.Limit == 0 {
		o.budget.Limit = bigBudget
	}
	o.budget.Now = h.clock.Now
	var err error
	h.budget, err = budget.New(o.budget)
	if err != nil {
		t.Fatal(err)
	}
	h.reg.MustRegister(h.budget)
	if o.clientTimeout == 0 {
		o.clientTimeout = 10 * time.Second
	}
	h.client, err = apiclient.New(apiclient.Config{
		BaseURL:         h.api.URL,
		APIKey:          testKey,
		Timeout:         o.clientTimeout,
		MaxRetries:      0, // each fault costs exactly one request
		BackoffBase:     time.Millisecond,
		Now:             h.clock.Now,
		Sleep:           h.clock.Sleep,
		Metrics:         apiclient.NewMetrics(h.reg),
		AnalyticsBudget: h.budget,
	})
	if err != nil {
		t.Fatal(err)
	}

	cfg := o.cfg
	if cfg.Projects == nil {
		cfg.Projects = []string{"docs"}
	}
	if cfg.Windows == nil {
		cfg.Windows = []visitors.Window{{Name: "1d", Days: 1}}
	}
	if cfg.PageSize == 0 {
		cfg.PageSize = apiclient.MaxPageSize
	}
	if cfg.MaxPages == 0 {
		cfg.MaxPages = 10
	}
	if cfg.MinInterval == 0 {
		cfg.MinInterval = 5 * time.Minute
	}
	if !o.finalDay {
		cfg.FinalDayDelay = -1
	}
	if cfg.Now == nil {
		cfg.Now = h.clock.Now
	}
	logger := log.NewLogfmtLogger(h.logs)
	h.sched, err = refresh.New(h.client, h.budget, cfg.build(), logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.sched.Close) // runs before h.api.Close, which waits for open requests
	h.v = NewAnalytics(h.sched, logger)
	h.reg.MustRegister(h.v)

	h.metrics = httptest.NewServer(promhttp.HandlerFor(h.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	t.Cleanup(h.metrics.Close)
	return h
}

// refreshDue starts every walk that is due and waits for the walks in
// flight, with a generous deadline.
func (h *harness) refreshDue() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h.sched.RefreshDue(ctx)
}

// scrape runs the walks that are due, then GETs /metrics like Prometheus
// would and parses the answer. It fails the test on any status but 200,
// and checks that the pedantic registry gathers cleanly.
func (h *harness) scrape() families {
	h.t.Helper()
	h.refreshDue()
	fams, _ := h.scrapeOnly()
	return fams
}

// scrapeOnly GETs /metrics without running any walk, as a real scrape does:
// scrapes never refresh. It returns the families and how long it took.
func (h *harness) scrapeOnly() (families, time.Duration) {
	h.t.Helper()
	status, fams, elapsed := h.scrapeStatus()
	if status != http.StatusOK {
		h.t.Fatalf("GET /metrics: HTTP %d", status)
	}
	if _, err := h.reg.Gather(); err != nil {
		h.t.Fatalf("gather: %v", err)
	}
	return fams, elapsed
}

// scrapeStatus is scrapeOnly without assertions; safe from any goroutine.
func (h *harness) scrapeStatus() (int, families, time.Duration) {
	start := time.Now()
	resp, err := http.Get(h.metrics.URL + "/metrics")
	if err != nil {
		return 0, nil, time.Since(start)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	elapsed := time.Since(start)
	if err != nil {
		return -1, nil, elapsed
	}
	return resp.StatusCode, families(mfs), elapsed
}

// scrapeBody GETs /metrics and returns the status and the raw body, without
// parsing it: cheap enough for loops of scrapes. Safe from any goroutine.
func (h *harness) scrapeBody() (int, string) {
	resp, err := http.Get(h.metrics.URL + "/metrics")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return -1, err.Error()
	}
	return resp.StatusCode, string(body)
}

// gather collects from the registry directly (no walk).
func (h *harness) gather() families {
	h.t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		h.t.Fatalf("gather: %v", err)
	}
	out := families{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

func (h *harness) requests() int64 { return h.fake.Requests(fakeapi.Visitors) }

// families are metric families by name.
type families map[string]*dto.MetricFamily

// get returns the value of the series of name whose labels are exactly the
// given name/value pairs.
func (f families) get(name string, labels ...string) (float64, bool) {
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	// The status series carry the source and scope of the walk: the
	// visitors' page walk unless the test names another.
	if strings.HasPrefix(name, "mintlify_analytics_") {
		if _, ok := want["source"]; !ok {
			want["source"] = sources.NameVisitors
		}
		if _, ok := want["scope"]; !ok && !strings.HasPrefix(name, "mintlify_analytics_paths") {
			want["scope"] = refresh.ScopePages
		}
	}
	for _, m := range f[name].GetMetric() {
		if len(m.GetLabel()) != len(want) {
			continue
		}
		match := true
		for _, lp := range m.GetLabel() {
			if v, ok := want[lp.GetName()]; !ok || v != lp.GetValue() {
				match = false
				break
			}
		}
		if match {
			return metricValue(m), true
		}
	}
	return 0, false
}

// must is get that fails the test when the series is missing.
func (f families) must(t testing.TB, name string, labels ...string) float64 {
	t.Helper()
	v, ok := f.get(name, labels...)
	if !ok {
		t.Fatalf("no series %s%v", name, labels)
	}
	return v
}

func (f families) count(name string) int { return len(f[name].GetMetric()) }

// series flattens the families whose names start with one of prefixes to
// "name{l=v,...}" -> value.
func (f families) series(prefixes ...string) map[string]float64 {
	out := map[string]float64{}
	for name, mf := range f {
		if !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(name, p) }) {
			continue
		}
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, lp := range m.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
			}
			sort.Strings(ls)
			out[name+"{"+strings.Join(ls, ",")+"}"] = metricValue(m)
		}
	}
	return out
}

// data is every visitor data series.
func (f families) data() map[string]float64 {
	return f.series("mintlify_site_", "mintlify_page_")
}

// pathSet is the set of path label values of a page metric.
func (f families) pathSet(name string) map[string]bool {
	out := map[string]bool{}
	for _, m := range f[name].GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == "path" {
				out[lp.GetValue()] = true
			}
		}
	}
	return out
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetUntyped() != nil:
		return m.GetUntyped().GetValue()
	}
	return 0
}

// eventually polls cond every 20ms until it holds or the bound passes.
func eventually(t testing.TB, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", bound, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func sortedKeys(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }
