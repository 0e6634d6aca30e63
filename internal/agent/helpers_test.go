package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/gateway"
)

const testKey = "mint_test_key_do_not_leak"

// env is a fake API served over loopback HTTP, a client for it, and a
// Service under test with its gateway served over loopback HTTP too.
type env struct {
	t         testing.TB
	fake      *fakeapi.Server
	fakeSrv   *httptest.Server
	client    *apiclient.Client
	statePath string

	svc    *Service
	reg    *prometheus.Registry
	gw     *httptest.Server
	cancel context.CancelFunc
	done   chan error
}

func newEnv(t testing.TB, fo fakeapi.Options) *env {
	t.Helper()
	if fo.JobDuration == 0 {
		fo.JobDuration = 200 * time.Millisecond
	}
	fo.APIKey = testKey
	fake := fakeapi.New(fo)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	client, err := apiclient.New(apiclient.Config{
		BaseURL:     srv.URL,
		APIKey:      testKey,
		Timeout:     5 * time.Second,
		MaxRetries:  0,
		BackoffBase: 10 * time.Millisecond,
		BackoffMax:  50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, fake: fake, fakeSrv: srv, client: client, statePath: filepath.Join(t.TempDir(), "state", "agent.db")}
}

// testConfig is a fast configuration for the fake's short jobs.
func testConfig(projects ...string) Config {
	if len(projects) == 0 {
		projects = []string{"p1"}
	}
	return Config{Projects: projects, PollInterval: 50 * time.Millisecond, MaxConcurrentPolls: 4}
}

// start opens a Service on the env's state file and, when run is set,
// starts polling. It stops any earlier Service first.
func (e *env) start(cfg Config, run bool) *Service {
	e.t.Helper()
	e.stop()
	if cfg.StatePath == "" {
		cfg.StatePath = e.statePath
	}
	e.reg = prometheus.NewPedanticRegistry()
	svc, err := New(e.client, e.reg, cfg, log.NewNopLogger())
	if err != nil {
		e.t.Fatal(err)
	}
	e.svc = svc
	mux := http.NewServeMux()
	mux.Handle("/api/", svc.Handler())
	e.gw = httptest.NewServer(mux)
	if run {
		e.run()
	}
	e.t.Cleanup(e.stop)
	return svc
}

// run starts polling.
func (e *env) run() {
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	e.done = make(chan error, 1)
	svc := e.svc
	go func() { e.done <- svc.Run(ctx) }()
}

// stop ends polling, waits for Run to return and closes the Service.
func (e *env) stop() {
	if e.svc == nil {
		return
	}
	if e.cancel != nil {
		e.cancel()
		select {
		case err := <-e.done:
			if err != nil {
				e.t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			e.t.Fatal("Run did not return after cancel")
		}
		e.cancel = nil
	}
	e.gw.Close()
	if err := e.svc.Close(); err != nil {
		e.t.Errorf("Close: %v", err)
	}
	e.svc = nil
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) errorMessage(t testing.TB) string {
	t.Helper()
	var v struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(r.body, &v); err != nil || v.Error == "" {
		t.Fatalf("HTTP %d: body is not a JSON error: %q", r.status, r.body)
	}
	return v.Error
}

func (e *env) do(method, path, contentType string, body []byte) response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.gw.URL+path, bytes.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
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
	if strings.Contains(string(data), testKey) {
		e.t.Fatalf("response leaks the API key: %s", data)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: data}
}

// submit creates a job through the gateway and returns it; it fails the
// test unless the gateway answers 2xx.
func (e *env) submit(project, prompt string) apiclient.Job {
	e.t.Helper()
	r := e.submitRaw(project, prompt)
	if r.status/100 != 2 {
		e.t.Fatalf("submit: HTTP %d: %s", r.status, r.body)
	}
	var j apiclient.Job
	if err := json.Unmarshal(r.body, &j); err != nil || j.ID == "" {
		e.t.Fatalf("submit: bad job %q: %v", r.body, err)
	}
	return j
}

func (e *env) submitRaw(project, prompt string) response {
	body, _ := json.Marshal(map[string]string{"prompt": prompt})
	return e.do("POST", "/api/v2/agent/"+project+"/job", "application/json", body)
}

// job returns the gateway's view of a job, or ok=false on 404.
func (e *env) job(project, id string) (gateway.JobView, bool) {
	e.t.Helper()
	r := e.do("GET", "/api/v2/agent/"+project+"/job/"+id, "", nil)
	if r.status == http.StatusNotFound {
		return gateway.JobView{}, false
	}
	if r.status != http.StatusOK {
		e.t.Fatalf("get job: HTTP %d: %s", r.status, r.body)
	}
	var v gateway.JobView
	if err := json.Unmarshal(r.body, &v); err != nil {
		e.t.Fatal(err)
	}
	return v, true
}

func (e *env) jobs(project, query string) []gateway.JobView {
	e.t.Helper()
	r := e.do("GET", "/api/v2/agent/"+project+"/jobs"+query, "", nil)
	if r.status != http.StatusOK {
		e.t.Fatalf("list jobs: HTTP %d: %s", r.status, r.body)
	}
	var l gateway.JobList
	if err := json.Unmarshal(r.body, &l); err != nil {
		e.t.Fatal(err)
	}
	return l.Jobs
}

// metric returns the value of a counter or gauge series, or for a histogram
// its sample count (and sum via histSum). Missing series fail the test.
func (e *env) metric(name string, labels ...string) float64 {
	e.t.Helper()
	m := e.find(name, labels...)
	if m == nil {
		e.t.Fatalf("no series %s%v", name, labels)
	}
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Histogram != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	e.t.Fatalf("%s: unsupported type", name)
	return 0
}

func (e *env) histSum(name string, labels ...string) float64 {
	e.t.Helper()
	m := e.find(name, labels...)
	if m == nil || m.Histogram == nil {
		e.t.Fatalf("no histogram %s%v", name, labels)
	}
	return m.GetHistogram().GetSampleSum()
}

// series returns every series of a family as "k=v,k=v" -> value.
func (e *env) series(name string) map[string]float64 {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, lp := range m.GetLabel() {
				ls = append(ls, lp.GetName()+"="+lp.GetValue())
			}
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			out[strings.Join(ls, ",")] = v
		}
	}
	return out
}

func (e *env) find(name string, labels ...string) *dto.Metric {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	want := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			if len(got) != len(want) {
				continue
			}
			for k, v := range want {
				if got[k] != v {
					continue next
				}
			}
			return m
		}
	}
	return nil
}

func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// statusOf polls the gateway until the job has status, and returns it.
func (e *env) waitStatus(project, id, status string, timeout time.Duration) gateway.JobView {
	e.t.Helper()
	var v gateway.JobView
	eventually(e.t, timeout, "job "+id+" to be "+status, func() bool {
		var ok bool
		v, ok = e.job(project, id)
		return ok && v.Status == status
	})
	return v
}
