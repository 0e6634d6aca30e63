package leader_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/gateway"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/leader"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sharedredis"
	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
	tu "github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// lease is the replicas' real lease TTL in Redis: renewed every third of
// it, so a test process descheduled for 2s on a busy machine keeps it (600ms
// did not: a renewal late by 400ms handed the gateway over mid-test).
const lease = 3 * time.Second

// replica is one Leader behind its own HTTP server, whose terms answer
// with the replica's name after writing to the shared state.
type replica struct {
	name   string
	leader *leader.Leader
	srv    *httptest.Server
	reg    *prometheus.Registry
	// clusterReg holds the replica's Redis client's metrics: its calls
	// show its lease rounds, which the tests wait on instead of a time.
	clusterReg *prometheus.Registry
	stop       context.CancelFunc
	done       chan struct{}
	stopped    atomic.Int32
	// seen is the last request the replica's term served.
	seen atomic.Pointer[seenRequest]
}

// seenRequest is what a term saw of a request.
type seenRequest struct {
	auth, user, addr string
	header           http.Header
}

// secret is the replicas' forward secret.
var secret = []byte("0123456789abcdef0123456789abcdef")

// serve is what the server does (internal/server): a request under /api/
// from another replica is authenticated by the leader, the rest goes on
// (without a front here).
func serve(l *leader.Leader, w http.ResponseWriter, r *http.Request) {
	out, err := l.Authenticate(r)
	if err != nil {
		http.Error(w, `{"error":"`+err.Error()+`"}`, http.StatusUnauthorized)
		return
	}
	if out != nil {
		r = out
	}
	l.ServeHTTP(w, r)
}

func newReplica(t *testing.T, name, addr string) *replica {
	t.Helper()
	cfg := config.ClusterDefaults()
	cfg.Address, cfg.Timeout = addr, time.Second
	clusterReg := prometheus.NewRegistry()
	c, err := sharedredis.New(cfg, clusterReg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	r := &replica{name: name, reg: prometheus.NewRegistry(), clusterReg: clusterReg, done: make(chan struct{})}
	// The server exists before the leader, so the leader can advertise it.
	var h atomic.Pointer[leader.Leader]
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { serve(h.Load(), w, req) }))
	t.Cleanup(r.srv.Close)
	start := func(_ context.Context, st engine.Store, treg prometheus.Registerer) (*leader.Term, error) {
		served := prometheus.NewCounter(prometheus.CounterOpts{Name: "test_term_requests_total", Help: "Requests the term served."})
		treg.MustRegister(served)
		return &leader.Term{
			Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
				served.Inc()
				if err := st.Apply(store.Op{Bucket: store.Jobs, Key: "last", Value: []byte(name)}); err != nil {
					http.Error(w, err.Error(), http.StatusServiceUnavailable)
					return
				}
				r.seen.Store(&seenRequest{auth: req.Header.Get("Authorization"), header: req.Header.Clone()})
				r.seen.Load().user, r.seen.Load().addr = gateway.ClientOf(req)
				fwd := ""
				if req.Header.Get("X-Mintlify-Exporter-Forwarded") != "" {
					fwd = "1"
				}
				_, _ = io.WriteString(w, name+" "+fwd)
			}),
			Status:      func() *status.Jobs { return &status.Jobs{} },
			SetProjects: func([]string) {},
			Stop:        func() { r.stopped.Add(1) },
		}, nil
	}
	l, err := leader.New(leader.Options{Cluster: c, Owner: name, Advertise: r.srv.URL, LeaseDuration: lease, Start: start,
		ForwardSecret: secret, Registerer: r.reg})
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
	tu.Eventually(t, 0, what, cond)
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
	// b contends (at once, then every third of the lease) and loses: its
	// Redis client counts each refused attempt.
	waitFor(t, "b's second attempt at the gateway refused", func() bool { return b.leaseCalls("refused") >= 2 })
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
	// A request that claims to be forwarded without a replica's signature
	// is refused.
	if code, body := b.get(t, "1"); code != http.StatusUnauthorized || !strings.Contains(body, `"error"`) {
		t.Errorf("unsigned forwarded request: %d %s, want 401 JSON", code, body)
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
	// Asked at once and again after two of its attempts to take the lease
	// failed: 503 every time, never accepted.
	for i, after := range []string{"at once", "after two failed attempts"} {
		if i > 0 {
			waitFor(t, "two failed attempts at the lease", func() bool { return x.leaseCalls("error") >= 2 })
		}
		code, body := x.get(t, "")
		var e struct {
			Error string `json:"error"`
		}
		if code != http.StatusServiceUnavailable || json.Unmarshal([]byte(body), &e) != nil || e.Error == "" {
			t.Errorf("with Redis away, %s: %d %s, want 503 with a JSON error", after, code, body)
		}
	}
}

