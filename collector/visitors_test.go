package collector

import (
	"bytes"
	"cmp"
	"context"
	"flag"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const (
	siteVisitors      = "mintlify_site_unique_visitors"
	siteVisitorsDedup = "mintlify_site_unique_visitors_deduplicated"
	pageVisitors      = "mintlify_page_unique_visitors"
	pageVisitorsDedup = "mintlify_page_unique_visitors_deduplicated"
	refreshSuccess    = "mintlify_visitors_refresh_success"
	lastRefresh       = "mintlify_visitors_last_refresh_timestamp_seconds"
	refreshDuration   = "mintlify_visitors_refresh_duration_seconds"
	pathsExported     = "mintlify_visitors_paths"
	pathsDropped      = "mintlify_visitors_paths_dropped"
	apiRequests       = "mintlify_api_requests_total"
)

var ourMetrics = []string{siteVisitors, siteVisitorsDedup, pageVisitors, pageVisitorsDedup,
	refreshSuccess, lastRefresh, refreshDuration, pathsExported, pathsDropped}

var docs1d = []string{"project", "docs", "window", "1d"}

func labelsWith(base []string, more ...string) []string { return append(slices.Clone(base), more...) }

func TestNewVisitorsValidation(t *testing.T) {
	client, err := apiclient.New(apiclient.Config{BaseURL: "http://127.0.0.1:1", APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	ok := VisitorsConfig{Projects: []string{"a"}, Windows: []Window{{"1d", 1}}, PageSize: 250, CacheTTL: time.Minute}
	bad := map[string]func(c *VisitorsConfig){
		"no project":           func(c *VisitorsConfig) { c.Projects = nil },
		"empty project":        func(c *VisitorsConfig) { c.Projects = []string{""} },
		"no window":            func(c *VisitorsConfig) { c.Windows = nil },
		"zero days":            func(c *VisitorsConfig) { c.Windows = []Window{{"0d", 0}} },
		"conflicting windows":  func(c *VisitorsConfig) { c.Windows = []Window{{"1d", 1}, {"1d", 2}} },
		"page size 0":          func(c *VisitorsConfig) { c.PageSize = 0 },
		"page size 251":        func(c *VisitorsConfig) { c.PageSize = 251 },
		"negative TTL":         func(c *VisitorsConfig) { c.CacheTTL = -time.Second },
		"negative max paths":   func(c *VisitorsConfig) { c.MaxPaths = -1 },
		"staleness below TTL":  func(c *VisitorsConfig) { c.MaxStaleness = time.Second },
		"negative staleness":   func(c *VisitorsConfig) { c.MaxStaleness = -time.Second },
		"negative max pages":   func(c *VisitorsConfig) { c.MaxPages = -1 },
		"negative timeout":     func(c *VisitorsConfig) { c.RefreshTimeout = -1 },
		"negative retry delay": func(c *VisitorsConfig) { c.RetryInterval = -1 },
	}
	for name, mutate := range bad {
		cfg := ok
		mutate(&cfg)
		if _, err := NewVisitors(client, cfg, nil); err == nil {
			t.Errorf("%s: NewVisitors accepted it", name)
		}
	}
	if _, err := NewVisitors(nil, ok, nil); err == nil {
		t.Error("nil client accepted")
	}
	cfg := ok
	cfg.Projects = []string{"a", "b", "a"}
	cfg.Windows = []Window{{"1d", 1}, {"7d", 7}, {"1d", 1}}
	v, err := NewVisitors(client, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if len(v.entries) != 4 {
		t.Errorf("got %d project×window entries, want 4 (duplicates merged)", len(v.entries))
	}
}

// TestVisitorsQueryDates checks the dates the API receives for a fixed
// clock and time zone: 23:30 in New York is already tomorrow in UTC.
func TestVisitorsQueryDates(t *testing.T) {
	ny := mustLoad(t, "America/New_York")
	now := time.Date(2026, 3, 10, 23, 30, 0, 0, ny)
	windows := []Window{{"1d", 1}, {"7d", 7}}
	for _, tc := range []struct {
		loc  *time.Location
		want []string // dateFrom..dateTo per window
	}{
		{ny, []string{"2026-03-10..2026-03-11", "2026-03-04..2026-03-11"}},
		{time.UTC, []string{"2026-03-11..2026-03-12", "2026-03-05..2026-03-12"}},
	} {
		t.Run(tc.loc.String(), func(t *testing.T) {
			h := newHarness(t, harnessOptions{now: now, fake: fakeapi.Options{Paths: 20},
				cfg: VisitorsConfig{Windows: windows, Location: tc.loc}})
			fams, _ := h.scrape("")
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
	fams, _ := h.scrape("")
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

	// The next refresh, once the TTL has passed, walks all pages again.
	h.clock.Advance(5 * time.Minute)
	h.scrape("")
	if got := h.requests(); got != 10 {
		t.Errorf("after a second refresh: %d requests, want 10", got)
	}
}

// TestVisitorsSiteTotalNotSummed checks that the deduplicated totals are the
// API's, which the fake makes differ from human + ai.
func TestVisitorsSiteTotalNotSummed(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 40}})
	from, to := Window{"1d", 1}.Range(h.clock.Now(), time.UTC)
	page, err := h.client.VisitorsPage(context.Background(), "docs", apiclient.VisitorsQuery{DateFrom: from, DateTo: to, Limit: 250})
	if err != nil {
		t.Fatal(err)
	}
	api := page.Totals
	if api.Total == api.Human+api.AI {
		t.Fatalf("fake's site total %d equals human+ai: the test cannot tell a sum from the API's total", api.Total)
	}
	fams, _ := h.scrape("")
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

// TestVisitorsCacheTTL: scrapes inside the TTL cost no upstream request; the
// first scrape after it costs one refresh.
func TestVisitorsCacheTTL(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 1234}})
	h.scrape("")
	if got := h.requests(); got != 5 {
		t.Fatalf("cold scrape: %d requests, want 5", got)
	}
	for i := range 30 {
		if i == 15 {
			h.clock.Advance(5*time.Minute - time.Second) // still inside the TTL
		}
		if status, body := h.scrapeBody(""); status != http.StatusOK || !strings.Contains(body, `mintlify_visitors_paths{project="docs",window="1d"} 1234`) {
			t.Fatalf("scrape %d: HTTP %d without the cached paths", i, status)
		}
	}
	if got := h.requests(); got != 5 {
		t.Fatalf("30 scrapes inside the TTL made %d extra requests", got-5)
	}
	h.clock.Advance(time.Second)
	h.scrape("")
	h.scrape("")
	if got := h.requests(); got != 10 {
		t.Fatalf("after the TTL: %d requests in all, want 10 (one refresh)", got)
	}
}

// TestVisitorsConcurrentColdScrapes: concurrent scrapes of a cold cache share
// one refresh.
func TestVisitorsConcurrentColdScrapes(t *testing.T) {
	for _, tc := range []struct {
		paths        int
		wantRequests int64
	}{{1234, 5}, {50, 1}} {
		t.Run(strconv.Itoa(tc.paths)+" paths", func(t *testing.T) {
			h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: tc.paths}})
			// Slow pages keep the refresh in flight while every scrape arrives.
			h.fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Latency: 100 * time.Millisecond})
			const scrapes = 40
			var wg sync.WaitGroup
			start := make(chan struct{})
			statuses := make([]int, scrapes)
			bodies := make([]string, scrapes)
			for i := range scrapes {
				wg.Go(func() {
					<-start
					statuses[i], bodies[i] = h.scrapeBody("10")
				})
			}
			close(start)
			wg.Wait()
			want := `mintlify_visitors_paths{project="docs",window="1d"} ` + strconv.Itoa(tc.paths) + "\n"
			for i := range scrapes {
				if statuses[i] != http.StatusOK || !strings.Contains(bodies[i], want) {
					t.Errorf("scrape %d: HTTP %d, want 200 with %q", i, statuses[i], want)
				}
			}
			if got := h.requests(); got != tc.wantRequests {
				t.Errorf("%d concurrent cold scrapes sent %d requests, want %d (one refresh)", scrapes, got, tc.wantRequests)
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
			fams, _ := h.scrape("")
			good := fams.data()
			ts0 := fams.must(t, lastRefresh, docs1d...)
			if len(good) != 3+3*300 || fams.must(t, refreshSuccess, docs1d...) != 1 {
				t.Fatalf("good snapshot: %d data series, success %v", len(good), fams.must(t, refreshSuccess, docs1d...))
			}
			before := fams.must(t, apiRequests, "endpoint", "visitors", "code", tc.code)

			h.fake.SetFault(fakeapi.Visitors, tc.fault)
			h.clock.Advance(5 * time.Minute)
			fams, _ = h.scrape("10")
			if got := fams.data(); !maps.Equal(got, good) {
				t.Errorf("during the fault: %d data series differ from the last good %d", len(got), len(good))
			}
			if v := fams.must(t, refreshSuccess, docs1d...); v != 0 {
				t.Errorf("refresh_success = %v, want 0", v)
			}
			if v := fams.must(t, lastRefresh, docs1d...); v != ts0 {
				t.Errorf("last_refresh_timestamp moved from %v to %v on a failure", ts0, v)
			}
			if v := fams.must(t, apiRequests, "endpoint", "visitors", "code", tc.code) - before; v != tc.requests {
				t.Errorf("%s{code=%q} grew by %v, want %v", apiRequests, tc.code, v, tc.requests)
			}
			logs := h.logs.String()
			if !regexp.MustCompile(`level=warn .*project=docs window=1d .*err=`).MatchString(logs) {
				t.Errorf("no warning with project, window and error in the log:\n%s", logs)
			}

			h.fake.ClearFaults()
			h.clock.Advance(5 * time.Minute)
			fams, _ = h.scrape("10")
			if v := fams.must(t, refreshSuccess, docs1d...); v != 1 {
				t.Errorf("after the fault cleared: refresh_success = %v, want 1", v)
			}
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

// TestVisitorsLatencyServesCache: a scrape never waits past its deadline; the
// refresh it started completes in the background.
func TestVisitorsLatencyServesCache(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 50}})
	fams, _ := h.scrape("")
	good, ts0 := fams.data(), fams.must(t, lastRefresh, docs1d...)

	h.fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Latency: 2 * time.Second, Remaining: 1})
	h.clock.Advance(5 * time.Minute)
	fams, elapsed := h.scrape("1")
	if elapsed >= time.Second {
		t.Errorf("scrape with a 1s timeout took %s", elapsed)
	}
	if !maps.Equal(fams.data(), good) {
		t.Error("the scrape did not serve the cached data")
	}
	if v := fams.must(t, lastRefresh, docs1d...); v != ts0 {
		t.Errorf("timestamp %v, want the cached %v", v, ts0)
	}
	if v := fams.must(t, refreshSuccess, docs1d...); v != 1 {
		t.Errorf("refresh_success = %v while the refresh is in flight, want the last outcome (1)", v)
	}
	eventually(t, 10*time.Second, "the background refresh never completed", func() bool {
		v, _ := h.gather().get(lastRefresh, docs1d...)
		return v == ts0+300
	})
	fams = h.gather()
	if v := fams.must(t, refreshSuccess, docs1d...); v != 1 {
		t.Errorf("after the slow refresh: refresh_success = %v, want 1", v)
	}
	if got := h.requests(); got != 2 {
		t.Errorf("%d requests, want 2", got)
	}
}

