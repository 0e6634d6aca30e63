package collector

import (
	"bytes"
	"cmp"
	"context"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const (
	siteVisitors      = "mintlify_site_unique_visitors"
	siteVisitorsDedup = "mintlify_site_unique_visitors_deduplicated"
	pageVisitors      = "mintlify_page_unique_visitors"
	pageVisitorsDedup = "mintlify_page_unique_visitors_deduplicated"
	refreshSuccess    = "mintlify_analytics_refresh_success"
	lastRefresh       = "mintlify_analytics_last_refresh_timestamp_seconds"
	refreshDuration   = "mintlify_analytics_refresh_duration_seconds"
	refreshInterval   = "mintlify_analytics_refresh_interval_seconds"
	pathsExported     = "mintlify_analytics_paths"
	pathsDropped      = "mintlify_analytics_paths_dropped"
)

var ourMetrics = []string{siteVisitors, siteVisitorsDedup, pageVisitors, pageVisitorsDedup,
	refreshSuccess, lastRefresh, refreshDuration, refreshInterval, pathsExported, pathsDropped}

var docs1d = []string{"project", "docs", "window", "1d"}

var (
	day1  = analytics.Window{Name: "1d", Days: 1}
	days7 = analytics.Window{Name: "7d", Days: 7}
)

func labelsWith(base []string, more ...string) []string { return append(slices.Clone(base), more...) }

// TestVisitorsSiteTotalNotSummed checks that the deduplicated totals are the
// API's, which the fake makes differ from human + ai.
func TestVisitorsSiteTotalNotSummed(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 40}})
	from, to := day1.Range(h.clock.Now(), time.UTC)
	page, err := h.client.VisitorsPage(context.Background(), "docs", apiclient.VisitorsQuery{DateFrom: from, DateTo: to, Limit: 250})
	if err != nil {
		t.Fatal(err)
	}
	api := page.Totals
	if api.Total == api.Human+api.AI {
		t.Fatalf("fake's site total %d equals human+ai: the test cannot tell a sum from the API's total", api.Total)
	}
	h.views.set(h.walk(walkSpec{}))
	fams := h.scrape()
	human := fams.must(t, siteVisitors, labelsWith(docs1d, "traffic", "human")...)
	ai := fams.must(t, siteVisitors, labelsWith(docs1d, "traffic", "ai")...)
	total := fams.must(t, siteVisitorsDedup, docs1d...)
	if human != float64(api.Human) || ai != float64(api.AI) {
		t.Errorf("site human/ai = %v/%v, API says %d/%d", human, ai, api.Human, api.AI)
	}
	if total != float64(api.Total) {
		t.Errorf("site deduplicated = %v, want the API's total %d", total, api.Total)
	}
	if total == human+ai {
		t.Errorf("site deduplicated = human + ai = %v: it was summed", total)
	}
	for _, row := range page.Rows[:5] {
		got := fams.must(t, pageVisitorsDedup, labelsWith(docs1d, "path", row.Path)...)
		if got != float64(row.Total) || row.Total == row.Human+row.AI {
			t.Errorf("page %s deduplicated = %v, API total %d (human %d ai %d)", row.Path, got, row.Total, row.Human, row.AI)
		}
	}
}

// TestVisitorsDuplicatePath: a path repeated across pages yields one series,
// with the first copy's counts.
func TestVisitorsDuplicatePath(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 600}})
	from, to := day1.Range(h.clock.Now(), time.UTC)
	first, err := h.client.VisitorsPage(context.Background(), "docs", apiclient.VisitorsQuery{DateFrom: from, DateTo: to, Limit: 250})
	if err != nil {
		t.Fatal(err)
	}
	dup := first.Rows[249] // the fake repeats it at the top of page 2
	h.fake.SetFault(fakeapi.Visitors, fakeapi.Fault{DuplicatePath: true})
	h.views.set(h.walk(walkSpec{}))
	fams := h.scrape()
	if got := h.fake.Requests(fakeapi.Visitors); got < 3 {
		t.Fatalf("%d visitors requests: the fake sent no second page with a duplicate", got)
	}
	if n := fams.count(pageVisitorsDedup); n != 600 {
		t.Errorf("%d %s series, want 600", n, pageVisitorsDedup)
	}
	if n := fams.count(pageVisitors); n != 1200 {
		t.Errorf("%d %s series, want 1200", n, pageVisitors)
	}
	if v := fams.must(t, pageVisitorsDedup, labelsWith(docs1d, "path", dup.Path)...); v != float64(dup.Total) {
		t.Errorf("%s = %v, want the first copy's %d", dup.Path, v, dup.Total)
	}
}

