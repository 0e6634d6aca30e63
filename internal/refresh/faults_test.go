package refresh

import (
	"cmp"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

// TestVisitorsFaults: after a good snapshot, each upstream fault keeps the
// last good snapshot served, the walk marked failed and counted, its last
// success unchanged, the requests counted by status and a warning logged;
// once the fault clears, the next walk succeeds. (Every source's walks
// against the faults they share: TestEverySourceKeepsItsLastGoodData.)
func TestVisitorsFaults(t *testing.T) {
	tests := []struct {
		name          string
		fault         fakeapi.Fault
		code          string
		requests      float64
		clientTimeout time.Duration
		// retry is when the next walk is due after the fault (0: in 5
		// minutes, the interval).
		retry time.Duration
	}{
		{name: "500", fault: fakeapi.Fault{Status: 500}, code: "500", requests: 1},
		{name: "503 with Retry-After", fault: fakeapi.Fault{Status: 503, RetryAfter: "1"}, code: "503", requests: 1},
		{name: "429 with Retry-After", fault: fakeapi.Fault{Status: 429, RetryAfter: "1"}, code: "429", requests: 1},
		{name: "latency beyond the client timeout", fault: fakeapi.Fault{Latency: 5 * time.Second}, code: "error", requests: 1, clientTimeout: 500 * time.Millisecond},
		{name: "malformed JSON", fault: fakeapi.Fault{MalformedJSON: true}, code: "200", requests: 1},
		{name: "endless hasMore", fault: fakeapi.Fault{EndlessHasMore: true}, code: "200", requests: 10, retry: time.Hour}, // MaxPages 10; pages that did not end wait a budget window
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 300}, clientTimeout: tc.clientTimeout})
			h.refreshDue()
			good := h.view("docs", "1d")
			if !good.OK || len(traffic(t, good).Paths) != 300 {
				t.Fatalf("good snapshot: ok %v, %d paths", good.OK, len(traffic(t, good).Paths))
			}
			requests := func() float64 {
				v, _ := h.metric("mintlify_api_requests_total", "endpoint", "visitors", "code", tc.code)
				return v
			}
			before := requests()

			h.fake.SetFault(fakeapi.Visitors, tc.fault)
			h.clock.Advance(5 * time.Minute)
			h.refreshDue()
			bad := h.view("docs", "1d")
			if bad.Data != good.Data {
				t.Error("during the fault: the last good snapshot is not served")
			}
			if bad.OK || !bad.Attempted {
				t.Errorf("ok %v, attempted %v; want false, true", bad.OK, bad.Attempted)
			}
			if !bad.LastSuccess.Equal(good.LastSuccess) {
				t.Errorf("last success moved from %s to %s on a failure", good.LastSuccess, bad.LastSuccess)
			}
			if bad.Failures != 1 || bad.Err == nil {
				t.Errorf("failures %d, err %v after one failed walk; want 1 and the error", bad.Failures, bad.Err)
			}
			if v := requests() - before; v != tc.requests {
				t.Errorf("mintlify_api_requests_total{code=%q} grew by %v, want %v", tc.code, v, tc.requests)
			}
			logs := h.logs.String()
			if !regexp.MustCompile(`level=warn .*project=docs source=visitors window=1d .*err=`).MatchString(logs) {
				t.Errorf("no warning with project, window and error in the log:\n%s", logs)
			}

			h.fake.ClearFaults()
			retry := cmp.Or(tc.retry, 5*time.Minute)
			h.clock.Advance(retry) // past any Retry-After, on the client's clock too
			h.refreshDue()
			again := h.view("docs", "1d")
			if want := good.LastSuccess.Add(5*time.Minute + retry); !again.OK || !again.LastSuccess.Equal(want) {
				t.Errorf("after the fault cleared: ok %v, last success %s; want true, %s", again.OK, again.LastSuccess, want)
			}
			if n := len(traffic(t, again).Paths); n != 300 {
				t.Errorf("after the fault cleared: %d paths, want 300", n)
			}
			if strings.Contains(h.logs.String(), simKey) {
				t.Error("the API key appears in the log")
			}
		})
	}
}

// TestRetryAfter: after a 503 with Retry-After, no walk starts before it
// has passed on the exporter's clock, RefreshDue does not wait for it, and
// the views keep serving the last snapshot meanwhile.
func TestRetryAfter(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 50}})
	h.refreshDue()
	h.fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Status: 503, RetryAfter: "120", Remaining: 1})
	h.clock.Advance(5 * time.Minute)
	h.refreshDue()
	if v := h.view("docs", "1d"); v.OK || h.requests() != 2 {
		t.Fatalf("503: ok %v, %d requests; want false and 2", v.OK, h.requests())
	}
	h.clock.Advance(time.Minute) // past the retry interval, within Retry-After
	start := time.Now()
	h.refreshDue()
	if d := time.Since(start); d >= time.Second {
		t.Errorf("RefreshDue during Retry-After waited %s instead of leaving the walk for later", d)
	}
	start = time.Now()
	v := h.view("docs", "1d")
	if d := time.Since(start); d >= time.Second {
		t.Errorf("the views took %s during Retry-After", d)
	}
	if got := h.requests(); got != 2 {
		t.Errorf("a request was sent a minute into a Retry-After of 2 minutes (%d requests)", got)
	}
	if v.Data == nil || len(traffic(t, v).Paths) != 50 {
		t.Error("the last snapshot is not served during Retry-After")
	}
	h.clock.Advance(61 * time.Second) // Retry-After has passed
	h.refreshDue()
	if got := h.requests(); got != 3 {
		t.Errorf("%d requests after Retry-After passed, want 3", got)
	}
	if !h.view("docs", "1d").OK {
		t.Error("after Retry-After: the walk did not succeed")
	}
}