// TestVisitorsRetryAfter: after a 503 with Retry-After, no request is sent
// before it has passed, and scrapes meanwhile are not held up.
func TestVisitorsRetryAfter(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 50}})
	h.scrape("")
	h.fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Status: 503, RetryAfter: "2", Remaining: 1})
	h.clock.Advance(5 * time.Minute)
	fams, _ := h.scrape("10")
	t503 := time.Now()
	if v := fams.must(t, refreshSuccess, docs1d...); v != 0 || h.requests() != 2 {
		t.Fatalf("503: success %v, %d requests; want 0 and 2", v, h.requests())
	}
	h.clock.Advance(time.Minute) // past the retry interval, so a refresh starts
	fams, elapsed := h.scrape("1")
	if elapsed >= time.Second {
		t.Errorf("scrape during Retry-After took %s", elapsed)
	}
	if got := h.requests(); got != 2 {
		t.Errorf("a request was sent %s after Retry-After: 2", time.Since(t503))
	}
	if len(fams.data()) != 3+3*50 {
		t.Error("the cache was not served during Retry-After")
	}
	eventually(t, 10*time.Second, "no request after Retry-After", func() bool { return h.requests() == 3 })
	if d := time.Since(t503); d < 1800*time.Millisecond {
		t.Errorf("request sent %s after a Retry-After of 2s", d)
	}
	eventually(t, 5*time.Second, "refresh did not recover", func() bool {
		v, _ := h.gather().get(refreshSuccess, docs1d...)
		return v == 1
	})
}

