package jobleader_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/internal/cluster"
	"github.com/mintlify-exporter/mintlify_exporter/internal/jobleader"
	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
	tu "github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/tracker"
	"github.com/mintlify-exporter/mintlify_exporter/internal/tracker/store"
)

const lease = 600 * time.Millisecond

// replica is one Leader behind its own HTTP server, whose terms answer
// with the replica's name after writing to the shared state.
type replica struct {
	name    string
	leader  *jobleader.Leader
	srv     *httptest.Server
	reg     *prometheus.Registry
	stop    context.CancelFunc
	done    chan struct{}
	stopped atomic.Int32
}

func newReplica(t *testing.T, name, addr string) *replica {
	t.Helper()
	cfg := cluster.Defaults()
	cfg.Address, cfg.Timeout = addr, 150*time.Millisecond
	c, err := cluster.New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	r := &replica{name: name, reg: prometheus.NewRegistry(), done: make(chan struct{})}
	// The server exists before the leader, so the leader can advertise it.
	var h atomic.Pointer[jobleader.Leader]
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { h.Load().ServeHTTP(w, req) }))
	t.Cleanup(r.srv.Close)
	start := func(_ context.Context, st tracker.StateStore, treg prometheus.Registerer) (*jobleader.Term, error) {
		served := prometheus.NewCounter(prometheus.CounterOpts{Name: "test_term_requests_total", Help: "Requests the term served."})
		treg.MustRegister(served)
		return &jobleader.Term{
			Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				served.Inc()
				if err := st.Apply(store.Op{Bucket: store.Jobs, Key: "last", Value: []byte(name)}); err != nil {
					http.Error(w, err.Error(), http.StatusServiceUnavailable)
					return
				}
				_, _ = io.WriteString(w, name+" "+req.Header.Get("X-Mintlify-Exporter-Forwarded"))
			}),
			Status:      func() *status.Jobs { return &status.Jobs{} },
			SetProjects: func([]string) {},
			Stop:        func() { r.stopped.Add(1) },
		}, nil
	}
	l, err := jobleader.New(jobleader.Options{Cluster: c, Owner: name, Advertise: r.srv.URL, LeaseDuration: lease, Start: start, Registerer: r.reg})
	if err != nil {
		t.Fatal(err)
	}
	h.Store(l)
	r.leader = l
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	go func() { defer close(r.done); l.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-r.done })
	return r
}

func (r *replica) get(t *testing.T, header string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, r.srv.URL+"/api/v2/agent/p1/jobs", nil)
	if header != "" {
		req.Header.Set("X-Mintlify-Exporter-Forwarded", header)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// holds reads the replica's mintlify_exporter_cluster_agent_gateway.
func (r *replica) holds() bool {
	mfs, _ := r.reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == "mintlify_exporter_cluster_agent_gateway" {
			return mf.GetMetric()[0].GetGauge().GetValue() == 1
		}
	}
	return false
}

// series counts the series of name that reg exports.
func series(reg *prometheus.Registry, name string) int {
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == name {
			return len(mf.GetMetric())
		}
	}
	return 0
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Two replicas: one runs the gateway, the other forwards to it (marked as
// forwarded, answered by the holder's term, which writes to the shared
// state); the term's metrics are exported by the holder alone; when the
// holder stops, the other takes over, and a forwarded request that reaches
// a replica that does not hold the gateway is not forwarded again.
func TestOneReplicaRunsTheGatewayTheOtherForwards(t *testing.T) {
	t.Parallel()
	addr := tu.StartRedis(t)
	a := newReplica(t, "a", addr)
	waitFor(t, "a holds the gateway", a.holds)
	b := newReplica(t, "b", addr)
	time.Sleep(lease / 2) // b contends and loses
	if b.holds() {
		t.Fatal("two replicas hold the gateway")
	}
	if code, body := b.get(t, ""); code != http.StatusOK || body != "a 1" {
		t.Errorf("request to b: %d %q, want a's term answering a forwarded request", code, body)
	}
	if code, body := a.get(t, ""); code != http.StatusOK || body != "a " {
		t.Errorf("request to a: %d %q, want a's term", code, body)
	}
	if n := series(a.reg, "test_term_requests_total"); n != 1 {
		t.Errorf("the holder exports %d term series, want 1", n)
	}
	if n := series(b.reg, "test_term_requests_total"); n != 0 {
		t.Errorf("the other replica exports %d term series, want 0", n)
	}
	// A request already forwarded once is never forwarded again.
	if code, body := b.get(t, "1"); code != http.StatusServiceUnavailable || !strings.Contains(body, `"error"`) {
		t.Errorf("forwarded request to a non-holder: %d %s, want 503 JSON", code, body)
	}

	// a shuts down (gives the lease up): b takes over.
	a.stop()
	<-a.done
	if a.stopped.Load() != 1 {
		t.Errorf("a's term stopped %d times, want once", a.stopped.Load())
	}
	waitFor(t, "b holds the gateway", b.holds)
	if code, body := b.get(t, ""); code != http.StatusOK || body != "b " {
		t.Errorf("request to b after the takeover: %d %q", code, body)
	}
}

// With Redis away and nobody holding the gateway, a replica answers 503
// with a JSON error and a Retry-After, never accepting what it could not
// record.
func TestNoHolderAnswers503(t *testing.T) {
	t.Parallel()
	r := tu.NewRedis(t)
	addr := r.Addr
	r.Stop()
	x := newReplica(t, "x", addr)
	time.Sleep(lease)
	code, body := x.get(t, "")
	var e struct {
		Error string `json:"error"`
	}
	if code != http.StatusServiceUnavailable || json.Unmarshal([]byte(body), &e) != nil || e.Error == "" {
		t.Errorf("with Redis away: %d %s, want 503 with a JSON error", code, body)
	}
}

// holdAs takes the agent lease in Redis as a replica advertising url, as
// a replica that then dies or hangs up would hold it.
func holdAs(t *testing.T, addr, url string) {
	t.Helper()
	cfg := cluster.Defaults()
	cfg.Address = addr
	c, err := cluster.New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, ok, err := c.Leases().Acquire(context.Background(), cluster.AgentLease, "z@"+url, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire: %v %v", ok, err)
	}
}

// A forward that reached the holder, which then hung up without an
// answer, has an unknown outcome: 502, never 503 ("not done"), so that a
// client without an Idempotency-Key does not create the job again blindly.
func TestForwardWithoutAnswerIs502(t *testing.T) {
	t.Parallel()
	addr := tu.StartRedis(t)
	hangUp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close() // the request was read: the holder died under it
		}
	}))
	defer hangUp.Close()
	holdAs(t, addr, hangUp.URL)
	x := newReplica(t, "x", addr)
	code, body := x.get(t, "")
	if code != http.StatusBadGateway || !strings.Contains(body, "outcome is unknown") {
		t.Errorf("forward to a holder that hung up: %d %s, want 502 saying the outcome is unknown", code, body)
	}
}

