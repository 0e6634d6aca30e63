package refresh

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

// TestQueryDates checks the dates the API receives for a fixed clock and
// time zone (23:30 in New York is already tomorrow in UTC), and that each
// window serves the snapshot of its own dates.
func TestQueryDates(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 10, 23, 30, 0, 0, ny)
	for _, tc := range []struct {
		loc    *time.Location
		d1, d7 string // dateFrom..dateTo
	}{
		{ny, "2026-03-10..2026-03-11", "2026-03-04..2026-03-11"},
		{time.UTC, "2026-03-11..2026-03-12", "2026-03-05..2026-03-12"},
	} {
		t.Run(tc.loc.String(), func(t *testing.T) {
			h := newHarness(t, harnessOptions{now: now, fake: fakeapi.Options{Paths: 20},
				cfg: planConfig{Windows: []analytics.Window{day1, days7}, Location: tc.loc}})
			h.refreshDue()
			got := h.queryDates(0)
			slices.Sort(got)
			if want := slices.Sorted(slices.Values([]string{tc.d1, tc.d7})); !slices.Equal(got, want) {
				t.Errorf("queries %v, want %v", got, want)
			}
			for _, q := range h.fake.VisitorsQueries() {
				if q.Get("limit") != "250" {
					t.Errorf("limit = %q, want 250", q.Get("limit"))
				}
			}
			for w, want := range map[string]string{"1d": tc.d1, "7d": tc.d7} {
				v := h.view("docs", w)
				if !v.OK || v.Data == nil {
					t.Fatalf("%s: ok %v, data %v after a walk", w, v.OK, v.Data != nil)
				}
				if m := v.Data.Meta(); m.DateFrom+".."+m.DateTo != want {
					t.Errorf("%s serves %s..%s, want %s", w, m.DateFrom, m.DateTo, want)
				}
			}
		})
	}
}

// TestPagination: a walk reads every page at offsets of the page size, and
// the snapshot holds every path; the next walk reads them all again.
func TestPagination(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 1234}})
	h.refreshDue()
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
	v := h.view("docs", "1d")
	s := traffic(t, v)
	distinct := map[string]bool{}
	for _, p := range s.Paths {
		distinct[p.Path] = true
	}
	if !v.OK || len(s.Paths) != 1234 || len(distinct) != 1234 || s.Dropped != 0 {
		t.Errorf("ok %v, %d paths (%d distinct), %d dropped; want true, 1234, 1234, 0", v.OK, len(s.Paths), len(distinct), s.Dropped)
	}

	// The next walk, once the planned interval has passed, walks all pages
	// again.
	h.clock.Advance(5 * time.Minute)
	h.refreshDue()
	if got := h.requests(); got != 10 {
		t.Errorf("after a second refresh: %d requests, want 10", got)
	}
}

// TestRefreshInterval: walks follow the plan. Reading the views never
// reaches the API; RefreshDue inside the planned interval sends nothing;
// the first one after it walks once. The views carry the plan.
func TestRefreshInterval(t *testing.T) {
	// 240 paths in pages of 50: 5 requests a walk.
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 240}, cfg: planConfig{Config: Config{PageSize: 50}}})
	h.refreshDue()
	if got := h.requests(); got != 5 {
		t.Fatalf("first walk: %d requests, want 5", got)
	}
	if v := h.view("docs", "1d"); v.Interval != 5*time.Minute {
		t.Errorf("interval %s, want the shortest interval 5m (the budget pays for it)", v.Interval)
	}
	for i := range 30 {
		if i == 15 {
			h.clock.Advance(5*time.Minute - time.Second) // still inside the interval
		}
		if i%2 == 0 {
			h.refreshDue()
		}
		if v := h.view("docs", "1d"); v.Data == nil || len(traffic(t, v).Paths) != 240 {
			t.Fatalf("view %d: not the cached 240 paths", i)
		}
	}
	if got := h.requests(); got != 5 {
		t.Fatalf("RefreshDue inside the interval made %d extra requests", got-5)
	}
	h.clock.Advance(time.Second)
	// Due now, but reading the views (what a scrape does) never walks.
	for range 5 {
		h.sched.Views()
	}
	if got := h.requests(); got != 5 {
		t.Fatalf("reading the views sent %d requests", got-5)
	}
	h.refreshDue()
	h.refreshDue()
	if got := h.requests(); got != 10 {
		t.Fatalf("after the interval: %d requests in all, want 10 (one walk)", got)
	}
}