// TestVisitorsRetryInterval: a failed refresh is not retried on every scrape.
func TestVisitorsRetryInterval(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 50}})
	h.scrape("")
	h.fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Status: 500})
	h.clock.Advance(5 * time.Minute)
	h.scrape("")
	if h.requests() != 2 {
		t.Fatalf("%d requests, want 2", h.requests())
	}
	for range 5 {
		h.scrape("")
	}
	h.clock.Advance(29 * time.Second)
	h.scrape("")
	if got := h.requests(); got != 2 {
		t.Errorf("scrapes within 30s of a failure sent %d requests", got-2)
	}
	h.clock.Advance(time.Second)
	h.scrape("")
	if got := h.requests(); got != 3 {
		t.Errorf("30s after a failure: %d requests, want 3", got)
	}
}

// TestVisitorsDayRollover: when the day changes, the window's dates change,
// so the snapshot is refreshed even inside the TTL.
func TestVisitorsDayRollover(t *testing.T) {
	h := newHarness(t, harnessOptions{now: time.Date(2026, 3, 10, 23, 58, 0, 0, time.UTC),
		fake: fakeapi.Options{Paths: 20}, cfg: VisitorsConfig{CacheTTL: time.Hour}})
	h.scrape("")
	h.clock.Advance(time.Minute)
	h.scrape("")
	if h.requests() != 1 {
		t.Fatalf("%d requests before midnight, want 1", h.requests())
	}
	h.clock.Advance(2 * time.Minute)
	h.scrape("")
	qs := h.fake.VisitorsQueries()
	if len(qs) != 2 {
		t.Fatalf("%d requests after midnight, want 2", len(qs))
	}
	if got := qs[1].Get("dateFrom") + ".." + qs[1].Get("dateTo"); got != "2026-03-11..2026-03-12" {
		t.Errorf("after midnight the 1d window asked for %s", got)
	}
}

