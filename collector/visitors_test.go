package collector

import (
	"bytes"
	"cmp"
	"context"
	"flag"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/refresh"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
	"github.com/mintlify-exporter/mintlify_exporter/internal/visitors"
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
	apiRequests       = "mintlify_api_requests_total"
)

var ourMetrics = []string{siteVisitors, siteVisitorsDedup, pageVisitors, pageVisitorsDedup,
	refreshSuccess, lastRefresh, refreshDuration, refreshInterval, pathsExported, pathsDropped}

var docs1d = []string{"project", "docs", "window", "1d"}

var (
	day1  = visitors.Window{Name: "1d", Days: 1}
	days7 = visitors.Window{Name: "7d", Days: 7}
)

func labelsWith(base []string, more ...string) []string { return append(slices.Clone(base), more...) }

func mustLoad(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("time zone %s: %v", name, err)
	}
	return loc
}

// TestSchedulerValidation: refresh.New refuses configurations the collector
// could not export sensibly, and merges duplicate projects and windows.
func TestSchedulerValidation(t *testing.T) {
	client, err := apiclient.New(apiclient.Config{BaseURL: "http://127.0.0.1:1", APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	b, err := budget.New(budget.Config{Limit: 60})
	if err != nil {
		t.Fatal(err)
	}
	ok := planConfig{Projects: []string{"a"}, Windows: []visitors.Window{day1}, Config: refresh.Config{PageSize: 250, MinInterval: time.Minute, FinalDayDelay: -1}}
	bad := map[string]func(c *planConfig){
		"no project":                  func(c *planConfig) { c.Projects = nil },
		"empty project":               func(c *planConfig) { c.Projects = []string{""} },
		"no window":                   func(c *planConfig) { c.Windows = nil },
		"zero days":                   func(c *planConfig) { c.Windows = []visitors.Window{{Name: "0d"}} },
		"366 days":                    func(c *planConfig) { c.Windows = []visitors.Window{{Name: "366d", Days: 366}} },
		"unnamed window":              func(c *planConfig) { c.Windows = []visitors.Window{{Days: 1}} },
		"conflicting windows":         func(c *planConfig) { c.Windows = []visitors.Window{day1, {Name: "1d", Days: 2}} },
		"repeated window":             func(c *planConfig) { c.Windows = []visitors.Window{day1, day1} },
		"repeated project":            func(c *planConfig) { c.Projects = []string{"a", "a"} },
		"window interval below min":   func(c *planConfig) { c.Windows = []visitors.Window{{Name: "1d", Days: 1, Interval: time.Second}} },
		"negative window interval":    func(c *planConfig) { c.Windows = []visitors.Window{{Name: "1d", Days: 1, Interval: -time.Hour}} },
		"page size 0":                 func(c *planConfig) { c.PageSize = 0 },
		"page size 251":               func(c *planConfig) { c.PageSize = 251 },
		"zero min interval":           func(c *planConfig) { c.MinInterval = 0 },
		"negative min interval":       func(c *planConfig) { c.MinInterval = -time.Second },
		"negative max paths":          func(c *planConfig) { c.Paths.MaxPaths = -1 },
		"negative staleness":          func(c *planConfig) { c.MaxStaleness = -time.Second },
		"negative max pages":          func(c *planConfig) { c.MaxPages = -1 },
		"negative timeout":            func(c *planConfig) { c.RefreshTimeout = -1 },
		"negative retry interval":     func(c *planConfig) { c.RetryInterval = -1 },
		"negative concurrency":        func(c *planConfig) { c.Concurrency = -1 },
		"final day after its export":  func(c *planConfig) { c.FinalDayDelay = refresh.FinalDayExport },
		"final day long after export": func(c *planConfig) { c.FinalDayDelay = 2 * time.Hour },
	}
	for name, mutate := range bad {
		cfg := ok
		mutate(&cfg)
		if s, err := refresh.New(client, b, cfg.build(), nil); err == nil {
			s.Close()
			t.Errorf("%s: refresh.New accepted it", name)
		}
	}
	if _, err := refresh.New(nil, b, ok.build(), nil); err == nil {
		t.Error("nil client accepted")
	}
	if _, err := refresh.New(client, nil, ok.build(), nil); err == nil {
		t.Error("nil budget accepted")
	}

	// 2 projects × 2 windows, plus yesterday's final day per project
	// during the first hour of the day.
	for _, tc := range []struct {
		finalDay time.Duration
		now      time.Time
		views    int
	}{
		{-1, fixedNow, 4},
		{0, fixedNow, 4}, // 15:00: yesterday is no longer exported
		{0, time.Date(2026, 3, 10, 0, 30, 0, 0, time.UTC), 6},
	} {
		cfg := ok
		cfg.Projects = []string{"a", "b"}
		cfg.Windows = []visitors.Window{day1, days7}
		cfg.FinalDayDelay = tc.finalDay
		cfg.Now = func() time.Time { return tc.now }
		s, err := refresh.New(client, b, cfg.build(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, v := range s.Views() {
			got = append(got, v.Project+"/"+v.Window)
		}
		s.Close()
		if len(got) != tc.views {
			t.Errorf("final-day delay %s at %s: views %q, want %d (duplicates merged)", tc.finalDay, tc.now.Format(time.Kitchen), got, tc.views)
		}
	}
}

// TestVisitorsQueryDates checks the dates the API receives for a fixed
// clock and time zone: 23:30 in New York is already tomorrow in UTC.
func TestVisitorsQueryDates(t *testing.T) {
	ny := mustLoad(t, "America/New_York")
	now := time.Date(2026, 3, 10, 23, 30, 0, 0, ny)
	windows := []visitors.Window{day1, days7}
	for _, tc := range []struct {
		loc  *time.Location
		want []string // dateFrom..dateTo per window
	}{
		{ny, []string{"2026-03-10..2026-03-11", "2026-03-04..2026-03-11"}},
		{time.UTC, []string{"2026-03-11..2026-03-12", "2026-03-05..2026-03-12"}},
	} {
		t.Run(tc.loc.String(), func(t *testing.T) {
			h := newHarness(t, harnessOptions{now: now, fake: fakeapi.Options{Paths: 20},
				cfg: planConfig{Windows: windows, Location: tc.loc}})
			fams := h.scrape()
			var got []string
			for _, q := range h.fake.VisitorsQueries() {
				got = append(got, q.Get("dateFrom")+".."+q.Get("dateTo"))
				if q.Get("limit") != "250" {
					t.Errorf("limit = %q, want 250", q.Get("limit"))
				}
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tc.want))
			if !slices.Equal(got, want) {
				t.Errorf("queries %v, want %v", got, want)
			}
			for _, w := range []string{"1d", "7d"} {
				fams.must(t, siteVisitorsDedup, "project", "docs", "window", w)
			}
		})
	}
}

func TestVisitorsPagination(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 1234}})
	fams := h.scrape()
	if got := h.requests(); got != 5 {
		t.Fatalf("one refresh of 1,234 paths sent %d requests, want ceil(1234/250) = 5", got)
	}
	var offsets []string
	for _, q := range h.fake.VisitorsQueries() {
		offsets = append(offsets, q.Get("offset"))
		if q.Get("limit") != "250" {
			t.Errorf("limit = %q, want 250", q.Get("limit"))
		}
	}
	if want := []string{"", "250", "500", "750", "1000"}; !slices.Equal(offsets, want) {
		t.Errorf("offsets %q, want %q", offsets, want)
	}
	if n := fams.count(pageVisitorsDedup); n != 1234 {
		t.Errorf("%d %s series, want 1234", n, pageVisitorsDedup)
	}
	if n := fams.count(pageVisitors); n != 2*1234 {
		t.Errorf("%d %s series, want 2468", n, pageVisitors)
	}
	if v := fams.must(t, pathsExported, docs1d...); v != 1234 {
		t.Errorf("paths = %v, want 1234", v)
	}
	if v := fams.must(t, pathsDropped, docs1d...); v != 0 {
		t.Errorf("paths_dropped = %v, want 0", v)
	}
	if v := fams.must(t, refreshSuccess, docs1d...); v != 1 {
		t.Errorf("refresh_success = %v, want 1", v)
	}

	// The next walk, once the planned interval has passed, walks all pages
	// again.
	h.clock.Advance(5 * time.Minute)
	h.scrape()
	if got := h.requests(); got != 10 {
		t.Errorf("after a second refresh: %d requests, want 10", got)
	}
}

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