// TestVisitorsPathFilters: include/exclude regexes and the top-N cap decide
// which paths are exported, and paths_dropped counts the rest.
func TestVisitorsPathFilters(t *testing.T) {
	tests := []struct {
		name             string
		include, exclude string
		maxPaths         int
	}{
		{name: "cap only", maxPaths: 10},
		{name: "include only", include: `^/(guides|concepts)/`},
		{name: "exclude only", exclude: `^/changelog/`},
		{name: "include, exclude and cap", include: `^/(guides|concepts)/`, exclude: `-1\d+$`, maxPaths: 10},
		{name: "cap above the path count", maxPaths: 1000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			policy := analytics.PathPolicy{MaxPaths: tc.maxPaths}
			var inc, exc *regexp.Regexp
			if tc.include != "" {
				inc = regexp.MustCompile(tc.include)
				policy.Include = inc
			}
			if tc.exclude != "" {
				exc = regexp.MustCompile(tc.exclude)
				policy.Exclude = exc
			}
			h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 300}})

			// The expected set, from the API's own rows.
			from, to := day1.Range(h.clock.Now(), time.UTC)
			all, err := h.client.AllVisitors(context.Background(), "docs", apiclient.VisitorsQuery{DateFrom: from, DateTo: to}, 250, 10)
			if err != nil {
				t.Fatal(err)
			}
			var kept []apiclient.PathVisitors
			for _, p := range all.Paths {
				if (inc == nil || inc.MatchString(p.Path)) && (exc == nil || !exc.MatchString(p.Path)) {
					kept = append(kept, p)
				}
			}
			slices.SortFunc(kept, func(a, b apiclient.PathVisitors) int {
				return cmp.Or(cmp.Compare(b.Total, a.Total), strings.Compare(a.Path, b.Path))
			})
			if tc.maxPaths > 0 && len(kept) > tc.maxPaths {
				kept = kept[:tc.maxPaths]
			}
			want := map[string]bool{}
			for _, p := range kept {
				want[p.Path] = true
			}

			h.views.set(h.walk(walkSpec{paths: policy}))
			fams := h.scrape()
			for _, name := range []string{pageVisitors, pageVisitorsDedup} {
				if got := fams.pathSet(name); !maps.Equal(got, want) {
					t.Errorf("%s paths:\n got %q\nwant %q", name, sortedKeys(got), sortedKeys(want))
				}
			}
			if v := fams.must(t, pathsExported, docs1d...); v != float64(len(want)) {
				t.Errorf("paths = %v, want %d", v, len(want))
			}
			if v := fams.must(t, pathsDropped, docs1d...); v != float64(300-len(want)) {
				t.Errorf("paths_dropped = %v, want %d", v, 300-len(want))
			}
			// The site totals are the API's whatever the filters.
			if v := fams.must(t, siteVisitorsDedup, docs1d...); v != float64(all.Totals.Total) {
				t.Errorf("site total %v, want %d", v, all.Totals.Total)
			}
		})
	}
}

// TestVisitorsEmptyProject: a project without traffic is data, not an
// error: its walk succeeds and exports zeros, without page series.
func TestVisitorsEmptyProject(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 20, PathsByProject: map[string]int{"empty": 0}}})
	h.views.set(h.walk(walkSpec{}), h.walk(walkSpec{project: "empty"}))
	fams := h.scrape()
	empty := []string{"project", "empty", "window", "1d"}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{refreshSuccess, empty, 1},
		{siteVisitors, labelsWith(empty, "traffic", "human"), 0},
		{siteVisitors, labelsWith(empty, "traffic", "ai"), 0},
		{siteVisitorsDedup, empty, 0},
		{pathsExported, empty, 0},
		{pathsDropped, empty, 0},
		{pathsExported, docs1d, 20},
	} {
		if v := fams.must(t, c.name, c.labels...); v != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, v, c.want)
		}
	}
	for _, m := range fams[pageVisitorsDedup].GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == "project" && lp.GetValue() == "empty" {
				t.Errorf("page series for the empty project: %v", m)
			}
		}
	}
	if strings.Contains(h.logs.String(), "level=warn") {
		t.Errorf("an empty project logged a warning:\n%s", h.logs.String())
	}
}

// staticViews is a ViewSource with fixed views.
type staticViews []sources.View

func (s staticViews) Views() []sources.View { return s }

// TestVisitorsInvalidLabelSkipped: a series whose label value is not valid
// UTF-8 is skipped and logged, and the rest of the scrape is served.
func TestVisitorsInvalidLabelSkipped(t *testing.T) {
	var logs syncBuffer
	snap := &analytics.Snapshot{At: fixedNow, DateFrom: "2026-03-10", DateTo: "2026-03-11",
		Paths: []analytics.PathCounts{{Path: "/ok", Counts: analytics.Counts{Human: 1, AI: 1, Total: 1}}}}
	v := NewAnalytics(staticViews{
		{Project: "docs", Source: "visitors", Scope: "pages", Window: "1d", Attempted: true, OK: true, Interval: time.Minute, LastSuccess: fixedNow, Data: &sources.TrafficSnapshot{Snapshot: snap}},
		{Project: "bad\xff", Source: "visitors", Scope: "pages", Window: "1d", Attempted: true, OK: true, Interval: time.Minute, LastSuccess: fixedNow, Data: &sources.TrafficSnapshot{Snapshot: snap}},
	}, log.NewLogfmtLogger(&logs))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(v)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	fams := families{}
	for _, mf := range mfs {
		fams[mf.GetName()] = mf
	}
	fams.must(t, pageVisitorsDedup, labelsWith(docs1d, "path", "/ok")...)
	if n := fams.count(refreshSuccess); n != 1 {
		t.Errorf("%d refresh_success series, want 1 (the invalid project skipped)", n)
	}
	if !strings.Contains(logs.String(), "skipping invalid analytics series") {
		t.Errorf("no error logged:\n%s", logs.String())
	}
}