// TestVisitorsDayRolloverWithFailedRefresh: when the first refresh after
// midnight fails, yesterday's full day must not be served as today's "1d";
// the status series stay and show the failure.
func TestVisitorsDayRolloverWithFailedRefresh(t *testing.T) {
	h := newHarness(t, harnessOptions{now: time.Date(2026, 3, 10, 23, 58, 0, 0, time.UTC),
		fake: fakeapi.Options{Paths: 20}, cfg: VisitorsConfig{CacheTTL: time.Hour}})
	before, _ := h.scrape("")
	lastGood := before.must(t, lastRefresh, docs1d...)
	h.fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Status: 500})
	h.clock.Advance(3 * time.Minute)
	after, _ := h.scrape("")
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
	if again, _ := h.scrape(""); again.count(pageVisitors) != 40 {
		t.Errorf("%d page series after recovery, want 40", again.count(pageVisitors))
	}
}

// TestVisitorsDuplicatePath: a path repeated across pages yields one series,
// with the first copy's counts.
func TestVisitorsDuplicatePath(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 600}})
	from, to := Window{"1d", 1}.Range(h.clock.Now(), time.UTC)
	first, err := h.client.VisitorsPage(context.Background(), "docs", apiclient.VisitorsQuery{DateFrom: from, DateTo: to, Limit: 250})
	if err != nil {
		t.Fatal(err)
	}
	dup := first.Rows[249] // the fake repeats it at the top of page 2
	h.fake.SetFault(fakeapi.Visitors, fakeapi.Fault{DuplicatePath: true})
	fams, _ := h.scrape("")
	if !strings.Contains(h.logs.String(), "duplicate_rows=2") {
		t.Fatalf("the fake sent no duplicates? log:\n%s", h.logs.String())
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
	}
	v := &Visitors{cfg: VisitorsConfig{MaxPaths: 3, PathExclude: regexp.MustCompile(`^/private/`)}}
	s := v.buildSnapshot(res, "2026-03-10", "2026-03-11", fixedNow)
	var got []string
	for _, p := range s.pages {
		got = append(got, p.path+"="+strconv.FormatFloat(p.total, 'f', -1, 64))
	}
	if want := []string{"/x=5", "/y=5", "/b\uFFFD=3"}; !slices.Equal(got, want) {
		t.Errorf("pages %q, want %q", got, want)
	}
	// /private/1 by the filter; /a and /z by the cap.
	if s.dropped != 3 {
		t.Errorf("dropped = %d, want 3", s.dropped)
	}
	if s.site != (visitorCounts{10, 5, 12}) {
		t.Errorf("site = %+v", s.site)
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
			cfg := VisitorsConfig{MaxPaths: tc.maxPaths}
			var inc, exc *regexp.Regexp
			if tc.include != "" {
				inc = regexp.MustCompile(tc.include)
				cfg.PathInclude = inc
			}
			if tc.exclude != "" {
				exc = regexp.MustCompile(tc.exclude)
				cfg.PathExclude = exc
			}
			h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 300}, cfg: cfg})

			// The expected set, from the API's own rows.
			from, to := Window{"1d", 1}.Range(h.clock.Now(), time.UTC)
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

			fams, _ := h.scrape("")
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