// holdAs takes the agent lease in Redis as a replica advertising url, as
// a replica that then dies or hangs up would hold it.
func holdAs(t *testing.T, addr, url string) {
	t.Helper()
	cfg := config.ClusterDefaults()
	cfg.Address = addr
	c, err := sharedredis.New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, ok, err := c.Leases().Acquire(context.Background(), store.AgentLease, "z@"+url, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire: %v %v", ok, err)
	}
}

// A forward that reached the holder, which then hung up without an
// answer, has an unknown outcome: 502, never 503 ("not done"), so that a
// client without an Idempotency-Key does not create the job again blindly.
func TestForwardWithoutAnswerIs502(t *testing.T) {
	t.Parallel()
	addr := tu.StartRedis(t)
	hangUp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == leader.ProbePath { // a replica of ours: it proves it
			leader.Prove(w, r, secret, "z@http://"+r.Host)
			w.WriteHeader(http.StatusNoContent)
			return
		}
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
// leaseCalls counts the replica's calls to Redis about leases (acquire,
// renew, holder) with one of results (none: any result).
func (r *replica) leaseCalls(results ...string) float64 { return r.calls("lease_", results...) }

// calls counts the replica's calls to Redis whose operation starts with
// prefix, with one of results (none: any result).
func (r *replica) calls(prefix string, results ...string) float64 {
	mfs, _ := r.clusterReg.Gather()
	var n float64
	for _, mf := range mfs {
		if mf.GetName() != "mintlify_exporter_cluster_operations_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var op, result string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "operation":
					op = l.GetValue()
				case "result":
					result = l.GetValue()
				}
			}
			if strings.HasPrefix(op, prefix) && (len(results) == 0 || slices.Contains(results, result)) {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

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
	// Two lease rounds of each replica since it found the state lost (each
	// round checks the state's marker, a store_apply call): nobody takes
	// the gateway on it.
	for _, r := range []*replica{a, b} {
		from := r.calls("store_apply")
		waitFor(t, r.name+"'s lease rounds on the lost state", func() bool { return r.calls("store_apply") >= from+2 })
	}
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

	cfg := config.ClusterDefaults()
	cfg.Address = srv.Addr
	op, err := sharedredis.New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	if ok, err := store.AcceptLostState(context.Background(), op); err != nil || !ok {
		t.Fatalf("AcceptLostState = %v, %v", ok, err)
	}
	waitFor(t, "a replica running the gateway again", func() bool { return a.holds() || b.holds() })
	for _, r := range []*replica{a, b} {
		waitFor(t, r.name+" clearing the lost state", func() bool { return r.gauge("mintlify_exporter_cluster_agent_state_lost") == 0 })
		// A 503 "Redis is unreachable" is a read of the lease that took
		// more than the test replicas' second (a loaded machine): asked
		// again. Any other answer but 200 fails.
		waitFor(t, r.name+" answering after the accept", func() bool {
			code, body := r.get(t, "")
			if code != http.StatusOK && !strings.Contains(body, "Redis is unreachable") {
				t.Errorf("request to %s after the accept: %d %s", r.name, code, body)
			}
			return code == http.StatusOK
		})
	}
}

// recorded is what a listener saw of one request.
type recorded struct {
	method, path, auth, cookie string
	body                       int
}

// A lease rewritten in Redis to name a listener of the attacker's (as
// `SET ...lease:{agent} "9999999999999 evil@http://…"` does) gets no
// client's credentials and no request: at most a signed probe, without
// anything of the client's, which it cannot answer with the proof; the
// client gets a 503.
func TestRewrittenLeaseGetsNoCredentials(t *testing.T) {
	t.Parallel()
	addr := tu.StartRedis(t)
	var mu sync.Mutex
	var seen []recorded
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, recorded{r.Method, r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Cookie"), len(b)})
		mu.Unlock()
		// It answers as a holder would, without the proof.
		w.WriteHeader(http.StatusNoContent)
	}))
	defer evil.Close()
	holdAs(t, addr, evil.URL)
	x := newReplica(t, "x", addr)
	// Three answers past the read of the lease. The test replicas give
	// Redis a second (their tests stop it); on a loaded machine a read can
	// take longer, and the answer is then "the shared Redis is
	// unreachable", which says nothing of the lease: asked again, not
	// counted (a fixed number of tries once failed under load).
	answers := 0
	tu.Eventually(t, 0, "three answers through the rewritten lease", func() bool {
		req, _ := http.NewRequest(http.MethodPost, x.srv.URL+"/api/v2/agent/p1/job", strings.NewReader(`{"prompt":"the roadmap"}`))
		req.SetBasicAuth("alice", "her password")
		req.Header.Set("Cookie", "session=s3cret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(body), "Redis is unreachable") {
			return false
		}
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "did not prove") {
			t.Errorf("request through a rewritten lease: %d %s, want 503 saying the holder did not prove itself", resp.StatusCode, body)
		}
		answers++
		return answers == 3
	})
	mu.Lock()
	defer mu.Unlock()
	for _, r := range seen {
		if r.auth != "" || r.cookie != "" || r.body != 0 || r.method != http.MethodGet || r.path != leader.ProbePath {
			t.Errorf("the listener of a rewritten lease got %+v, want only a probe without credentials or body", r)
		}
	}
	if len(seen) == 0 {
		t.Error("no probe reached the listener: the test did not test forwarding")
	}
}