// TestVisitorsRefreshInterval: walks follow the plan, not scrapes. Scrapes
// never reach the API; RefreshDue inside the planned interval sends
// nothing; the first one after it walks once. The plan is exported.
func TestVisitorsRefreshInterval(t *testing.T) {
	// 240 paths in pages of 50: 5 requests a walk, cheap scrapes.
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 240}, cfg: planConfig{Config: refresh.Config{PageSize: 50}}})
	fams := h.scrape()
	if got := h.requests(); got != 5 {
		t.Fatalf("first walk: %d requests, want 5", got)
	}
	if v := fams.must(t, refreshInterval, docs1d...); v != 300 {
		t.Errorf("refresh_interval = %v, want the shortest interval 300 (the budget pays for it)", v)
	}
	for i := range 30 {
		if i == 15 {
			h.clock.Advance(5*time.Minute - time.Second) // still inside the interval
		}
		if i%2 == 0 {
			h.refreshDue()
		}
		if status, body := h.scrapeBody(); status != http.StatusOK || !strings.Contains(body, `mintlify_analytics_paths{project="docs",source="visitors",window="1d"} 240`) {
			t.Fatalf("scrape %d: HTTP %d without the cached paths", i, status)
		}
	}
	if got := h.requests(); got != 5 {
		t.Fatalf("30 scrapes inside the interval made %d extra requests", got-5)
	}
	h.clock.Advance(time.Second)
	// Due now, but scrapes alone never walk.
	for range 5 {
		if status, _ := h.scrapeBody(); status != http.StatusOK {
			t.Fatalf("scrape: HTTP %d", status)
		}
	}
	if got := h.requests(); got != 5 {
		t.Fatalf("scrapes sent %d requests", got-5)
	}
	h.refreshDue()
	h.refreshDue()
	if got := h.requests(); got != 10 {
		t.Fatalf("after the interval: %d requests in all, want 10 (one walk)", got)
	}
}

