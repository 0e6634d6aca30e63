package kinds_test

import (
	"context"
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
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

const testKey = "mint_test_key_do_not_leak"

// t0 is where every test's clock starts.
var t0 = time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)

// env is a fake API served over loopback HTTP, a client for it, and a
// Tracker under test, all on one settable clock: the fake's jobs move on
// only when the test moves the clock, and the test runs poll rounds itself
// (Run's ticker is tested once, in TestRunPollsUntilCancelled).
type env struct {
	t         *testing.T
	clock     *testutil.Clock
	fake      *fakeapi.Server
	client    *apiclient.Client
	statePath string

	trk *Tracker
	reg *prometheus.Registry
	// logs is what every Tracker of the env logged.
	logs *testutil.SyncBuffer
}

func newEnv(t *testing.T, fo fakeapi.Options) *env {
	t.Helper()
	clock := testutil.NewClock(t0)
	fo.APIKey = testKey
	fo.Now = clock.Now
	fake := fakeapi.New(fo)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	// The client's timeout is a guard against a hung fake, not a speed the
	// tests expect: 200 creates at once on a loaded machine (race detector,
	// busy cores) once took more than a fixed 5 s (TestConcurrentCreates).
	client, err := apiclient.New(apiclient.Config{BaseURL: srv.URL, APIKey: testKey, Timeout: testutil.Patience, MaxRetries: 0})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, clock: clock, fake: fake, client: client, statePath: filepath.Join(t.TempDir(), "state", "agent.db"), logs: &testutil.SyncBuffer{}}
	t.Cleanup(e.close)
	return e
}

// config is the default configuration for projects (default p1) on the
// env's clock and state file.
func (e *env) config(projects ...string) Config {
	if len(projects) == 0 {
		projects = []string{"p1"}
	}
	cfg := Defaults()
	cfg.Projects = projects
	cfg.StatePath = e.statePath
	cfg.LockTimeout = 20 * time.Millisecond
	// 200 creates at once under -race beside the rest of make test (load
	// 48 on 2 cores) once took a write past the 5 s default; the tests of a
	// frozen file set their own.
	cfg.StateWriteTimeout = testutil.Slack(20 * time.Second)
	cfg.Now = e.clock.Now
	return cfg
}

// open starts a Tracker on cfg, as a new process would, after closing the
// one before.
func (e *env) open(cfg Config) *Tracker {
	e.t.Helper()
	e.close()
	e.reg = prometheus.NewPedanticRegistry()
	trk, err := New(e.client, e.reg, cfg, log.NewLogfmtLogger(e.logs))
	if err != nil {
		e.t.Fatal(err)
	}
	e.trk = trk
	return trk
}

func (e *env) close() {
	if e.trk == nil {
		return
	}
	if err := e.trk.Close(); err != nil {
		e.t.Errorf("Close: %v", err)
	}
	e.trk = nil
}

// tick moves the clock one poll interval and runs a poll round.
func (e *env) tick() {
	e.clock.Advance(e.trk.cfg.PollInterval)
	e.trk.round(context.Background())
}

// runFor ticks until d has passed.
func (e *env) runFor(d time.Duration) {
	for end := e.clock.Now().Add(d); e.clock.Now().Before(end); {
		e.tick()
	}
}

// tickUntil ticks until cond holds, at most n rounds.
func (e *env) tickUntil(n int, what string, cond func() bool) {
	e.t.Helper()
	for range n {
		if cond() {
			return
		}
		e.tick()
	}
	if !cond() {
		e.t.Fatalf("%s: not after %d poll rounds", what, n)
	}
}

// create creates a job through the tracker; it fails the test on error.
func (e *env) create(project, prompt string) apiclient.Job {
	e.t.Helper()
	c, err := e.trk.Create(context.Background(), CreateRequest{Project: project, Prompt: prompt})
	if err != nil {
		e.t.Fatalf("create: %v", err)
	}
	return c.Job
}

// status is a tracked job's shown status, "" when it is not tracked.
func (e *env) status(project, id string) string {
	v, ok := e.trk.Job(project, id)
	if !ok {
		return ""
	}
	return v.Status
}

// waitStatus ticks until the job shows status, and returns its view.
func (e *env) waitStatus(project, id, status string, rounds int) JobView {
	e.t.Helper()
	e.tickUntil(rounds, "job "+id+" "+status, func() bool { return e.status(project, id) == status })
	v, _ := e.trk.Job(project, id)
	return v
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

// metricCase is one expected series value.
type metricCase struct {
	name   string
	labels []string
	want   float64
}

func (e *env) checkMetrics(cases []metricCase) {
	e.t.Helper()
	for _, c := range cases {
		if got := e.metric(c.name, c.labels...); got != c.want {
			e.t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
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
			out[strings.Join(ls, ",")] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	return out
}

// noneFinished fails the test if any finished_total series is not 0.
func (e *env) noneFinished(why string) {
	e.t.Helper()
	for k, v := range e.series("mintlify_agent_jobs_finished_total") {
		if v != 0 {
			e.t.Errorf("%s: %s = %v, want 0", why, k, v)
		}
	}
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

func jobIDs(vs []JobView) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.ID
	}
	return out
}