// TestVisitorsGolden compares Collect for fixed snapshots (small fake data,
// fixed clock) with testdata/visitors.golden.prom, and lints it.
func TestVisitorsGolden(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 4}})
	top3 := analytics.PathPolicy{MaxPaths: 3}
	h.views.set(h.walk(walkSpec{paths: top3}), h.walk(walkSpec{window: days7, paths: top3}))
	golden := filepath.Join("testdata", "visitors.golden.prom")
	if *update {
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(h.v)
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
		for _, mf := range mfs {
			if err := enc.Encode(mf); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(golden)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := testutil.CollectAndCompare(h.v, f, ourMetrics...); err != nil {
		t.Error(err)
	}
	problems, err := testutil.CollectAndLint(h.v)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// TestStatusSeries: what /metrics exposes of a view in each state the plan
// gives it (internal/refresh tests which state when): before any walk,
// after a good walk, after a failed walk that keeps the last good data,
// once that data is stale or of past dates, and for the final day.
func TestStatusSeries(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 1234}})
	good := h.walk(walkSpec{})
	good.Duration = 1500 * time.Millisecond
	at := float64(good.LastSuccess.Unix())

	// absent are the series of docs1d that must not be exported.
	check := func(what string, fams families, want map[string]float64, absent ...string) {
		t.Helper()
		for name, v := range want {
			if got, ok := fams.get(name, docs1d...); !ok || got != v {
				t.Errorf("%s: %s = %v (exported: %v), want %v", what, name, got, ok, v)
			}
		}
		for _, name := range absent {
			if _, ok := fams.get(name, docs1d...); ok {
				t.Errorf("%s: %s exported", what, name)
			}
		}
	}

	h.views.set(sources.View{Project: "docs", Source: sources.NameVisitors, Scope: sources.ScopePages, Window: "1d", Interval: 5 * time.Minute})
	fams := h.scrape()
	check("before any walk", fams, map[string]float64{refreshSuccess: 0, refreshInterval: 300, "mintlify_analytics_refresh_failures_total": 0},
		lastRefresh, refreshDuration, pathsExported, pathsDropped)
	if n := len(fams.data()); n != 0 {
		t.Errorf("before any walk: %d data series", n)
	}

	h.views.set(good)
	fams = h.scrape()
	check("a good walk", fams, map[string]float64{refreshSuccess: 1, lastRefresh: at, refreshDuration: 1.5, refreshInterval: 300,
		pathsExported: 1234, pathsDropped: 0})
	if n := fams.count(pageVisitorsDedup); n != 1234 {
		t.Errorf("%d %s series, want 1234", n, pageVisitorsDedup)
	}
	if n := fams.count(pageVisitors); n != 2*1234 {
		t.Errorf("%d %s series, want 2468", n, pageVisitors)
	}
	data := fams.data()
	if len(data) != 3+3*1234 {
		t.Errorf("%d data series, want %d", len(data), 3+3*1234)
	}

	failed := good
	failed.OK, failed.Failures = false, 1
	h.views.set(failed)
	fams = h.scrape()
	check("a failed walk", fams, map[string]float64{refreshSuccess: 0, lastRefresh: at, "mintlify_analytics_refresh_failures_total": 1, pathsExported: 1234})
	if !maps.Equal(fams.data(), data) {
		t.Error("a failed walk: the last good data is not exported")
	}

	stale := failed
	stale.Data = nil
	h.views.set(stale)
	fams = h.scrape()
	// The status series stay: the age of the last success shows why the
	// data is missing.
	check("stale data", fams, map[string]float64{refreshSuccess: 0, lastRefresh: at, refreshDuration: 1.5, refreshInterval: 300},
		pathsExported, pathsDropped)
	if n := len(fams.data()); n != 0 {
		t.Errorf("stale data: %d data series exported", n)
	}

	final := good
	final.Window, final.Interval = "yesterday", 0
	h.views.set(final)
	fams = h.scrape()
	yesterday := []string{"project", "docs", "window", "yesterday"}
	if _, ok := fams.get(refreshInterval, yesterday...); ok {
		t.Error("refresh_interval exported for the final day, which is walked once a day")
	}
	fams.must(t, siteVisitorsDedup, yesterday...)
	fams.must(t, refreshSuccess, yesterday...)
}
