package collector

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// testKey is the API key of the fake API.
const testKey = "mint_test_secret_0123456789"

// fixedNow is the default time of the fake clock: 15:00 UTC, so that the
// fake's counts for today are well above zero.
var fixedNow = time.Date(2026, 3, 10, 15, 0, 0, 0, time.UTC)

type (
	fakeClock  = testutil.Clock
	syncBuffer = testutil.SyncBuffer
)

// harness serves the Analytics collector of a list of views through
// promhttp over real HTTP. The views' snapshots come from walks of the fake
// API over real HTTP by each source itself (walk): what the collector
// exports of real snapshots, without the scheduler, whose decisions (when
// to walk, what to serve) internal/refresh tests on its views.
type harness struct {
	t       testing.TB
	clock   *fakeClock
	fake    *fakeapi.Server
	client  *apiclient.Client
	reg     *prometheus.Registry
	views   *viewList
	v       *Analytics
	metrics *httptest.Server
	logs    *syncBuffer
}

type harnessOptions struct {
	fake fakeapi.Options
	now  time.Time
	// plainRegistry uses prometheus.NewRegistry instead of the pedantic one.
	plainRegistry bool
}

func newHarness(t testing.TB, o harnessOptions) *harness {
	t.Helper()
	if o.now.IsZero() {
		o.now = fixedNow
	}
	h := &harness{t: t, clock: testutil.NewClock(o.now), logs: &syncBuffer{}, views: &viewList{}}
	o.fake.APIKey = testKey
	if o.fake.Now == nil {
		o.fake.Now = h.clock.Now
	}
	h.fake = fakeapi.New(o.fake)
	api := httptest.NewServer(h.fake)
	t.Cleanup(api.Close)

	if o.plainRegistry {
		h.reg = prometheus.NewRegistry()
	} else {
		h.reg = prometheus.NewPedanticRegistry()
	}
	// The walks pay a budget, as every analytics request does; large
	// enough never to hold one back.
	b, err := budget.New(budget.Config{Limit: 100000, Now: h.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	h.client, err = apiclient.New(apiclient.Config{BaseURL: api.URL, APIKey: testKey, Timeout: 10 * time.Second, MaxRetries: 0,
		Now: h.clock.Now, Sleep: h.clock.Sleep, AnalyticsBudget: b})
	if err != nil {
		t.Fatal(err)
	}
	h.v = NewAnalytics(h.views, log.NewLogfmtLogger(h.logs))
	h.reg.MustRegister(h.v)
	h.metrics = httptest.NewServer(promhttp.HandlerFor(h.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	t.Cleanup(h.metrics.Close)
	return h
}

// viewList is a ViewSource whose views a test sets.
type viewList struct {
	mu    sync.Mutex
	views []sources.View
}

func (l *viewList) Views() []sources.View {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.views)
}

func (l *viewList) set(vs ...sources.View) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.views = vs
}

// walkSpec is one walk of the fake API; zero fields: project docs, source
// visitors, window 1d, every path, UTC.
type walkSpec struct {
	project, source string
	window          analytics.Window
	paths           analytics.PathPolicy
	loc             *time.Location
}

// walk walks w at the harness's clock with a source of its own and returns
// the view of a good walk of it, planned every 5 minutes.
func (h *harness) walk(w walkSpec) sources.View {
	h.t.Helper()
	w.project = cmp.Or(w.project, "docs")
	w.source = cmp.Or(w.source, sources.NameVisitors)
	if w.window.Days == 0 {
		w.window = day1
	}
	def, ok := sources.ByName(w.source)
	if !ok {
		h.t.Fatalf("no source %q", w.source)
	}
	src, err := def.New(sources.Config{Client: h.client, Now: h.clock.Now, Location: w.loc, Logger: log.NewLogfmtLogger(h.logs),
		Paths: w.paths, MaxPages: 100, StateDir: h.t.TempDir()})
	if err != nil {
		h.t.Fatal(err)
	}
	from, to := w.window.Range(h.clock.Now(), w.loc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	snap, err := src.Walk(ctx, sources.Query{Project: w.project, DateFrom: from, DateTo: to})
	if err != nil {
		h.t.Fatalf("walk of %s/%s/%s: %v", w.project, w.source, w.window.Name, err)
	}
	return sources.View{Project: w.project, Source: w.source, Scope: sources.ScopePages, Window: w.window.Name,
		Attempted: true, OK: true, Interval: 5 * time.Minute, LastSuccess: snap.Meta().At, LastAttempt: snap.Meta().At, Data: snap}
}

// scrape GETs /metrics like Prometheus would and parses the answer. It
// fails the test on any status but 200, and checks that the registry
// gathers cleanly.
func (h *harness) scrape() families {
	h.t.Helper()
	resp, err := http.Get(h.metrics.URL + "/metrics")
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		h.t.Fatalf("GET /metrics: HTTP %d", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		h.t.Fatalf("GET /metrics: %v", err)
	}
	if _, err := h.reg.Gather(); err != nil {
		h.t.Fatalf("gather: %v", err)
	}
	return families(mfs)
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
			want["scope"] = sources.ScopePages
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

func sortedKeys(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }
