package refresh

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

const walksKey = "mint_walks"

// planReplica is one replica's plan: its own API client, budget (paid from
// the shared ledger) and scheduler, sharing walks through its own
// connection to Redis.
type planReplica struct {
	sched *Scheduler
	*testutil.SharedRedis
}

// clock is a test clock the plans share (leases keep Redis's own time).
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }

func newPlanReplica(t *testing.T, addr, owner, apiURL string, clk *clock, edit ...func(*Config)) *planReplica {
	t.Helper()
	r := testutil.NewSharedRedis(t, addr)
	b, err := budget.New(budget.Config{Limit: 1000, Window: time.Hour, Organization: "acme", Shared: budget.NewRedisLedger(r.Client, "acme")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	client, err := apiclient.New(apiclient.Config{BaseURL: apiURL, APIKey: walksKey, AnalyticsBudget: b, MaxRetries: 0, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	var windows []analytics.Window
	for _, w := range []string{"1d", "7d"} {
		win, _ := analytics.ParseWindow(w)
		windows = append(windows, win)
	}
	cfg := Config{
		Projects: []Project{{
			Project: analytics.Project{ID: "docs", Windows: windows, Location: time.UTC},
			Sources: []sources.Spec{{Name: sources.NameVisitors}, {Name: sources.NameFeedback}, {Name: sources.NameSearches, Settings: map[string]int{"top_queries": 3}}},
		}},
		PageSize: apiclient.MaxPageSize, MinInterval: time.Minute, FinalDayDelay: -1, SiteInterval: -1, Now: clk.now,
		Shared: NewRedisWalks(r.Client, "acme", owner),
	}
	for _, e := range edit {
		e(&cfg)
	}
	s, err := New(client, b, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return &planReplica{sched: s, SharedRedis: r}
}

// samples are every sample of the replica's data, as text, sorted.
func (p *planReplica) samples() []string {
	var out []string
	for _, v := range p.sched.Views() {
		if v.Data == nil {
			continue
		}
		def, _ := sources.ByName(v.Source)
		for _, f := range def.Families {
			f.Emit(v.Data, v.Project, v.Window, func(value float64, lv ...string) {
				out = append(out, fmt.Sprintf("%s%v %v", f.Name, lv, value))
			})
		}
	}
	slices.Sort(out)
	return out
}

// versions are the shared versions of the replica's demands.
func (p *planReplica) versions() map[string]int64 {
	out := map[string]int64{}
	for _, v := range p.sched.Views() {
		out[v.Source+"/"+v.Window+"/"+v.Scope] = v.SharedVersion
	}
	return out
}

// countingAPI is the fake API, counting analytics requests by endpoint and
// date range (one walk of these small sites is one request).
type countingAPI struct {
	mu    sync.Mutex
	walks map[string]int
	fake  http.Handler
}

func (c *countingAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	q := r.URL.Query()
	parts := strings.Split(r.URL.Path, "/")
	c.walks[parts[len(parts)-1]+" "+q.Get("dateFrom")+".."+q.Get("dateTo")]++
	c.mu.Unlock()
	c.fake.ServeHTTP(w, r)
}

func (c *countingAPI) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.walks {
		out[k] = v
	}
	return out
}

// Three replicas plan the same demands at the same moments: each demand is
// walked once between them, every replica then serves the same samples
// (and shows the same shared version), and a replica started later serves
// them at once without a request. When the plan's interval has passed,
// each demand is walked once more, by whichever replica claims it.
func TestReplicasWalkEachDemandOnceAndServeTheSame(t *testing.T) {
	t.Parallel()
	addr := testutil.StartRedis(t)
	clk := &clock{}
	clk.ns.Store(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC).UnixNano())
	api := &countingAPI{walks: map[string]int{}, fake: fakeapi.New(fakeapi.Options{APIKey: walksKey, Paths: 30, Now: clk.now})}
	srv := httptest.NewServer(api)
	defer srv.Close()

	replicas := []*planReplica{
		newPlanReplica(t, addr, "replica-a", srv.URL, clk),
		newPlanReplica(t, addr, "replica-b", srv.URL, clk),
		newPlanReplica(t, addr, "replica-c", srv.URL, clk),
	}
	round := func(name string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		for _, r := range replicas {
			wg.Go(func() { r.sched.RefreshDue(ctx) })
		}
		wg.Wait()
		// The replicas that lost a claim serve the winner's snapshot at
		// the next sync.
		for _, r := range replicas {
			r.sched.Sync(ctx)
		}
		walks := api.snapshot()
		if len(walks) != 6 {
			t.Fatalf("%s: walks of %d demands, want 3 sources × 2 windows: %v", name, len(walks), walks)
		}
		for k, n := range walks {
			if n != 1 {
				t.Errorf("%s: %s walked %d times by three replicas, want once", name, k, n)
			}
		}
		want, wantVersions := replicas[0].samples(), replicas[0].versions()
		if len(want) == 0 {
			t.Fatalf("%s: replica a serves nothing", name)
		}
		for i, r := range replicas[1:] {
			if got := r.samples(); !slices.Equal(got, want) {
				t.Errorf("%s: replica %d serves %d samples unlike replica a's %d", name, i+1, len(got), len(want))
			}
			if got := r.versions(); fmt.Sprint(got) != fmt.Sprint(wantVersions) {
				t.Errorf("%s: replica %d shows versions %v, replica a %v", name, i+1, got, wantVersions)
			}
		}
		for k, v := range wantVersions {
			if v == 0 {
				t.Errorf("%s: %s has no shared version", name, k)
			}
		}
	}
	round("first round")

	// A replica that starts now serves every demand without a request.
	late := newPlanReplica(t, addr, "replica-d", srv.URL, clk)
	late.sched.Sync(context.Background())
	if got, want := late.samples(), replicas[0].samples(); !slices.Equal(got, want) {
		t.Errorf("a replica started late serves %d samples, the others %d", len(got), len(want))
	}
	late.sched.RefreshDue(context.Background())
	for k, n := range api.snapshot() {
		if n != 1 {
			t.Errorf("after a late start: %s walked %d times, want still once", k, n)
		}
	}

	// Past every interval: once more, once each. (Today's data moves on
	// in the fake as its clock does, so the new walks are new data.)
	clk.advance(6 * time.Hour)
	api.mu.Lock()
	clear(api.walks)
	api.mu.Unlock()
	round("after the interval")
}