// A holder that cannot be reached got nothing: 503, safe to retry.
func TestForwardToUnreachableHolderIs503(t *testing.T) {
	t.Parallel()
	addr := tu.StartRedis(t)
	gone := httptest.NewServer(http.NotFoundHandler())
	url := gone.URL
	gone.Close() // nothing listens there any more
	holdAs(t, addr, url)
	x := newReplica(t, "x", addr)
	code, body := x.get(t, "")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, `"error"`) {
		t.Errorf("forward to an unreachable holder: %d %s, want 503 JSON", code, body)
	}
}

// gauge reads a gauge of the replica's registry (-1 when missing).
func (r *replica) gauge(name string) float64 {
	mfs, _ := r.reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}

// Redis restarted without its data (a Redis without persistence): the
// replicas notice the state's marker is gone and refuse the gateway, on
// every replica, with a 503 naming what to do and
// mintlify_exporter_cluster_agent_state_lost 1, instead of starting a
// term on the empty state (where a retried Idempotency-Key would create
// its job a second time); once an operator accepts the state, a replica
// runs the gateway again.
func TestLostStateStopsTheGatewayUntilAccepted(t *testing.T) {
	t.Parallel()
	srv := tu.NewRedis(t)
	a := newReplica(t, "a", srv.Addr)
	waitFor(t, "a holds the gateway", a.holds)
	b := newReplica(t, "b", srv.Addr)
	if code, body := b.get(t, ""); code != http.StatusOK || body != "a 1" {
		t.Fatalf("before the loss: %d %q", code, body)
	}
	if a.gauge("mintlify_exporter_cluster_agent_state_lost") != 0 {
		t.Error("state lost before any loss")
	}

	srv.Stop()
	srv.Start()
	for _, r := range []*replica{a, b} {
		waitFor(t, r.name+" finding the state lost", func() bool { return r.gauge("mintlify_exporter_cluster_agent_state_lost") == 1 })
	}
	time.Sleep(lease) // a lease round: nobody takes the gateway on the lost state
	for _, r := range []*replica{a, b} {
		if r.holds() {
			t.Errorf("%s runs the gateway on the lost state", r.name)
		}
		code, body := r.get(t, "")
		var e struct {
			Error string `json:"error"`
		}
		if code != http.StatusServiceUnavailable || json.Unmarshal([]byte(body), &e) != nil || !strings.Contains(e.Error, "was lost") ||
			!strings.Contains(e.Error, "state accept-empty") {
			t.Errorf("request to %s after the loss: %d %s, want 503 saying the state was lost and what to do", r.name, code, body)
		}
	}

	cfg := cluster.Defaults()
	cfg.Address = srv.Addr
	op, err := cluster.New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	if ok, err := op.AcceptLostState(context.Background()); err != nil || !ok {
		t.Fatalf("AcceptLostState = %v, %v", ok, err)
	}
	waitFor(t, "a replica running the gateway again", func() bool { return a.holds() || b.holds() })
	for _, r := range []*replica{a, b} {
		waitFor(t, r.name+" clearing the lost state", func() bool { return r.gauge("mintlify_exporter_cluster_agent_state_lost") == 0 })
		if code, _ := r.get(t, ""); code != http.StatusOK {
			t.Errorf("request to %s after the accept: %d", r.name, code)
		}
	}
}
