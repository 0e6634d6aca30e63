package kinds_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/gateway"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/kinds/job"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// The gateway's tests, over the kinds' routes: the agent jobs' over a
// stub (stubTracker) or the real engine and the fake API (deployEnv).

// Why a request was refused (the reason label).
const (
	reasonBadRequest           = gateway.ReasonBadRequest
	reasonTooLarge             = gateway.ReasonTooLarge
	reasonUnsupportedMediaType = gateway.ReasonUnsupportedMediaType
	reasonRateLimited          = gateway.ReasonRateLimited
	reasonUpstreamError        = gateway.ReasonUpstreamError
	reasonIdempotencyConflict  = gateway.ReasonIdempotencyConflict
	reasonStateError           = gateway.ReasonStateError
	reasonJobNotFound          = "job_not_found"
)

var (
	rejectReasons = []string{reasonBadRequest, reasonTooLarge, reasonUnsupportedMediaType, reasonRateLimited, reasonUpstreamError,
		reasonIdempotencyConflict, reasonStateError}
	messageRejectReasons = append(slices.Clone(rejectReasons), reasonJobNotFound)
)

// The lists' bodies.
type (
	JobList                      struct{ Jobs []JobView }
	DeploymentList               struct{ Deployments []DeploymentView }
	ExportList                   struct{ Exports []ExportView }
	AutomationRunList            struct{ Runs []AutomationRunView }
	UnknownCreateList            struct{ UnknownCreates []UnknownCreate }
	UnknownTriggerList           struct{ UnknownTriggers []UnknownTrigger }
	UnknownStartList             struct{ UnknownStarts []UnknownExportStart }
	UnknownAutomationTriggerList struct{ UnknownTriggers []UnknownAutomationTrigger }
)

// stubbedJobs is the agent jobs' kind with its routes over a stub.
type stubbedJobs struct {
	engine.Kind
	j job.Jobs
}

func (s stubbedJobs) Open(o *engine.Ops) engine.Kind {
	return stubbedJobs{Kind: s.Kind.Open(o), j: s.j}
}
func (s stubbedJobs) Routes(g *gateway.Gateway) error { return job.AddRoutes(g, s.j) }

// registries are each test gateway's registry; projects the projects
// that take the agent jobs of a gateway over a stub (setProjects).
var registries, projects sync.Map

// newGateway is a gateway over tr (the agent job routes of projects
// cfg.Projects) on an engine of its own.
func newGateway(t *testing.T, tr job.Jobs, cfg gateway.Config) (*gateway.Gateway, error) {
	proto, _ := engine.Lookup(job.Name)
	ecfg := engine.Defaults()
	ecfg.Projects, ecfg.StatePath, ecfg.Kinds = cfg.Projects, filepath.Join(t.TempDir(), "agent.db"), []engine.Kind{stubbedJobs{Kind: proto, j: tr}}
	ecfg.On = map[string]bool{job.Name: true}
	taking := &atomic.Pointer[[]string]{}
	taking.Store(&cfg.Projects)
	ecfg.Takes = func(_, project string) ([]string, bool) { return nil, slices.Contains(*taking.Load(), project) }
	e, err := engine.New(nil, nil, ecfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	reg := prometheus.NewPedanticRegistry()
	g, err := gateway.New(e, reg, cfg, nil)
	if g != nil {
		registries.Store(g, reg)
		projects.Store(g, taking)
	}
	return g, err
}

// setProjects makes ids the projects that take agent jobs on g (a gateway
// over a stub), as a reload does.
func setProjects(g *gateway.Gateway, ids []string) {
	p, _ := projects.Load(g)
	p.(*atomic.Pointer[[]string]).Store(&ids)
	g.SetProjects(ids)
}

// counter is the value of name{project, reason} of g's registry.
func counter(g *gateway.Gateway, name, project, reason string) float64 {
	reg, _ := registries.Load(g)
	mfs, err := reg.(*prometheus.Registry).Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["project"] == project && l["reason"] == reason {
				return m.GetCounter().GetValue()
			}
		}
	}
	return -1 // no such series
}

