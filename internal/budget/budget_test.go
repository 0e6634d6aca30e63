package budget

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	tu "github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"testing/synctest"
)

var t0 = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

func newBudget(t *testing.T, limit int) (*Budget, *tu.Clock) {
	t.Helper()
	clock := tu.NewClock(t0)
	b, err := New(Config{Limit: limit, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return b, clock
}

func TestNewRejectsBadLimits(t *testing.T) {
	for _, n := range []int{0, -1} {
		if _, err := New(Config{Limit: n}); err == nil {
			t.Errorf("limit %d accepted", n)
		}
	}
	if _, err := New(Config{Limit: 1, Window: -time.Second}); err == nil {
		t.Error("negative window accepted")
	}
}

// hold is how long a request holds its slot: the hour and a hundredth of it
// for the API's clock.
const hold = time.Hour + 36*time.Second

// TestRollingWindow: never more than the limit in any rolling hour; a slot
// frees one hour (and a hundredth) after the request that held it.
func TestRollingWindow(t *testing.T) {
	b, clock := newBudget(t, 3)
	for i := range 3 {
		if !b.TryTake() {
			t.Fatalf("request %d refused", i)
		}
		clock.Advance(10 * time.Minute)
	}
	if b.TryTake() {
		t.Fatal("a 4th request within the hour was allowed")
	}
	if got, want := b.NextFree(1), t0.Add(hold); !got.Equal(want) {
		t.Errorf("NextFree(1) = %s, want %s", got, want)
	}
	if got, want := b.NextFree(3), t0.Add(20*time.Minute+hold); !got.Equal(want) {
		t.Errorf("NextFree(3) = %s, want %s", got, want)
	}
	clock.Set(t0.Add(hold - time.Nanosecond))
	if b.TryTake() {
		t.Fatal("allowed before the first request left the window")
	}
	clock.Set(t0.Add(hold))
	if !b.TryTake() || b.Spent() != 3 || b.Free() != 0 {
		t.Fatalf("at one hour: spent %d free %d", b.Spent(), b.Free())
	}
}

// TestRejectedHalvesAndPauses: after a 429 nothing is sent until
// Retry-After (a minute if none), and for an hour only half the limit.
func TestRejectedHalvesAndPauses(t *testing.T) {
	b, clock := newBudget(t, 10)
	b.Rejected(0)
	if b.Free() != 0 || !b.PausedUntil().Equal(t0.Add(time.Minute)) {
		t.Fatalf("after a 429 without Retry-After: free %d, paused until %s", b.Free(), b.PausedUntil())
	}
	clock.Advance(time.Minute)
	if b.Effective() != 5 || b.Free() != 5 {
		t.Fatalf("after the pause: effective %d free %d, want 5 and 5", b.Effective(), b.Free())
	}
	for range 5 {
		b.TryTake()
	}
	if b.TryTake() {
		t.Fatal("more than half the limit within the hour after a 429")
	}
	if got, want := b.NextFree(1), t0.Add(time.Hour); !got.Equal(want) {
		t.Errorf("NextFree = %s, want the end of the halved hour %s", got, want)
	}
	clock.Set(t0.Add(time.Hour))
	if b.Effective() != 10 || b.Free() != 5 {
		t.Errorf("an hour later: effective %d free %d, want 10 and 5", b.Effective(), b.Free())
	}
	b.Rejected(30 * time.Minute)
	if !b.PausedUntil().Equal(t0.Add(90 * time.Minute)) {
		t.Errorf("Retry-After 30m: paused until %s", b.PausedUntil())
	}
}

// In a synctest bubble: the budget's default clock is the bubble's, so the
// third request goes out exactly when the first one's slot frees.
func TestWait(t *testing.T) {
	synctest.Test(t, testWait)
}

func testWait(t *testing.T) {
	b, err := New(Config{Limit: 2, Window: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	start := time.Now()
	for range 3 {
		if err := b.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d != 202*time.Millisecond {
		t.Errorf("3 requests under a budget of 2 per 200ms went out in %s, want 202ms: the window and the budget's margin", d)
	}
	// A deadline before the next slot fails at once, without sending.
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	b.Wait(ctx) // spend the second slot of this window
	var ex *ExhaustedError
	if err := b.Wait(short); !errors.As(err, &ex) {
		t.Fatalf("Wait past the deadline = %v, want ExhaustedError", err)
	}
	if err := b.Wait(WithoutWaiting(ctx)); !errors.As(err, &ex) || !strings.Contains(err.Error(), "budget spent") {
		t.Fatalf("Wait without waiting on a spent budget = %v", err)
	}
	if b.Spent() != 2 {
		t.Errorf("spent %d, want 2: refused waits must not count", b.Spent())
	}
}

func TestMetrics(t *testing.T) {
	b, _ := newBudget(t, 60)
	b.TryTake()
	b.TryTake()
	b.Rejected(time.Second)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(b)
	want := `
# HELP mintlify_api_budget_effective_requests_per_hour Analytics requests per rolling hour the exporter allows itself now, halved for an hour after a 429.
# TYPE mintlify_api_budget_effective_requests_per_hour gauge
mintlify_api_budget_effective_requests_per_hour{organization="default"} 30
# HELP mintlify_api_budget_rejections_total Analytics requests the API refused with HTTP 429 because the organization's quota was spent.
# TYPE mintlify_api_budget_rejections_total counter
mintlify_api_budget_rejections_total{organization="default"} 1
# HELP mintlify_api_budget_requests_per_hour Analytics requests the exporter may send per rolling hour (--mintlify.analytics-budget).
# TYPE mintlify_api_budget_requests_per_hour gauge
mintlify_api_budget_requests_per_hour{organization="default"} 60
# HELP mintlify_api_budget_spent_requests Analytics requests sent in the last rolling hour.
# TYPE mintlify_api_budget_spent_requests gauge
mintlify_api_budget_spent_requests{organization="default"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if probs, err := testutil.CollectAndLint(b); err != nil || len(probs) > 0 {
		t.Errorf("lint: %v %v", probs, err)
	}
}