// A forwarded request reaches the holder without the client's credentials,
// with the client's address and user (signed by the forwarding replica) in
// place of the replica's; the same signed request played again, or a
// client's own forwarded headers, are refused.
func TestForwardCarriesTheClientNotItsCredentials(t *testing.T) {
	t.Parallel()
	addr := tu.StartRedis(t)
	a := newReplica(t, "a", addr)
	waitFor(t, "a holds the gateway", a.holds)
	b := newReplica(t, "b", addr)
	var local string
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		local = info.Conn.LocalAddr().String()
	}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.srv.URL+"/api/v2/agent/p1/jobs?x=1", nil)
	req.SetBasicAuth("alice", "her password")
	resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "a 1" || resp.Header.Get("X-Mintlify-Exporter-Proof") != "" {
		t.Fatalf("forwarded request: %d %q %v", resp.StatusCode, body, resp.Header)
	}
	got := a.seen.Load()
	if got.auth != "" || got.user != "alice" || got.addr != local {
		t.Errorf("the holder saw Authorization %q, client %q at %q; want none, alice at %q", got.auth, got.user, got.addr, local)
	}

	// The signed request, captured and played again to the holder.
	replay, _ := http.NewRequest(http.MethodGet, a.srv.URL+"/api/v2/agent/p1/jobs?x=1", nil)
	for _, h := range []string{"X-Mintlify-Exporter-Forwarded", "X-Mintlify-Exporter-Client", "X-Mintlify-Exporter-User"} {
		replay.Header.Set(h, got.header.Get(h))
	}
	if got.header.Get("X-Mintlify-Exporter-Forwarded") == "" {
		t.Fatal("the holder saw no signature")
	}
	resp, err = http.DefaultClient.Do(replay)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a replayed signed request: HTTP %d, want 401", resp.StatusCode)
	}
	// A client naming another address itself: refused with the forwarded
	// header, ignored without it.
	spoof, _ := http.NewRequest(http.MethodGet, a.srv.URL+"/api/v2/agent/p1/jobs", nil)
	spoof.Header.Set("X-Mintlify-Exporter-Client", "203.0.113.9:1")
	spoof.Header.Set("X-Mintlify-Exporter-User", "root")
	if resp, err = http.DefaultClient.Do(spoof); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := a.seen.Load(); resp.StatusCode != http.StatusOK || got.addr == "203.0.113.9:1" || got.user == "root" {
		t.Errorf("a client's own client header: HTTP %d, the holder saw %q at %q", resp.StatusCode, got.user, got.addr)
	}
}

// Without the replicas' forward secret the gateway on replicas does not
// start: the lease in Redis alone would say where credentials go.
func TestForwardSecretIsRequired(t *testing.T) {
	t.Parallel()
	cfg := config.ClusterDefaults()
	cfg.Address = "127.0.0.1:1"
	c, err := sharedredis.New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := func(context.Context, engine.Store, prometheus.Registerer) (*leader.Term, error) {
		return nil, nil
	}
	for _, s := range [][]byte{nil, []byte("short")} {
		_, err := leader.New(leader.Options{Cluster: c, Owner: "a", Advertise: "http://127.0.0.1:1", LeaseDuration: time.Second, Start: start, ForwardSecret: s})
		if err == nil || !strings.Contains(err.Error(), "forward_secret_file") {
			t.Errorf("New with a forward secret of %d bytes: %v, want an error naming forward_secret_file", len(s), err)
		}
	}
}