func rejected(g *gateway.Gateway, project, reason string) float64 {
	return counter(g, "mintlify_agent_job_submit_rejected_total", project, reason)
}

func msgRejected(g *gateway.Gateway, project, reason string) float64 {
	return counter(g, "mintlify_agent_job_message_rejected_total", project, reason)
}

// stubTracker answers like a tracker without any API or state file.
type stubTracker struct {
	mu        sync.Mutex
	creates   int
	createErr error
	// views are what Jobs filters and Job finds.
	views    []JobView
	tracked  TrackResult
	trackErr error
	// tracks counts Track calls.
	tracks int
	recent map[string][]time.Time
	// lastUser is the user of the last create.
	lastUser string
	// messages counts follow-ups that reached the stub; msgErr fails them.
	messages       int
	msgErr         error
	recentMessages map[string][]time.Time
}

func (b *stubTracker) Message(_ context.Context, req MessageRequest) (Messaged, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if req.Admit != nil {
		if err := req.Admit(); err != nil {
			return Messaged{}, err
		}
	}
	b.messages++
	if b.msgErr != nil {
		return Messaged{}, b.msgErr
	}
	return Messaged{Job: JobView{Job: apiclient.Job{ID: req.JobID, Status: "active"}, Tracking: job.Tracking{Turn: 2}}, Status: http.StatusOK}, nil
}

func (b *stubTracker) RecentMessages(time.Duration) map[string][]time.Time { return b.recentMessages }

func (b *stubTracker) messageCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.messages
}

func (b *stubTracker) Create(ctx context.Context, req CreateRequest) (Created, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if req.Admit != nil {
		if err := req.Admit(); err != nil {
			return Created{}, err
		}
	}
	b.creates++
	b.lastUser = engine.UserFrom(ctx)
	if b.createErr != nil {
		return Created{}, b.createErr
	}
	return Created{Job: apiclient.Job{ID: "job_1", Status: "active"}, Status: http.StatusCreated}, nil
}

func (b *stubTracker) UnknownCreates(string) []UnknownCreate {
	return []UnknownCreate{}
}

func (b *stubTracker) Resolve(context.Context, string, string, string) (JobView, TrackResult, error) {
	return JobView{}, NewlyTracked, ErrNoSuchIntent
}

func (b *stubTracker) DismissIntent(string, string) error { return ErrNoSuchIntent }

func (b *stubTracker) createCount() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.creates
}

func (b *stubTracker) Job(_, id string) (JobView, bool) {
	for _, v := range b.views {
		if v.ID == id {
			return v, true
		}
	}
	return JobView{}, false
}

func (b *stubTracker) Jobs(_, status string) []JobView {
	var out []JobView
	for _, v := range b.views {
		if status == "" || v.Status == status {
			out = append(out, v)
		}
	}
	return out
}

func (b *stubTracker) Track(context.Context, string, string) (JobView, TrackResult, error) {
	b.mu.Lock()
	b.tracks++
	b.mu.Unlock()
	if b.trackErr != nil {
		return JobView{}, NewlyTracked, b.trackErr
	}
	return JobView{Job: apiclient.Job{ID: "job_7"}}, b.tracked, nil
}

func (b *stubTracker) RecentCreates(time.Duration) map[string][]time.Time { return b.recent }

// testConfig is the default configuration for projects p1 and p2, on clock
// when it is not nil.
func testConfig(clock *testutil.Clock) gateway.Config {
	cfg := gateway.Defaults()
	cfg.Projects = []string{"p1", "p2"}
	if clock != nil {
		cfg.Now = clock.Now
	}
	return cfg
}