// TestVisitorsMaxStaleness: a snapshot older than MaxStaleness is no longer
// served, while the refresh status series stay.
func TestVisitorsMaxStaleness(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 30},
		cfg: VisitorsConfig{CacheTTL: time.Minute, MaxStaleness: 10 * time.Minute}})
	fams, _ := h.scrape("")
	good, ts0 := fams.data(), fams.must(t, lastRefresh, docs1d...)
	h.fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Status: 500})

	h.clock.Advance(10 * time.Minute) // exactly MaxStaleness old: still served
	fams, _ = h.scrape("")
	if !maps.Equal(fams.data(), good) {
		t.Error("a snapshot MaxStaleness old was not served")
	}
	h.clock.Advance(time.Second)
	fams, _ = h.scrape("")
	if d := fams.data(); len(d) != 0 {
		t.Errorf("a snapshot older than MaxStaleness still serves %d data series", len(d))
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

	h.fake.ClearFaults()
	h.clock.Advance(time.Minute)
	fams, _ = h.scrape("")
	if n := len(fams.data()); n != 3+3*30 || fams.must(t, refreshSuccess, docs1d...) != 1 {
		t.Errorf("after recovery: %d data series, success %v", n, fams.must(t, refreshSuccess, docs1d...))
	}
}

// TestVisitorsEmptyProject: a project without traffic is data, not an error.
func TestVisitorsEmptyProject(t *testing.T) {
	h := newHarness(t, harnessOptions{
		fake: fakeapi.Options{Paths: 20, PathsByProject: map[string]int{"empty": 0}},
		cfg:  VisitorsConfig{Projects: []string{"docs", "empty"}},
	})
	fams, _ := h.scrape("")
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

// TestVisitorsCollectDoesNoIO: Collect on a cold cache fetches nothing and
// reports refresh_success 0 without a timestamp.
func TestVisitorsCollectDoesNoIO(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 20}})
	fams := h.gather()
	if h.requests() != 0 {
		t.Fatalf("Collect sent %d requests", h.requests())
	}
	if v := fams.must(t, refreshSuccess, docs1d...); v != 0 {
		t.Errorf("cold refresh_success = %v, want 0", v)
	}
	for _, name := range []string{lastRefresh, refreshDuration, pathsExported, siteVisitorsDedup} {
		if fams.count(name) != 0 {
			t.Errorf("cold cache exports %s", name)
		}
	}
}

