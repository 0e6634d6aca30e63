package budget_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// grant is one request the shared ledger paid for, between two readings of
// the (one) machine clock: Redis's TIME of the grant lies in [before, after].
type grant struct{ before, after time.Time }

// recorder is a shared ledger that notes every grant.
type recorder struct {
	budget.SharedLedger
	mu     sync.Mutex
	grants []grant
}

func (r *recorder) Take(ctx context.Context, q budget.LedgerQuery) (budget.LedgerState, error) {
	before := time.Now()
	st, err := r.SharedLedger.Take(ctx, q)
	if err == nil && st.Taken {
		r.mu.Lock()
		r.grants = append(r.grants, grant{before, time.Now()})
		r.mu.Unlock()
	}
	return st, err
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.grants)
}

func newBudget(t *testing.T, shared budget.SharedLedger, limit int, window time.Duration) *budget.Budget {
	t.Helper()
	b, err := budget.New(budget.Config{Limit: limit, Window: window, Organization: "acme", Shared: shared})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// Four replicas, three callers each, spend one organization's budget as
// fast as it lets them for a little over two compressed "hours": no window
// ever holds more than the limit, and the budget is used.
func TestReplicasNeverExceedTheLimit(t *testing.T) {
	t.Parallel()
	const (
		limit    = 10
		window   = 2 * time.Second
		replicas = 4
		callers  = 3
		run      = 4500 * time.Millisecond
	)
	addr := testutil.StartRedis(t)
	var recs []*recorder
	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()
	var wg sync.WaitGroup
	for range replicas {
		rec := &recorder{SharedLedger: budget.NewRedisLedger(testutil.NewSharedRedis(t, addr).Client, "acme")}
		recs = append(recs, rec)
		b := newBudget(t, rec, limit, window)
		for range callers {
			wg.Go(func() {
				for ctx.Err() == nil {
					if err := b.Wait(ctx); err != nil && ctx.Err() == nil {
						var ex *budget.ExhaustedError
						if !errors.As(err, &ex) {
							t.Errorf("Wait: %v", err)
							return
						}
					}
				}
			})
		}
	}
	wg.Wait()

	var all []grant
	for _, r := range recs {
		all = append(all, r.grants...)
	}
	slices.SortFunc(all, func(a, b grant) int { return a.after.Compare(b.after) })
	// limit+1 grants span at least the hold (a window and a hundredth)
	// on Redis's clock; each grant's time lies within its readings.
	for i := 0; i+limit < len(all); i++ {
		group := all[i : i+limit+1]
		first := slices.MinFunc(group, func(a, b grant) int { return a.before.Compare(b.before) }).before
		if span := group[limit].after.Sub(first); span < window {
			t.Fatalf("grants %d to %d (%d requests) within %s, less than the window %s", i, i+limit, limit+1, span, window)
		}
	}
	// 0 s, 2.02 s and 4.04 s each free a whole budget.
	if len(all) < 2*limit || len(all) > 3*limit {
		t.Errorf("%d grants in %s, want between %d and %d", len(all), run, 2*limit, 3*limit)
	}
	t.Logf("%d replicas x %d callers: %d grants in %s at %d per %s", replicas, callers, len(all), run, limit, window)
}

// The count lives in Redis: a budget created after another was closed (a
// restarted replica) sees what was spent.
func TestRedisLedgerSurvivesRestart(t *testing.T) {
	t.Parallel()
	addr := testutil.StartRedis(t)
	first := newBudget(t, budget.NewRedisLedger(testutil.NewSharedRedis(t, addr).Client, "acme"), 5, time.Hour)
	for range 3 {
		if err := first.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	_ = first.Close()

	b := newBudget(t, budget.NewRedisLedger(testutil.NewSharedRedis(t, addr).Client, "acme"), 5, time.Hour)
	if s, f := b.Spent(), b.Free(); s != 3 || f != 2 {
		t.Fatalf("after a restart: spent %d, free %d; want 3 and 2", s, f)
	}
	if at := b.NextFree(3); time.Until(at) < 59*time.Minute {
		t.Errorf("NextFree(3) = %s from now, want about an hour", time.Until(at))
	}
	for i, want := range []bool{true, true, false} {
		if got := b.TryTake(); got != want {
			t.Fatalf("TryTake %d: %v, want two more, then none", i+1, got)
		}
	}
	err := b.Wait(budget.WithoutWaiting(context.Background()))
	var ex *budget.ExhaustedError
	if !errors.As(err, &ex) || time.Until(ex.Until) < 59*time.Minute {
		t.Errorf("Wait on a spent budget: %v", err)
	}
	if st := b.State(); st.Spent != 5 || st.Effective != 5 || !st.PausedUntil.IsZero() {
		t.Errorf("State: %+v", st)
	}
	// Another organization's budget is its own.
	if other := newBudget(t, budget.NewRedisLedger(testutil.NewSharedRedis(t, addr).Client, "other"), 5, time.Hour); other.Spent() != 0 {
		t.Errorf("another organization spent %d", other.Spent())
	}
}

// A 429 heard by one replica pauses and halves every replica.
func TestRejectionReachesEveryReplica(t *testing.T) {
	t.Parallel()
	addr := testutil.StartRedis(t)
	a := newBudget(t, budget.NewRedisLedger(testutil.NewSharedRedis(t, addr).Client, "acme"), 10, 2*time.Second)
	b := newBudget(t, budget.NewRedisLedger(testutil.NewSharedRedis(t, addr).Client, "acme"), 10, 2*time.Second)
	a.Rejected(300 * time.Millisecond)
	if b.PausedUntil().IsZero() || b.TryTake() || b.Free() != 0 {
		t.Fatalf("the other replica is not paused: paused until %v, free %d", b.PausedUntil(), b.Free())
	}
	if e := b.Effective(); e != 5 {
		t.Errorf("the other replica's limit: %d, want 5 (halved)", e)
	}
	if err := b.Wait(context.Background()); err != nil { // waits out the pause
		t.Fatal(err)
	}
	if st := b.State(); st.HalvedUntil.IsZero() || st.Spent != 1 || st.Effective != 5 {
		t.Errorf("after the pause: %+v", st)
	}
	for range 4 {
		if !b.TryTake() {
			t.Fatal("TryTake within the halved limit failed")
		}
	}
	if b.TryTake() || a.TryTake() {
		t.Error("more than the halved limit was taken")
	}
}

// Redis goes away mid-run: nothing is paid without it, no panic,
// mintlify_exporter_cluster_up reads 0, and everything resumes by itself
// when it returns.
func TestLedgerOutage(t *testing.T) {
	t.Parallel()
	srv := testutil.NewRedis(t)
	r := testutil.NewSharedRedis(t, srv.Addr)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Run(ctx) }()
	defer func() { cancel(); <-done }()
	rec := &recorder{SharedLedger: budget.NewRedisLedger(r.Client, "acme")}
	b := newBudget(t, rec, 10, time.Hour)

	r.WaitUp(t, true)
	if err := b.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	for range 3 {
		err := b.Wait(context.Background())
		if !errors.Is(err, budget.ErrLedgerUnavailable) {
			t.Fatalf("Wait without Redis: %v, want ErrLedgerUnavailable", err)
		}
	}
	if b.TryTake() || b.Free() != 0 || b.Spent() != 1 {
		t.Errorf("without Redis: free %d, spent %d; want 0 and the last known 1", b.Free(), b.Spent())
	}
	if time.Until(b.NextFree(1)) <= 0 {
		t.Error("NextFree without Redis is now")
	}
	if _, ok, err := r.Leases().Acquire(context.Background(), "refresh", "me", time.Minute); ok || err == nil {
		t.Errorf("Acquire without Redis: %v %v", ok, err)
	}
	r.WaitUp(t, false)
	if n := rec.count(); n != 1 {
		t.Errorf("%d requests paid, want the 1 before the outage", n)
	}
	if e := r.Calls("ledger_take", "error"); e < 4 {
		t.Errorf("ledger_take errors counted: %v, want at least 4", e)
	}

	srv.Start() // empty: this Redis keeps nothing across restarts
	r.WaitUp(t, true)
	if err := b.Wait(context.Background()); err != nil {
		t.Fatalf("after Redis returned: %v", err)
	}
	if rec.count() != 2 || b.Spent() != 1 {
		t.Errorf("after Redis returned: %d paid, spent %d", rec.count(), b.Spent())
	}
}