func newTestGateway(t *testing.T, tr job.Jobs, cfg gateway.Config) *gateway.Gateway {
	t.Helper()
	g, err := newGateway(t, tr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) errorMessage(t *testing.T) string {
	t.Helper()
	var v struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(r.body, &v); err != nil || v.Error == "" {
		t.Fatalf("HTTP %d: body is not a JSON error: %q", r.status, r.body)
	}
	return v.Error
}

// do sends one request to h.
func do(t *testing.T, h http.Handler, method, path, contentType string, body []byte) response {
	t.Helper()
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return response{status: rec.Code, header: rec.Header(), body: rec.Body.Bytes()}
}

func submit(t *testing.T, h http.Handler, project, prompt string) response {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"prompt": prompt})
	return do(t, h, "POST", "/api/v2/agent/"+project+"/job", "application/json", body)
}

// deployEnv is the deployment routes over a real tracker and the fake
// API, over HTTP: the gateway's limits and the fake on a settable clock,
// the tracker polling on the wall clock every 10ms. Projects d1, d2 (organization a) and d3 (organization b) take
// deployments; jobs-only takes none; the fake knows d1 to d3.
type deployEnv struct {
	t     *testing.T
	clock *testutil.Clock
	fake  *fakeapi.Server
	api   *apiclient.Client
	trk   *Tracker
	reg   *prometheus.Registry
	srv   *httptest.Server
	// logs is what the gateway logged (logfmt).
	logs *testutil.SyncBuffer
}

func newDeployEnv(t *testing.T, jobProjects ...string) *deployEnv {
	t.Helper()
	return newDeployEnvWith(t, func(o *fakeapi.Options) {
		// No limit upstream: what is refused here, the gateway refused.
		o.UpdateLimit, o.PreviewLimit = -1, -1
	}, jobProjects...)
}

// automationsOf are the automations of newDeployEnvWith's projects: d1
// names one, d2 allows any (none named), d3 names two.
func automationsOf(p string) ([]string, bool) {
	switch p {
	case "d1":
		return []string{fakeapi.AutomationAgentJob}, false
	case "d2":
		return nil, true
	case "d3":
		return []string{fakeapi.AutomationAgentJob, fakeapi.AutomationUnfollowed}, false
	}
	return nil, false
}

// newDeployEnvWith is newDeployEnv with the fake's options set by opts,
// and the automation routes on for d1, d2 and d3 (automationsOf).
func newDeployEnvWith(t *testing.T, opts func(*fakeapi.Options), jobProjects ...string) *deployEnv {
	t.Helper()
	return newDeployEnvGW(t, opts, func(*gateway.Config) {}, jobProjects...)
}