// TestRetryInterval: a failed walk is not retried before the retry
// interval (30s at most) has passed, however often RefreshDue runs.
func TestRetryInterval(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 50}})
	h.refreshDue()
	h.fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Status: 500})
	h.clock.Advance(5 * time.Minute)
	h.refreshDue()
	if h.requests() != 2 {
		t.Fatalf("%d requests, want 2", h.requests())
	}
	for range 5 {
		h.refreshDue()
	}
	h.clock.Advance(29 * time.Second)
	h.refreshDue()
	if got := h.requests(); got != 2 {
		t.Errorf("RefreshDue within 30s of a failure sent %d requests", got-2)
	}
	h.clock.Advance(time.Second)
	h.refreshDue()
	if got := h.requests(); got != 3 {
		t.Errorf("30s after a failure: %d requests, want 3", got)
	}
}

// TestMaxStaleness: while walks fail, a snapshot is served until it is
// older than its planned interval plus MaxStaleness; then the view serves
// no data but keeps its last success, outcome and plan.
func TestMaxStaleness(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 30},
		cfg: planConfig{Config: Config{MinInterval: time.Minute, MaxStaleness: 10 * time.Minute}}})
	h.refreshDue()
	good := h.view("docs", "1d")
	if good.Interval != time.Minute {
		t.Fatalf("interval %s, want 1m", good.Interval)
	}
	h.fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Status: 500})

	h.clock.Advance(11 * time.Minute) // exactly interval + MaxStaleness old: still served
	h.refreshDue()
	if h.requests() != 2 {
		t.Fatalf("%d requests, want 2 (one failed walk)", h.requests())
	}
	if h.view("docs", "1d").Data != good.Data {
		t.Error("a snapshot interval + MaxStaleness old was not served")
	}
	h.clock.Advance(time.Second)
	h.refreshDue()
	v := h.view("docs", "1d")
	if v.Data != nil {
		t.Error("a snapshot older than interval + MaxStaleness is still served")
	}
	if v.OK || !v.Attempted || v.Interval != time.Minute {
		t.Errorf("ok %v, attempted %v, interval %s; want false, true, 1m", v.OK, v.Attempted, v.Interval)
	}
	if !v.LastSuccess.Equal(good.LastSuccess) {
		t.Errorf("last success %s, want %s (its age shows why data is missing)", v.LastSuccess, good.LastSuccess)
	}

	h.fake.ClearFaults()
	h.clock.Advance(time.Minute)
	h.refreshDue()
	if v := h.view("docs", "1d"); !v.OK || v.Data == nil || len(traffic(t, v).Paths) != 30 {
		t.Errorf("after recovery: ok %v, data %v", v.OK, v.Data != nil)
	}
}

// TestMaxStalenessFollowsPlan: a window the budget walks every few hours
// is not dropped an hour after its walk when MaxStaleness is an hour:
// staleness is judged against the planned interval.
func TestMaxStalenessFollowsPlan(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 30},
		cfg: planConfig{Windows: []analytics.Window{day1, {Name: "30d", Days: 30, Interval: 6 * time.Hour}}, Config: Config{MinInterval: time.Minute, MaxStaleness: time.Hour}}})
	h.refreshDue()
	if v := h.view("docs", "30d"); v.Interval != 6*time.Hour {
		t.Fatalf("30d interval %s, want its own 6h", v.Interval)
	}
	h.clock.Advance(5 * time.Hour)
	h.refreshDue()
	if h.view("docs", "30d").Data == nil {
		t.Error("a 30d snapshot planned every 6h was dropped after 5h")
	}
	if h.requests() != 3 {
		t.Errorf("%d requests, want 3 (both windows, then 1d alone)", h.requests())
	}
	h.fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Status: 500})
	// A window planned less often than hourly may start up to an hour
	// late, so it is served for its interval, that hour and max staleness.
	h.clock.Advance(3 * time.Hour) // 8h: the 6h walk failed, within the grace
	h.refreshDue()
	if h.view("docs", "30d").Data == nil {
		t.Error("a 30d snapshot 8h old (planned 6h + 1h late + 1h staleness) was dropped")
	}
	h.clock.Advance(time.Second)
	if h.view("docs", "30d").Data != nil {
		t.Error("a 30d snapshot older than 6h + 1h + 1h still served")
	}
}