// TestVisitorsConcurrentRefreshes: concurrent RefreshDue calls of a cold
// scheduler share one walk, and each returns with its data.
func TestVisitorsConcurrentRefreshes(t *testing.T) {
	for _, tc := range []struct {
		paths        int
		wantRequests int64
	}{{1234, 5}, {50, 1}} {
		t.Run(strconv.Itoa(tc.paths)+" paths", func(t *testing.T) {
			h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: tc.paths}})
			// Slow pages keep the walk in flight while every caller arrives.
			h.fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Latency: 100 * time.Millisecond})
			const callers = 40
			var wg sync.WaitGroup
			start := make(chan struct{})
			paths := make([]int, callers)
			for i := range callers {
				wg.Go(func() {
					<-start
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					h.sched.RefreshDue(ctx)
					// What a scrape would export now (a real scrape of
					// each would only slow the test down).
					for _, v := range h.sched.Views() {
						if v.Project == "docs" && v.Window == "1d" && v.Data != nil {
							paths[i] = len(v.Data.(*sources.TrafficSnapshot).Paths)
						}
					}
				})
			}
			close(start)
			wg.Wait()
			for i := range callers {
				if paths[i] != tc.paths {
					t.Errorf("caller %d: RefreshDue returned with %d paths to export, want %d", i, paths[i], tc.paths)
				}
			}
			want := `mintlify_analytics_paths{project="docs",source="visitors",window="1d"} ` + strconv.Itoa(tc.paths) + "\n"
			if status, body := h.scrapeBody(); status != http.StatusOK || !strings.Contains(body, want) {
				t.Errorf("scrape: HTTP %d, want 200 with %q", status, want)
			}
			if got := h.requests(); got != tc.wantRequests {
				t.Errorf("%d concurrent refreshes sent %d requests, want %d (one walk)", callers, got, tc.wantRequests)
			}
		})
	}
}

// TestVisitorsFaults: after a good snapshot, each upstream fault leaves
// /metrics at 200 with the last good data, refresh_success 0, the timestamp
// unchanged and the request counted; once the fault clears, success is back.
func TestVisitorsFaults(t *testing.T) {
	tests := []struct {
		name          string
		fault         fakeapi.Fault
		code          string
		requests      float64
		clientTimeout time.Duration
	}{
		{name: "500", fault: fakeapi.Fault{Status: 500}, code: "500", requests: 1},
		{name: "503 with Retry-After", fault: fakeapi.Fault{Status: 503, RetryAfter: "1"}, code: "503", requests: 1},
		{name: "429 with Retry-After", fault: fakeapi.Fault{Status: 429, RetryAfter: "1"}, code: "429", requests: 1},
		{name: "latency beyond the client timeout", fault: fakeapi.Fault{Latency: 5 * time.Second}, code: "error", requests: 1, clientTimeout: 500 * time.Millisecond},
		{name: "malformed JSON", fault: fakeapi.Fault{MalformedJSON: true}, code: "200", requests: 1},
		{name: "endless hasMore", fault: fakeapi.Fault{EndlessHasMore: true}, code: "200", requests: 10}, // MaxPages 10
		{name: "negative counts", fault: fakeapi.Fault{NegativeCounts: true}, code: "200", requests: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 300}, clientTimeout: tc.clientTimeout})
			fams := h.scrape()
			good := fams.data()
			ts0 := fams.must(t, lastRefresh, docs1d...)
			if len(good) != 3+3*300 || fams.must(t, refreshSuccess, docs1d...) != 1 {
				t.Fatalf("good snapshot: %d data series, success %v", len(good), fams.must(t, refreshSuccess, docs1d...))
			}
			before := fams.must(t, apiRequests, "endpoint", "visitors", "code", tc.code)

			h.fake.SetFault(fakeapi.Visitors, tc.fault)
			h.clock.Advance(5 * time.Minute)
			fams = h.scrape()
			if got := fams.data(); !maps.Equal(got, good) {
				t.Errorf("during the fault: %d data series differ from the last good %d", len(got), len(good))
			}
			if v := fams.must(t, refreshSuccess, docs1d...); v != 0 {
				t.Errorf("refresh_success = %v, want 0", v)
			}
			if v := fams.must(t, lastRefresh, docs1d...); v != ts0 {
				t.Errorf("last_refresh_timestamp moved from %v to %v on a failure", ts0, v)
			}
			if v := fams.must(t, "mintlify_analytics_refresh_failures_total", docs1d...); v != 1 {
				t.Errorf("refresh_failures_total = %v after one failed walk, want 1", v)
			}
			if v := fams.must(t, apiRequests, "endpoint", "visitors", "code", tc.code) - before; v != tc.requests {
				t.Errorf("%s{code=%q} grew by %v, want %v", apiRequests, tc.code, v, tc.requests)
			}
			logs := h.logs.String()
			if !regexp.MustCompile(`level=warn .*project=docs source=visitors window=1d .*err=`).MatchString(logs) {
				t.Errorf("no warning with project, window and error in the log:\n%s", logs)
			}

			h.fake.ClearFaults()
			h.clock.Advance(5 * time.Minute)
			// A Retry-After of 1s holds the next walk back for a real second
			// (the client's gate runs on the wall clock).
			eventually(t, 10*time.Second, "no successful walk after the fault cleared", func() bool {
				fams = h.scrape()
				v, _ := fams.get(refreshSuccess, docs1d...)
				return v == 1
			})
			if v := fams.must(t, lastRefresh, docs1d...); v != ts0+600 {
				t.Errorf("after the fault cleared: last_refresh_timestamp = %v, want %v", v, ts0+600)
			}
			if n := fams.count(pageVisitorsDedup); n != 300 {
				t.Errorf("after the fault cleared: %d paths, want 300", n)
			}
			if strings.Contains(h.logs.String(), testKey) {
				t.Error("the API key appears in the log")
			}
		})
	}
}