// TestVisitorsGolden compares Collect for a fixed snapshot (small fake data,
// fixed clock) with testdata/visitors.golden.prom, and lints it.
func TestVisitorsGolden(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 4},
		cfg: VisitorsConfig{Windows: []Window{{"1d", 1}, {"7d", 7}}, MaxPaths: 3}})
	h.refresh()
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

// TestVisitorsClose: Close cancels a refresh in flight and returns promptly;
// afterwards nothing starts and the cache is still served.
func TestVisitorsClose(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 20}})
	h.fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Latency: 30 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	start := time.Now()
	h.v.Refresh(ctx)
	cancel()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Refresh with a 200ms context took %s", d)
	}
	eventually(t, 5*time.Second, "the refresh never reached the API", func() bool { return h.requests() == 1 })

	start = time.Now()
	h.v.Close()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %s with a refresh in flight", d)
	}
	h.v.Close() // idempotent

	h.clock.Advance(time.Hour)
	ctx, cancel = context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start = time.Now()
	h.v.Refresh(ctx)
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("Refresh after Close waited %s", d)
	}
	time.Sleep(50 * time.Millisecond)
	if got := h.requests(); got != 1 {
		t.Errorf("%d requests after Close, want none", got-1)
	}
	fams := h.gather()
	if v := fams.must(t, refreshSuccess, docs1d...); v != 0 {
		t.Errorf("refresh_success = %v after a cancelled refresh", v)
	}
	if strings.Contains(h.logs.String(), "level=warn") {
		t.Errorf("shutting down logged a warning:\n%s", h.logs.String())
	}
}

type recordingRefresher struct {
	mu     sync.Mutex
	budget time.Duration
	calls  int
}

func (r *recordingRefresher) Refresh(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	if dl, ok := ctx.Deadline(); ok {
		r.budget = time.Until(dl)
	}
}

func TestRefreshBudget(t *testing.T) {
	const def = 7 * time.Second
	// A missing or unusable header falls back to the default less the same
	// 10% margin as a header value gets.
	const defBudget = 6300 * time.Millisecond
	for header, want := range map[string]time.Duration{
		"":      defBudget,
		"1":     750 * time.Millisecond,
		"10":    9 * time.Second,
		"30.5":  30500*time.Millisecond - 3050*time.Millisecond,
		"0.4":   200 * time.Millisecond,
		" 2 ":   1750 * time.Millisecond,
		"abc":   defBudget,
		"0":     defBudget,
		"-3":    defBudget,
		"NaN":   defBudget,
		"Inf":   defBudget,
		"1e300": defBudget,
		"10s":   defBudget,
		"1,5":   defBudget,
	} {
		if got := refreshBudget(header, def); got != want {
			t.Errorf("refreshBudget(%q) = %s, want %s", header, got, want)
		}
	}
	if got := refreshBudget("", -1); got != 0 {
		t.Errorf("negative default gave %s", got)
	}

	// Through the handler: Refresh sees the budget, then next serves.
	r := &recordingRefresher{}
	next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	srv := httptest.NewServer(RefreshBeforeScrape(next, r, def))
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL, nil)
	req.Header.Set(ScrapeTimeoutHeader, "4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls != 1 || r.budget > 3600*time.Millisecond || r.budget < 3*time.Second {
		t.Errorf("Refresh called %d times with a budget of %s, want once with ~3.6s", r.calls, r.budget)
	}
	if resp.StatusCode != 200 {
		t.Errorf("HTTP %d", resp.StatusCode)
	}
}
