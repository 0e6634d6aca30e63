package refresh

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	kitlog "github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// fixedNow is the harness's default time: 15:00 UTC, so that the fake's
// counts for today are well above zero.
var fixedNow = time.Date(2026, 3, 10, 15, 0, 0, 0, time.UTC)

var (
	day1  = analytics.Window{Name: "1d", Days: 1}
	days7 = analytics.Window{Name: "7d", Days: 7}
)

// harness is a Scheduler walking the fake API over real HTTP (httptest),
// on one fake clock shared by the scheduler, the budget, the client and the
// fake. Tests assert on the scheduler's views and on what the fake saw.
type harness struct {
	t      testing.TB
	clock  *testutil.Clock
	fake   *fakeapi.Server
	budget *budget.Budget
	client *apiclient.Client
	// reg holds the client's and the budget's metrics.
	reg   *prometheus.Registry
	sched *Scheduler
	logs  *testutil.SyncBuffer

	// arrived counts the requests that reached the harness's server, held
	// or not.
	arrived atomic.Int64
	// hold, when set, is closed to let the requests it holds answer.
	holdMu sync.Mutex
	hold   chan struct{}
}

type harnessOptions struct {
	fake fakeapi.Options
	// cfg: zero fields get test defaults (project "docs", window 1d, page
	// size 250, max pages 10, shortest interval 5m, the harness clock).
	cfg planConfig
	// finalDay keeps cfg.FinalDayDelay as given; otherwise the final-day
	// walk is disabled (FinalDayDelay -1).
	finalDay bool
	// budget is the analytics budget's limit (0: large enough never to
	// hold a walk back).
	budget        int
	now           time.Time
	clientTimeout time.Duration
}

func newHarness(t testing.TB, o harnessOptions) *harness {
	t.Helper()
	if o.now.IsZero() {
		o.now = fixedNow
	}
	h := &harness{t: t, clock: testutil.NewClock(o.now), logs: &testutil.SyncBuffer{}, reg: prometheus.NewPedanticRegistry()}
	o.fake.APIKey = simKey
	if o.fake.Now == nil {
		o.fake.Now = h.clock.Now
	}
	h.fake = fakeapi.New(o.fake)
	api := httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(api.Close)

	if o.budget == 0 {
		o.budget = 100000
	}
	var err error
	if h.budget, err = budget.New(budget.Config{Limit: o.budget, Now: h.clock.Now}); err != nil {
		t.Fatal(err)
	}
	h.reg.MustRegister(h.budget)
	if o.clientTimeout == 0 {
		o.clientTimeout = 10 * time.Second
	}
	h.client, err = apiclient.New(apiclient.Config{
		BaseURL: api.URL, APIKey: simKey, Timeout: o.clientTimeout,
		MaxRetries:  0, // each fault costs exactly one request
		BackoffBase: time.Millisecond, Now: h.clock.Now, Sleep: h.clock.Sleep,
		Metrics: apiclient.NewMetrics(h.reg), AnalyticsBudget: h.budget,
	})
	if err != nil {
		t.Fatal(err)
	}

	cfg := o.cfg
	if cfg.Projects == nil {
		cfg.Projects = []string{"docs"}
	}
	if cfg.Windows == nil {
		cfg.Windows = []analytics.Window{day1}
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
	if h.sched, err = New(h.client, h.budget, cfg.build(), kitlog.NewLogfmtLogger(h.logs)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.sched.Close) // runs before api.Close, which waits for open requests
	return h
}

// serve answers with the fake, once a hold in place is released.
func (h *harness) serve(w http.ResponseWriter, r *http.Request) {
	h.arrived.Add(1)
	h.holdMu.Lock()
	hold := h.hold
	h.holdMu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	h.fake.ServeHTTP(w, r)
}

// holdRequests keeps every request from answering until release is called:
// a walk in flight for as long as a test needs, without waiting on the
// wall clock.
func (h *harness) holdRequests() (release func()) {
	h.holdMu.Lock()
	defer h.holdMu.Unlock()
	c := make(chan struct{})
	h.hold = c
	return sync.OnceFunc(func() {
		h.holdMu.Lock()
		h.hold = nil
		h.holdMu.Unlock()
		close(c)
	})
}

// refreshDue starts every walk that is due and waits for the walks in
// flight, with a generous deadline.
func (h *harness) refreshDue() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h.sched.RefreshDue(ctx)
}

// requests is how many visitors requests the fake has answered.
func (h *harness) requests() int64 { return h.fake.Requests(fakeapi.Visitors) }

// view is the visitors page walk's view of project and window; it fails
// the test when there is none.
func (h *harness) view(project, window string) View {
	h.t.Helper()
	v, ok := h.findView(project, window)
	if !ok {
		h.t.Fatalf("no view of %s/%s in %+v", project, window, h.sched.Views())
	}
	return v
}

// findView is view without failing.
func (h *harness) findView(project, window string) (View, bool) {
	for _, v := range h.sched.Views() {
		if v.Project == project && v.Window == window && v.Source == sources.NameVisitors && v.Scope == ScopePages {
			return v, true
		}
	}
	return View{}, false
}

// metric is the value of the series of name with exactly the given
// name/value label pairs in h.reg (0 and false when there is none).
func (h *harness) metric(name string, labels ...string) (float64, bool) {
	h.t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		h.t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			if 2*len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, lp := range m.GetLabel() {
				i := indexOfName(labels, lp.GetName())
				if i < 0 || labels[i+1] != lp.GetValue() {
					continue series
				}
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue(), true
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// indexOfName is the index of name among the names of pairs, or -1.
func indexOfName(pairs []string, name string) int {
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i] == name {
			return i
		}
	}
	return -1
}

// traffic is a view's visitors snapshot, failing the test when it has none.
func traffic(t testing.TB, v View) *sources.TrafficSnapshot {
	t.Helper()
	s, ok := v.Data.(*sources.TrafficSnapshot)
	if !ok {
		t.Fatalf("%s/%s serves no visitors snapshot: %+v", v.Project, v.Window, v)
	}
	return s
}

// queryDates are the dateFrom..dateTo of every visitors query the fake saw
// from the i-th on.
func (h *harness) queryDates(from int) []string {
	var out []string
	for _, q := range h.fake.VisitorsQueries()[from:] {
		out = append(out, q.Get("dateFrom")+".."+q.Get("dateTo"))
	}
	return out
}

// waitFor polls cond until it holds (testutil.Eventually: on the bubble's
// clock in a synctest bubble, else a hang guard of testutil.Patience).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, 0, what, cond)
}