// TestVisitorsScrapeNotHeldUpBySlowRefresh: a scrape never waits for a walk
// in flight; it answers at once from the last snapshot, and the walk
// completes on its own.
func TestVisitorsScrapeNotHeldUpBySlowRefresh(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 50}})
	fams := h.scrape()
	good, ts0 := fams.data(), fams.must(t, lastRefresh, docs1d...)

	h.fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Latency: 2 * time.Second, Remaining: 1})
	h.clock.Advance(5 * time.Minute)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		h.sched.RefreshDue(ctx)
	}()
	eventually(t, 5*time.Second, "the slow walk never reached the API", func() bool { return h.requests() == 2 })
	fams, elapsed := h.scrapeOnly()
	if elapsed >= time.Second {
		t.Errorf("scrape during a 2s walk took %s", elapsed)
	}
	select {
	case <-done:
		t.Fatal("the slow walk ended before the scrape: the test proves nothing")
	default:
	}
	if !maps.Equal(fams.data(), good) {
		t.Error("the scrape did not serve the cached data")
	}
	if v := fams.must(t, lastRefresh, docs1d...); v != ts0 {
		t.Errorf("timestamp %v, want the cached %v", v, ts0)
	}
	if v := fams.must(t, refreshSuccess, docs1d...); v != 1 {
		t.Errorf("refresh_success = %v while the walk is in flight, want the last outcome (1)", v)
	}
	<-done
	fams = h.gather()
	if v := fams.must(t, lastRefresh, docs1d...); v != ts0+300 {
		t.Errorf("after the slow walk: timestamp %v, want %v", v, ts0+300)
	}
	if v := fams.must(t, refreshSuccess, docs1d...); v != 1 {
		t.Errorf("after the slow walk: refresh_success = %v, want 1", v)
	}
	if got := h.requests(); got != 2 {
		t.Errorf("%d requests, want 2", got)
	}
}

// TestVisitorsRetryAfter: after a 503 with Retry-After, no walk starts
// before it has passed on the exporter's clock, and scrapes meanwhile are
// not held up.
func TestVisitorsRetryAfter(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 50}})
	h.scrape()
	h.fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Status: 503, RetryAfter: "120", Remaining: 1})
	h.clock.Advance(5 * time.Minute)
	fams := h.scrape()
	if v := fams.must(t, refreshSuccess, docs1d...); v != 0 || h.requests() != 2 {
		t.Fatalf("503: success %v, %d requests; want 0 and 2", v, h.requests())
	}
	h.clock.Advance(time.Minute) // past the retry interval, within Retry-After
	start := time.Now()
	h.refreshDue()
	if d := time.Since(start); d >= time.Second {
		t.Errorf("RefreshDue during Retry-After waited %s instead of leaving the walk for later", d)
	}
	fams, elapsed := h.scrapeOnly()
	if elapsed >= time.Second {
		t.Errorf("scrape during Retry-After took %s", elapsed)
	}
	if got := h.requests(); got != 2 {
		t.Errorf("a request was sent a minute into a Retry-After of 2 minutes (%d requests)", got)
	}
	if len(fams.data()) != 3+3*50 {
		t.Error("the cache was not served during Retry-After")
	}
	h.clock.Advance(61 * time.Second) // Retry-After has passed
	h.refreshDue()
	if got := h.requests(); got != 3 {
		t.Errorf("%d requests after Retry-After passed, want 3", got)
	}
	if v := h.gather().must(t, refreshSuccess, docs1d...); v != 1 {
		t.Errorf("after Retry-After: refresh_success = %v, want 1", v)
	}
}

// TestVisitorsRetryInterval: a failed walk is not retried before the retry
// interval (30s at most) has passed, however often RefreshDue runs.
func TestVisitorsRetryInterval(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 50}})
	h.scrape()
	h.fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Status: 500})
	h.clock.Advance(5 * time.Minute)
	h.scrape()
	if h.requests() != 2 {
		t.Fatalf("%d requests, want 2", h.requests())
	}
	for range 5 {
		h.scrape()
	}
	h.clock.Advance(29 * time.Second)
	h.scrape()
	if got := h.requests(); got != 2 {
		t.Errorf("RefreshDue within 30s of a failure sent %d requests", got-2)
	}
	h.clock.Advance(time.Second)
	h.scrape()
	if got := h.requests(); got != 3 {
		t.Errorf("30s after a failure: %d requests, want 3", got)
	}
}

// TestVisitorsDayRollover: when the day changes, the 1d window's dates
// change, so it is walked at once, inside its interval. A longer window
// keeps its plan: it is served with the old dates until its planned walk.
func TestVisitorsDayRollover(t *testing.T) {
	h := newHarness(t, harnessOptions{now: time.Date(2026, 3, 10, 23, 58, 0, 0, time.UTC),
		fake: fakeapi.Options{Paths: 20}, cfg: planConfig{Windows: []visitors.Window{day1, days7}, Config: refresh.Config{MinInterval: time.Hour}}})
	h.scrape()
	h.clock.Advance(time.Minute)
	h.scrape()
	if h.requests() != 2 {
		t.Fatalf("%d requests before midnight, want 2 (one per window)", h.requests())
	}
	h.clock.Advance(2 * time.Minute)
	fams := h.scrape()
	qs := h.fake.VisitorsQueries()
	if len(qs) != 3 {
		t.Fatalf("%d requests after midnight, want 3 (the 1d window only)", len(qs))
	}
	if got := qs[2].Get("dateFrom") + ".." + qs[2].Get("dateTo"); got != "2026-03-11..2026-03-12" {
		t.Errorf("after midnight the 1d window asked for %s", got)
	}
	docs7d := []string{"project", "docs", "window", "7d"}
	if n := fams.count(pageVisitorsDedup); n != 2*20 {
		t.Errorf("%d page series after midnight, want 40 (1d refreshed, 7d still served)", n)
	}
	if v := fams.must(t, lastRefresh, docs7d...); v != float64(time.Date(2026, 3, 10, 23, 58, 0, 0, time.UTC).Unix()) {
		t.Errorf("7d last refresh %v: it was walked before its planned interval", v)
	}
	// The 7d window's planned walk, an hour after its last.
	h.clock.Set(time.Date(2026, 3, 11, 0, 58, 0, 0, time.UTC))
	h.scrape()
	qs = h.fake.VisitorsQueries()
	var sevenDay []string
	for _, q := range qs[3:] {
		if q.Get("dateFrom") != "2026-03-11" {
			sevenDay = append(sevenDay, q.Get("dateFrom")+".."+q.Get("dateTo"))
		}
	}
	if want := []string{"2026-03-05..2026-03-12"}; !slices.Equal(sevenDay, want) {
		t.Errorf("7d queries after its interval %q, want %q", sevenDay, want)
	}
}