// TestConcurrentRefreshDueShareOneWalk: concurrent RefreshDue calls of a
// cold scheduler share one walk, and each returns with its data.
func TestConcurrentRefreshDueShareOneWalk(t *testing.T) {
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
					if v, ok := h.findView("docs", "1d"); ok && v.Data != nil {
						paths[i] = len(traffic(t, v).Paths)
					}
				})
			}
			close(start)
			wg.Wait()
			for i := range callers {
				if paths[i] != tc.paths {
					t.Errorf("caller %d: RefreshDue returned with %d paths to serve, want %d", i, paths[i], tc.paths)
				}
			}
			if got := h.requests(); got != tc.wantRequests {
				t.Errorf("%d concurrent refreshes sent %d requests, want %d (one walk)", callers, got, tc.wantRequests)
			}
		})
	}
}

// TestViewsBeforeAnyWalk: a cold scheduler's views answer at once, send
// nothing, and show no walk and no data, with the planned interval.
func TestViewsBeforeAnyWalk(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 20}})
	start := time.Now()
	v := h.view("docs", "1d")
	if d := time.Since(start); d > 30*time.Second { // a hang guard: views never wait for a walk
		t.Errorf("the views of a cold scheduler took %s", d)
	}
	if h.requests() != 0 {
		t.Fatalf("reading the views sent %d requests", h.requests())
	}
	if v.Attempted || v.OK || !v.LastSuccess.IsZero() || v.Duration != 0 || v.Data != nil {
		t.Errorf("cold view %+v: want not attempted, not ok, no last success, no duration, no data", v)
	}
	if v.Interval != 5*time.Minute {
		t.Errorf("cold interval %s, want 5m", v.Interval)
	}
}

// TestViewsNotHeldUpBySlowWalk: the views never wait for a walk in
// flight; they answer at once with the last snapshot and the last outcome,
// and the walk completes on its own.
func TestViewsNotHeldUpBySlowWalk(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 50}})
	h.refreshDue()
	good := h.view("docs", "1d")

	release := h.holdRequests()
	defer release()
	h.clock.Advance(5 * time.Minute)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		h.sched.RefreshDue(ctx)
	}()
	waitFor(t, "the slow walk never reached the API", func() bool { return h.arrived.Load() == 2 })
	start := time.Now()
	v := h.view("docs", "1d")
	if d := time.Since(start); d >= time.Second {
		t.Errorf("the views took %s during a walk", d)
	}
	select {
	case <-done:
		t.Fatal("the slow walk ended before the views were read: the test proves nothing")
	default:
	}
	if v.Data != good.Data || !v.LastSuccess.Equal(good.LastSuccess) {
		t.Error("the views did not serve the cached snapshot during a walk")
	}
	if !v.OK || !v.Running {
		t.Errorf("during the walk: ok %v, running %v; want the last outcome (true) and true", v.OK, v.Running)
	}
	release()
	<-done
	v = h.view("docs", "1d")
	if want := good.LastSuccess.Add(5 * time.Minute); !v.OK || !v.LastSuccess.Equal(want) {
		t.Errorf("after the slow walk: ok %v, last success %s; want true, %s", v.OK, v.LastSuccess, want)
	}
	if got := h.requests(); got != 2 {
		t.Errorf("%d requests, want 2", got)
	}
}