// newDeployEnvGW is newDeployEnvWith with the gateway's configuration set
// by gopts.
func newDeployEnvGW(t *testing.T, opts func(*fakeapi.Options), gopts func(*gateway.Config), jobProjects ...string) *deployEnv {
	t.Helper()
	const key = "mint_test_key_do_not_leak"
	clock := testutil.NewClock(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	fo := fakeapi.Options{Projects: []string{"d1", "d2", "d3"}, APIKey: key, Now: clock.Now}
	opts(&fo)
	fake := fakeapi.New(fo)
	api := httptest.NewServer(fake)
	t.Cleanup(api.Close)
	client, err := apiclient.New(apiclient.Config{BaseURL: api.URL, APIKey: key, MaxRetries: 0, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	tcfg := Defaults()
	tcfg.Projects = []string{"d1", "d2", "d3", "jobs-only"}
	tcfg.StatePath = filepath.Join(t.TempDir(), "agent.db")
	tcfg.PollInterval = 10 * time.Millisecond // on the wall clock, as its Run ticker: the fake moves by reads, not time
	jobs := append([]string{"jobs-only"}, jobProjects...)
	tcfg.takes = func(kind, p string) ([]string, bool) {
		switch kind {
		case job.Name:
			return nil, slices.Contains(jobs, p)
		case "automation":
			named, others := automationsOf(p)
			if others {
				named = append(slices.Clone(named), "*")
			}
			return named, len(named) > 0
		}
		return nil, strings.HasPrefix(p, "d")
	}
	trk, err := New(client, reg, tcfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	gcfg := gateway.Defaults()
	gcfg.Projects = tcfg.Projects
	gcfg.Now = clock.Now
	gcfg.Organization = func(p string) string { return map[string]string{"d1": "a", "d2": "a", "d3": "b"}[p] }
	gcfg.Exported = func(p string) bool { return p == "jobs-only" || strings.HasPrefix(p, "d") }
	gopts(&gcfg)
	logs := &testutil.SyncBuffer{}
	g, err := gateway.New(trk.Engine, reg, gcfg, log.NewLogfmtLogger(logs))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { // owned by the test: stopped in its cleanup
		defer close(done)
		_ = trk.Run(ctx)
	}()
	t.Cleanup(func() {
		srv.Close()
		cancel()
		<-done
		if err := trk.Close(); err != nil {
			t.Error(err)
		}
	})
	return &deployEnv{t: t, clock: clock, fake: fake, api: client, trk: trk, reg: reg, srv: srv, logs: logs}
}

// call sends a request with hdr (Content-Type application/json on a POST
// unless hdr sets it; "" deletes).
func (e *deployEnv) call(method, path, body string, hdr ...string) response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	// A bodiless POST goes as the API's own clients send it: without a
	// Content-Type (issue 44: the gateway is a drop-in).
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: data}
}

// triggered decodes a trigger's 202.
func (e *deployEnv) triggered(r response) (statusID, previewURL string) {
	e.t.Helper()
	var body map[string]string
	if r.status != http.StatusAccepted || json.Unmarshal(r.body, &body) != nil || body["statusId"] == "" {
		e.t.Fatalf("trigger: HTTP %d %s, want 202 {\"statusId\"}", r.status, r.body)
	}
	return body["statusId"], body["previewUrl"]
}

// waitStatus waits until the gateway shows the deployment in status.
func (e *deployEnv) waitStatus(id, status string) DeploymentView {
	e.t.Helper()
	var v DeploymentView
	testutil.Eventually(e.t, 0, "deployment "+id+" "+status, func() bool {
		r := e.call("GET", "/api/v1/project/update-status/"+id, "")
		return r.status == http.StatusOK && json.Unmarshal(r.body, &v) == nil && v.Status == status
	}, func() string { return fmt.Sprintf("%+v", v) })
	return v
}

// finished is mintlify_deployments_finished_total{project,kind,status}.
func (e *deployEnv) finished(project, kind, status string) float64 {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "mintlify_deployments_finished_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["project"] == project && l["kind"] == kind && l["status"] == status {
				return m.GetCounter().GetValue()
			}
		}
	}
	e.t.Fatalf("no series finished{%s,%s,%s}", project, kind, status)
	return 0
}

func (e *deployEnv) triggers() int64 {
	return e.fake.Requests(fakeapi.TriggerUpdate) + e.fake.Requests(fakeapi.TriggerPreview)
}

// newGatewayWith is a gateway over trk's engine (a *Tracker: every kind's
// real routes, its metrics in reg), or over a stub of the agent jobs.
func newGatewayWith(t *testing.T, trk any, reg *prometheus.Registry, cfg gateway.Config, logger ...log.Logger) (*gateway.Gateway, error) {
	tr, ok := trk.(*Tracker)
	if !ok {
		return newGateway(t, trk.(job.Jobs), cfg)
	}
	var r prometheus.Registerer
	if reg != nil {
		r = reg
	}
	var l log.Logger
	if len(logger) > 0 {
		l = logger[0]
	}
	g, err := gateway.New(tr.Engine, r, cfg, l)
	if g != nil && reg != nil {
		registries.Store(g, reg)
	}
	return g, err
}