// TestVisitorsDayRolloverWithFailedRefresh: when the first walk after
// midnight fails, yesterday's full day must not be served as today's "1d";
// the status series stay and show the failure.
func TestVisitorsDayRolloverWithFailedRefresh(t *testing.T) {
	h := newHarness(t, harnessOptions{now: time.Date(2026, 3, 10, 23, 58, 0, 0, time.UTC),
		fake: fakeapi.Options{Paths: 20}, cfg: planConfig{Config: refresh.Config{MinInterval: time.Hour}}})
	before := h.scrape()
	lastGood := before.must(t, lastRefresh, docs1d...)
	h.fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Status: 500})
	h.clock.Advance(3 * time.Minute)
	after := h.scrape()
	if h.requests() != 2 {
		t.Fatalf("%d requests, want 2: the 1d window was not walked after midnight", h.requests())
	}
	if n := after.count(siteVisitors) + after.count(pageVisitors); n != 0 {
		t.Errorf("%d visitor series of yesterday's dates served after midnight", n)
	}
	if v := after.must(t, refreshSuccess, docs1d...); v != 0 {
		t.Errorf("refresh_success = %v, want 0", v)
	}
	if v := after.must(t, lastRefresh, docs1d...); v != lastGood {
		t.Errorf("last refresh timestamp = %v, want the last good %v", v, lastGood)
	}
	h.fake.ClearFaults()
	h.clock.Advance(time.Minute) // past the retry interval
	if again := h.scrape(); again.count(pageVisitors) != 40 {
		t.Errorf("%d page series after recovery, want 40", again.count(pageVisitors))
	}
}

// TestVisitorsFinalDay: the finished day is walked once more FinalDayDelay
// after midnight and exported as window="yesterday" during the first hour
// of the day only, with the API's settled numbers for that day.
func TestVisitorsFinalDay(t *testing.T) {
	h := newHarness(t, harnessOptions{now: time.Date(2026, 3, 10, 23, 50, 0, 0, time.UTC),
		fake: fakeapi.Options{Paths: 20}, finalDay: true, cfg: planConfig{Config: refresh.Config{FinalDayDelay: 5 * time.Minute}}})
	yesterday := []string{"project", "docs", "window", refresh.FinalDayWindow}
	fams := h.scrape()
	if h.requests() != 1 {
		t.Fatalf("%d requests at 23:50, want 1 (the 1d window; the final day is walked after midnight)", h.requests())
	}
	if _, ok := fams.get(refreshSuccess, yesterday...); ok {
		t.Error("window=yesterday exported at 23:50")
	}

	h.clock.Set(time.Date(2026, 3, 11, 0, 1, 0, 0, time.UTC)) // before the delay
	fams = h.scrape()
	if h.requests() != 2 {
		t.Fatalf("%d requests at 00:01, want 2 (the 1d window's new day only)", h.requests())
	}
	if v := fams.must(t, refreshSuccess, yesterday...); v != 0 {
		t.Errorf("yesterday's refresh_success before its walk = %v, want 0", v)
	}
	if _, ok := fams.get(siteVisitorsDedup, yesterday...); ok {
		t.Error("yesterday's data exported before its walk")
	}

	h.clock.Set(time.Date(2026, 3, 11, 0, 5, 0, 0, time.UTC))
	fams = h.scrape()
	qs := h.fake.VisitorsQueries()
	if len(qs) != 3 {
		t.Fatalf("%d requests at 00:05, want 3", len(qs))
	}
	if got := qs[2].Get("dateFrom") + ".." + qs[2].Get("dateTo"); got != "2026-03-10..2026-03-11" {
		t.Errorf("the final-day walk asked for %s, want 2026-03-10..2026-03-11", got)
	}
	_, _, total := h.fake.DayCounts("docs", time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC), h.clock.Now())
	if v := fams.must(t, siteVisitorsDedup, yesterday...); v != float64(total) {
		t.Errorf("yesterday's site total %v, want the settled %d", v, total)
	}
	if v := fams.must(t, refreshSuccess, yesterday...); v != 1 {
		t.Errorf("yesterday's refresh_success = %v, want 1", v)
	}
	if n := fams.count(pageVisitorsDedup); n != 2*20 {
		t.Errorf("%d page series, want 40 (1d and yesterday)", n)
	}
	if _, ok := fams.get(refreshInterval, yesterday...); ok {
		t.Error("refresh_interval exported for the final day, which is walked once a day")
	}
	fams.must(t, refreshInterval, docs1d...)

	h.clock.Set(time.Date(2026, 3, 11, 0, 59, 0, 0, time.UTC))
	fams = h.scrape()
	if got := h.requests(); got != 4 { // the 1d window's planned walk only
		t.Errorf("%d requests at 00:59, want 4 (yesterday is walked once)", got)
	}
	fams.must(t, siteVisitorsDedup, yesterday...)

	h.clock.Set(time.Date(2026, 3, 11, 1, 0, 0, 0, time.UTC))
	fams = h.scrape()
	for name, mf := range fams {
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "window" && lp.GetValue() == refresh.FinalDayWindow {
					t.Errorf("%s still exports window=yesterday at 01:00", name)
				}
			}
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