// TestClose: Close cancels a walk in flight and returns promptly;
// afterwards nothing starts and the last states are still served.
func TestClose(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 20}})
	release := h.holdRequests()
	defer release()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	start := time.Now()
	h.sched.RefreshDue(ctx)
	cancel()
	// Hang guards, not measurements: a busy machine deschedules the test
	// for seconds; a RefreshDue or Close that waited for the held walk
	// would wait for ever.
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("RefreshDue with a 200ms context took %s", d)
	}
	waitFor(t, "the walk never reached the API", func() bool { return h.arrived.Load() == 1 })

	start = time.Now()
	h.sched.Close()
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("Close took %s with a walk in flight", d)
	}
	h.sched.Close() // idempotent
	release()

	// After Close, RefreshDue returns at once: before its context's
	// deadline (10s, which no descheduling on a busy machine reaches),
	// rather than a wall-clock bound of its own.
	h.clock.Advance(time.Hour)
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start = time.Now()
	h.sched.RefreshDue(ctx)
	if ctx.Err() != nil {
		t.Errorf("RefreshDue after Close waited %s, until its context ended", time.Since(start))
	}
	// RefreshDue waits for every walk it started to end: a walk started
	// after Close would have sent its request before it returned.
	if got := h.arrived.Load(); got != 1 {
		t.Errorf("%d requests after Close, want none", got-1)
	}
	if v := h.view("docs", "1d"); v.OK {
		t.Error("a cancelled walk is served as a success")
	}
	if strings.Contains(h.logs.String(), "level=warn") {
		t.Errorf("shutting down logged a warning:\n%s", h.logs.String())
	}
}

// TestWaitForBudget: with an analytics budget smaller than one round of
// walks, the scheduler waits for the budget instead of sending: the API
// never answers 429, a walk whose cost is known starts only when the
// budget pays for all of it, and the plan stretches to what the budget
// pays for. Two projects of 5 pages each, 6 requests per hour.
func TestWaitForBudget(t *testing.T) {
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
		budget: 6,
		cfg:    planConfig{Projects: []string{"a", "b"}, Config: Config{PageSize: 1, MinInterval: 5 * time.Minute, Concurrency: 1}}, // one walk at a time: which walk gets the budget is deterministic
	})
	t0 := h.clock.Now()
	stays := func(want int64, what string) {
		t.Helper()
		// No sleep: the harness starts walks only in refreshDue, which
		// returns once every walk it started has ended, so a walk that
		// should have waited has sent its requests by now.
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
	if !h.view("a", "1d").OK {
		t.Error("a: not ok after its walk")
	}
	if b := h.view("b", "1d"); b.OK || !b.LastSuccess.IsZero() {
		t.Errorf("b: ok %v, last success %s on a spent budget; want false and none", b.OK, b.LastSuccess)
	}
	if got := h.budget.Spent(); got != 5 {
		t.Errorf("budget spent = %d, want 5", got)
	}
	h.clock.Advance(10 * time.Minute) // not yet the budget's window
	h.refreshDue()
	stays(5, "b still waiting")

	// An hour later (and the hundredth of it the budget keeps for the
	// API's clock) a's requests have left the window and b walks.
	h.clock.Set(t0.Add(time.Hour + time.Minute))
	h.refreshDue()
	stays(10, "b's walk after an hour")
	// Both walks are known to take 5 requests now: the plan stretches the
	// interval to what the budget pays for, 2 × 5 requests per interval
	// within 6 per hour (the planner keeps some of it free), and no longer
	// than half the budget would pay for.
	interval := h.view("a", "1d").Interval
	if interval < 2*5*time.Hour/6 || interval > 2*5*time.Hour/3 {
		t.Errorf("interval %s: not what a budget of 6 per hour pays for walks of 2 × 5 requests", interval)
	}
	for _, p := range []string{"a", "b"} {
		v := h.view(p, "1d")
		if !v.OK {
			t.Errorf("%s: not ok", p)
		}
		if v.Interval != interval {
			t.Errorf("%s: interval %s, want %s as for a (same cost, same window)", p, v.Interval, interval)
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
	if got := h.view("a", "1d").LastSuccess; !got.Equal(x) {
		t.Errorf("a last walked at %s, want %s", got, x)
	}
	if got, want := h.view("b", "1d").LastSuccess, t0.Add(time.Hour+time.Minute); !got.Equal(want) {
		t.Errorf("b last walked at %s, want %s (it waits for the budget)", got, want)
	}
	// An hour later a's requests have left the window: b walks.
	h.clock.Set(x.Add(time.Hour + time.Minute))
	h.refreshDue()
	stays(20, "b's walk once the budget pays for it")
	if got, want := h.view("b", "1d").LastSuccess, x.Add(time.Hour+time.Minute); !got.Equal(want) {
		t.Errorf("b last walked at %s, want %s", got, want)
	}
	if v, ok := h.metric("mintlify_api_budget_rejections_total", "organization", "default"); !ok || v != 0 {
		t.Errorf("budget rejections = %v (exported: %v), want 0", v, ok)
	}
}