// TestBuildSnapshot covers what Collect relies on: unique valid label values,
// filters, ranking with deterministic ties, the cap.
func TestBuildSnapshot(t *testing.T) {
	row := func(path string, h, a, total int64) apiclient.PathVisitors {
		return apiclient.PathVisitors{Path: path, VisitorCounts: apiclient.VisitorCounts{Human: h, AI: a, Total: total}}
	}
	res := &apiclient.VisitorsReport{
		Totals: apiclient.VisitorCounts{Human: 10, AI: 5, Total: 12},
		Paths: []apiclient.PathVisitors{
			row("/a", 1, 1, 2), row("/a", 9, 9, 9), // duplicate: first wins
			row("/b\xff", 3, 0, 3), row("/b\uFFFD", 7, 7, 7), // the same label value once made valid UTF-8
			row("/y", 4, 1, 5), row("/x", 4, 1, 5), // tie on total: path order
			row("/private/1", 50, 50, 90),
			row("/z", 0, 1, 1),
		},
		Requests: 2,
	}
	policy := visitors.PathPolicy{MaxPaths: 3, Exclude: regexp.MustCompile(`^/private/`)}
	s := policy.Build(res, "2026-03-10", "2026-03-11", fixedNow)
	var got []string
	for _, p := range s.Paths {
		got = append(got, p.Path+"="+strconv.FormatFloat(p.Total, 'f', -1, 64))
	}
	if want := []string{"/x=5", "/y=5", "/b\uFFFD=3"}; !slices.Equal(got, want) {
		t.Errorf("paths %q, want %q", got, want)
	}
	// /private/1 by the filter; /a and /z by the cap.
	if s.Dropped != 3 {
		t.Errorf("dropped = %d, want 3", s.Dropped)
	}
	if s.Site != (visitors.Counts{Human: 10, AI: 5, Total: 12}) {
		t.Errorf("site = %+v", s.Site)
	}
	if s.DateFrom != "2026-03-10" || s.DateTo != "2026-03-11" || !s.At.Equal(fixedNow) || s.Requests != 2 {
		t.Errorf("snapshot %s..%s at %s, %d requests", s.DateFrom, s.DateTo, s.At, s.Requests)
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
			cfg := planConfig{Paths: visitors.PathPolicy{MaxPaths: tc.maxPaths}}
			var inc, exc *regexp.Regexp
			if tc.include != "" {
				inc = regexp.MustCompile(tc.include)
				cfg.Paths.Include = inc
			}
			if tc.exclude != "" {
				exc = regexp.MustCompile(tc.exclude)
				cfg.Paths.Exclude = exc
			}
			h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 300}, cfg: cfg})

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

// TestVisitorsMaxStaleness: while walks fail, a snapshot is served until it
// is older than its planned interval plus MaxStaleness; then the data goes
// while the refresh status series stay.
func TestVisitorsMaxStaleness(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 30},
		cfg: planConfig{Config: refresh.Config{MinInterval: time.Minute, MaxStaleness: 10 * time.Minute}}})
	fams := h.scrape()
	good, ts0 := fams.data(), fams.must(t, lastRefresh, docs1d...)
	if v := fams.must(t, refreshInterval, docs1d...); v != 60 {
		t.Fatalf("refresh_interval = %v, want 60", v)
	}
	h.fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Status: 500})

	h.clock.Advance(11 * time.Minute) // exactly interval + MaxStaleness old: still served
	fams = h.scrape()
	if h.requests() != 2 {
		t.Fatalf("%d requests, want 2 (one failed walk)", h.requests())
	}
	if !maps.Equal(fams.data(), good) {
		t.Error("a snapshot interval + MaxStaleness old was not served")
	}
	h.clock.Advance(time.Second)
	fams = h.scrape()
	if d := fams.data(); len(d) != 0 {
		t.Errorf("a snapshot older than interval + MaxStaleness still serves %d data series", len(d))
	}
	for _, name := range []string{pathsExported, pathsDropped} {
		if _, ok := fams.get(name, docs1d...); ok {
			t.Errorf("%s still exported for an expired snapshot", name)
		}
	}
	if v := fams.must(t, refreshSuccess, docs1d...); v != 0 {
		t.Errorf("refresh_success = %v, want 0", v)
	}
	if v := fams.must(t, lastRefresh, docs1d...); v != ts0 {
		t.Errorf("last_refresh_timestamp = %v, want %v (its age shows why data is missing)", v, ts0)
	}
	fams.must(t, refreshDuration, docs1d...)
	fams.must(t, refreshInterval, docs1d...)

	h.fake.ClearFaults()
	h.clock.Advance(time.Minute)
	fams = h.scrape()
	if n := len(fams.data()); n != 3+3*30 || fams.must(t, refreshSuccess, docs1d...) != 1 {
		t.Errorf("after recovery: %d data series, success %v", n, fams.must(t, refreshSuccess, docs1d...))
	}
}

// TestVisitorsMaxStalenessFollowsPlan: a window the budget walks every few
// hours is not dropped an hour after its walk when MaxStaleness is an
// hour: staleness is judged against the planned interval.
func TestVisitorsMaxStalenessFollowsPlan(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 30},
		cfg: planConfig{Windows: []visitors.Window{day1, {Name: "30d", Days: 30, Interval: 6 * time.Hour}}, Config: refresh.Config{MinInterval: time.Minute, MaxStaleness: time.Hour}}})
	docs30d := []string{"project", "docs", "window", "30d"}
	fams := h.scrape()
	if v := fams.must(t, refreshInterval, docs30d...); v != 6*3600 {
		t.Fatalf("30d refresh_interval = %v, want its own 6h", v)
	}
	h.clock.Advance(5 * time.Hour)
	fams = h.scrape()
	if _, ok := fams.get(siteVisitorsDedup, docs30d...); !ok {
		t.Error("a 30d snapshot planned every 6h was dropped after 5h")
	}
	if h.requests() != 3 {
		t.Errorf("%d requests, want 3 (both windows, then 1d alone)", h.requests())
	}
	h.fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Status: 500})
	// A window planned less often than hourly may start up to an hour
	// late, so it is served for its interval, that hour and max staleness.
	h.clock.Advance(3 * time.Hour) // 8h: the 6h walk failed, within the grace
	fams = h.scrape()
	if _, ok := fams.get(siteVisitorsDedup, docs30d...); !ok {
		t.Error("a 30d snapshot 8h old (planned 6h + 1h late + 1h staleness) was dropped")
	}
	h.clock.Advance(time.Second)
	fams = h.gather()
	if _, ok := fams.get(siteVisitorsDedup, docs30d...); ok {
		t.Error("a 30d snapshot older than 6h + 1h + 1h still served")
	}
}

// TestVisitorsEmptyProject: a project without traffic is data, not an error.
func TestVisitorsEmptyProject(t *testing.T) {
	h := newHarness(t, harnessOptions{
		fake: fakeapi.Options{Paths: 20, PathsByProject: map[string]int{"empty": 0}},
		cfg:  planConfig{Projects: []string{"docs", "empty"}},
	})
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

// TestVisitorsCollectDoesNoIO: Collect before any walk fetches nothing and
// reports refresh_success 0 without a timestamp, with the planned interval.
func TestVisitorsCollectDoesNoIO(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 20}})
	fams := h.gather()
	if _, elapsed := h.scrapeOnly(); elapsed > 5*time.Second {
		t.Errorf("scrape of a cold scheduler took %s", elapsed)
	}
	if h.requests() != 0 {
		t.Fatalf("Collect sent %d requests", h.requests())
	}
	if v := fams.must(t, refreshSuccess, docs1d...); v != 0 {
		t.Errorf("cold refresh_success = %v, want 0", v)
	}
	if v := fams.must(t, refreshInterval, docs1d...); v != 300 {
		t.Errorf("cold refresh_interval = %v, want 300", v)
	}
	for _, name := range []string{lastRefresh, refreshDuration, pathsExported, siteVisitorsDedup} {
		if fams.count(name) != 0 {
			t.Errorf("cold cache exports %s", name)
		}
	}
}

// staticViews is a ViewSource with fixed views.
type staticViews []refresh.View

func (s staticViews) Views() []refresh.View { return s }

// TestVisitorsInvalidLabelSkipped: a series whose label value is not valid
// UTF-8 is skipped and logged, and the rest of the scrape is served.
func TestVisitorsInvalidLabelSkipped(t *testing.T) {
	var logs syncBuffer
	snap := &visitors.Snapshot{At: fixedNow, DateFrom: "2026-03-10", DateTo: "2026-03-11",
		Paths: []visitors.PathCounts{{Path: "/ok", Counts: visitors.Counts{Human: 1, AI: 1, Total: 1}}}}
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

// TestVisitorsGolden compares Collect for a fixed snapshot (small fake data,
// fixed clock) with testdata/visitors.golden.prom, and lints it.
func TestVisitorsGolden(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 4},
		cfg: planConfig{Windows: []visitors.Window{day1, days7}, Paths: visitors.PathPolicy{MaxPaths: 3}}})
	h.refreshDue()
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

// TestVisitorsClose: Close cancels a walk in flight and returns promptly;
// afterwards nothing starts and the last states are still served.
func TestVisitorsClose(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 20}})
	h.fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Latency: 30 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	start := time.Now()
	h.sched.RefreshDue(ctx)
	cancel()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("RefreshDue with a 200ms context took %s", d)
	}
	eventually(t, 5*time.Second, "the walk never reached the API", func() bool { return h.requests() == 1 })

	start = time.Now()
	h.sched.Close()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %s with a walk in flight", d)
	}
	h.sched.Close() // idempotent

	h.clock.Advance(time.Hour)
	ctx, cancel = context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start = time.Now()
	h.sched.RefreshDue(ctx)
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("RefreshDue after Close waited %s", d)
	}
	time.Sleep(50 * time.Millisecond)
	if got := h.requests(); got != 1 {
		t.Errorf("%d requests after Close, want none", got-1)
	}
	fams, _ := h.scrapeOnly()
	if v := fams.must(t, refreshSuccess, docs1d...); v != 0 {
		t.Errorf("refresh_success = %v after a cancelled walk", v)
	}
	if strings.Contains(h.logs.String(), "level=warn") {
		t.Errorf("shutting down logged a warning:\n%s", h.logs.String())
	}
}

// TestVisitorsWaitForBudget: with an analytics budget smaller than one
// round of walks, the scheduler waits for the budget instead of sending:
// the API never answers 429, a walk whose cost is known starts only when
// the budget pays for all of it, and the plan stretches to what the budget
// pays for. Two projects of 5 pages each, 6 requests per hour.
func TestVisitorsWaitForBudget(t *testing.T) {
	// The budget's clock is the harness's, while walk deadlines are on the
	// wall clock (RefreshTimeout): a fake clock in the future keeps "the
	// next free request comes after the walk's deadline" true, as in
	// production, where both clocks are one. 15:00 UTC, as fixedNow.
	now := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 7).Add(15 * time.Hour)
	h := newHarness(t, harnessOptions{
		now: now,
		// The organization's quota is the same as the exporter's budget:
		// one request too many would be answered 429.
		fake:   fakeapi.Options{Paths: 5, AnalyticsBudget: 6},
		budget: budget.Config{Limit: 6},
		cfg:    planConfig{Projects: []string{"a", "b"}, Config: refresh.Config{PageSize: 1, MinInterval: 5 * time.Minute, Concurrency: 1}}, // one walk at a time: which walk gets the budget is deterministic
	})
	t0 := h.clock.Now()
	a1d := []string{"project", "a", "window", "1d"}
	b1d := []string{"project", "b", "window", "1d"}
	stays := func(want int64, what string) {
		t.Helper()
		time.Sleep(200 * time.Millisecond) // a walk that should wait would have sent by now
		if got := h.requests(); got != want {
			t.Fatalf("%s: %d requests, want %d", what, got, want)
		}
		if r := h.fake.AnalyticsRejections(); r != 0 {
			t.Fatalf("%s: the API answered 429 %d times", what, r)
		}
	}

	// First walk of a: its cost is unknown until walked; 5 requests.
	h.refreshDue()
	stays(5, "first walk of a")
	// b's cost is unknown until walked, so it is estimated as a's: 5
	// requests, and only one is free. b waits, sending nothing, rather than
	// start a walk the budget cannot finish.
	h.refreshDue()
	stays(5, "b's walk on a spent budget")
	fams, _ := h.scrapeOnly()
	if v := fams.must(t, refreshSuccess, a1d...); v != 1 {
		t.Errorf("a: refresh_success %v, want 1", v)
	}
	if v := fams.must(t, refreshSuccess, b1d...); v != 0 {
		t.Errorf("b: refresh_success %v, want 0", v)
	}
	if _, ok := fams.get(lastRefresh, b1d...); ok {
		t.Error("b has a successful walk on a spent budget")
	}
	if v := fams.must(t, "mintlify_api_budget_spent_requests", "organization", "default"); v != 5 {
		t.Errorf("budget spent = %v, want 5", v)
	}
	h.clock.Advance(10 * time.Minute) // not yet the budget's window
	h.refreshDue()
	stays(5, "b still waiting")

	// An hour later (and the hundredth of it the budget keeps for the
	// API's clock) a's requests have left the window and b walks.
	h.clock.Set(t0.Add(time.Hour + time.Minute))
	h.refreshDue()
	stays(10, "b's walk after an hour")
	fams, _ = h.scrapeOnly()
	// Both walks are known to take 5 requests now: the plan stretches the
	// interval to what the budget pays for, 2 × 5 requests per interval
	// within 6 per hour (the planner keeps some of it free), and no longer
	// than half the budget would pay for.
	interval := time.Duration(fams.must(t, refreshInterval, a1d...)) * time.Second
	if interval < 2*5*time.Hour/6 || interval > 2*5*time.Hour/3 {
		t.Errorf("refresh_interval %s: not what a budget of 6 per hour pays for walks of 2 × 5 requests", interval)
	}
	for _, l := range [][]string{a1d, b1d} {
		if v := fams.must(t, refreshSuccess, l...); v != 1 {
			t.Errorf("%v: refresh_success %v, want 1", l, v)
		}
		if v := fams.must(t, refreshInterval, l...); v != interval.Seconds() {
			t.Errorf("%v: refresh_interval %v, want %v as for a (same cost, same window)", l, v, interval.Seconds())
		}
	}

	// Once both are due (b walked an hour after a) and every earlier
	// request has left the window, the budget pays for one walk: a walks
	// (it comes first), b waits, sending nothing, although a's walk has
	// ended and nothing else runs.
	x := t0.Add(time.Hour + time.Minute + interval)
	h.clock.Set(x)
	h.refreshDue()
	stays(15, "both due, one walk paid for")
	h.refreshDue()
	stays(15, "1 request free for a walk of 5")
	h.clock.Set(x.Add(time.Minute))
	h.refreshDue()
	stays(15, "a minute later, 1 request free for a walk of 5")
	fams, _ = h.scrapeOnly()
	if v := fams.must(t, lastRefresh, a1d...); v != float64(x.Unix()) {
		t.Errorf("a last walked at %v, want %v", v, x.Unix())
	}
	if v := fams.must(t, lastRefresh, b1d...); v != float64(t0.Add(time.Hour+time.Minute).Unix()) {
		t.Errorf("b last walked at %v, want %v (it waits for the budget)", v, t0.Add(time.Hour+time.Minute).Unix())
	}
	// An hour later a's requests have left the window: b walks.
	h.clock.Set(x.Add(time.Hour + time.Minute))
	h.refreshDue()
	stays(20, "b's walk once the budget pays for it")
	fams, _ = h.scrapeOnly()
	if v := fams.must(t, lastRefresh, b1d...); v != float64(x.Add(time.Hour+time.Minute).Unix()) {
		t.Errorf("b last walked at %v, want %v", v, x.Add(time.Hour+time.Minute).Unix())
	}
	if v := fams.must(t, "mintlify_api_budget_rejections_total", "organization", "default"); v != 0 {
		t.Errorf("budget rejections = %v, want 0", v)
	}
}
