package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
	_ "github.com/mintlify-exporter/mintlify_exporter/internal/ops/kinds"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil/blackbox"
)

// stallKind is one kind of operation as the Redis stall test starts it,
// reads it and counts it.
type stallKind struct {
	name string
	// toy: the row of testdata/toy, run by the exporter built with it
	// (toyBinary).
	toy      bool
	endpoint string // the fake's endpoint that starts one
	start    string // the gateway route that starts one
	body     string
	ids      func(f *fakeapi.Server) []string
	view     func(id string) string // the route that shows one
	finished string                 // the series that counts its end
	final    string                 // its final status in the fake's course
}

var stallKinds = []stallKind{
	{name: "job", endpoint: fakeapi.CreateJob, start: "/api/v2/agent/p1/job", body: `{"prompt":"stall #fake:pr:1s"}`,
		ids:  func(f *fakeapi.Server) []string { return f.JobIDs("p1") },
		view: func(id string) string { return "/api/v2/agent/p1/job/" + id }, final: "completed",
		finished: "mintlify_agent_jobs_finished_total{project=p1,status=completed}"},
	{name: "deployment", endpoint: apiclient.EndpointTriggerUpdate, start: "/api/v1/project/update/p1",
		ids:  func(f *fakeapi.Server) []string { return f.DeploymentIDs("p1", "update") },
		view: func(id string) string { return "/api/v1/project/update-status/" + id }, final: "success",
		finished: "mintlify_deployments_finished_total{kind=update,project=p1,status=success}"},
	{name: "static_export", endpoint: apiclient.EndpointStartStaticExport, start: "/api/v1/static-export/p1/jobs", body: `{"domain":"docs.example.com"}`,
		ids:  func(f *fakeapi.Server) []string { return f.StaticExportIDs() },
		view: func(id string) string { return "/api/v1/static-export/p1/jobs/" + id }, final: "completed",
		finished: "mintlify_static_exports_finished_total{project=p1,status=completed}"},
	automationKind,
	toyKind.stallKind,
}

// e2eExportDuration is how long the fake's static exports take in these
// tests (a minute by default: the sandbox's).
const e2eExportDuration = 3 * time.Second

// kill9Kind is one kind of operation as the kill -9 table drives it.
type kill9Kind struct {
	stallKind
	running string // its status while it runs
	hold    func(f *fakeapi.Server, hold bool)
	unknown string // its unknown outcomes' list route
	gauge   string // its unknown outcomes' gauge
	// series is the prefix of its own metric families, running the
	// series of those it follows that have not ended.
	series, runningSeries string
}

var kill9Kinds = []kill9Kind{
	// The job runs 4 s: long enough to be killed while it runs, even on a
	// busy machine (the restart is what follows it to its end).
	{stallKind: withBody(stallKinds[0], `{"prompt":"kill9 #fake:pr:4s"}`), running: "active", hold: func(*fakeapi.Server, bool) {},
		unknown: "/api/v2/agent/p1/unknown-creates", gauge: "mintlify_agent_create_unknown_outcomes{project=p1}",
		series: "mintlify_agent_job", runningSeries: "mintlify_agent_jobs{project=p1,status=active}"},
	{stallKind: stallKinds[1], running: "in_progress", hold: (*fakeapi.Server).HoldDeployments,
		unknown: "/api/v1/project/p1/unknown-triggers", gauge: "mintlify_deployment_unknown_outcomes{kind=update,project=p1}",
		series: "mintlify_deployment", runningSeries: "mintlify_deployments_in_progress{kind=update,project=p1}"},
	{stallKind: stallKinds[2], running: "running", hold: (*fakeapi.Server).HoldStaticExports,
		unknown: "/api/v1/static-export/p1/unknown-starts", gauge: "mintlify_static_export_unknown_outcomes{project=p1}",
		series: "mintlify_static_export", runningSeries: "mintlify_static_exports_in_progress{project=p1}"},
	// A run of the sandbox's wf_docs_refresh is an agent job active for
	// about 3 s: followed as one (its status is the job's), counted by the
	// agent job series. hold keeps it active.
	{stallKind: automationKind, running: "active", hold: (*fakeapi.Server).HoldAutomationRuns,
		unknown: "/api/v1/workflow/p1/unknown-triggers", gauge: "mintlify_automation_unknown_outcomes{project=p1}",
		series: "mintlify_automation", runningSeries: "mintlify_agent_jobs{project=p1,status=active}"},
	toyKind,
}

// automationKind is the automations' row of the tables.
var automationKind = stallKind{name: "automation", endpoint: fakeapi.TriggerAutomation, start: "/api/v1/workflow/p1/" + fakeapi.AutomationAgentJob + "/trigger",
	ids:  func(f *fakeapi.Server) []string { return f.AutomationJobIDs("p1") },
	view: func(id string) string { return "/api/v1/workflow/p1/runs/" + id }, final: "completed",
	finished: "mintlify_agent_jobs_finished_total{project=p1,status=completed}"}

// TestKill9EveryKind, for every kind of operation, kills the built
// exporter with SIGKILL twice: while an operation it started runs (the
// restarted exporter follows it to its end, counts it once, and replays
// its Idempotency-Key), and while a request is on its way upstream (the
// restarted exporter shows an outcome unknown: its gauge, its list, and
// 409 for its key; issue 36, 4.2: for deployments only a start log line
// said so).
func TestKill9EveryKind(t *testing.T) {
	t.Parallel()
	for _, k := range kill9Kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			kill9Kind := k
			kill9Operation(t, kill9Kind)
		})
	}
}

func kill9Operation(t *testing.T, k kill9Kind) {
	fake := fakeapi.New(fakeapi.Options{Projects: []string{"p1"}, StaticExportDuration: e2eExportDuration})
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	statePath := filepath.Join(t.TempDir(), "agent.db")
	start := func() *testutil.Exporter {
		x := testutil.StartExporter(t, k.binary(t), []string{"MINTLIFY_API_KEY=mint_test"}, append(k.flags(), "--mintlify.api-url="+srv.URL,
			"--mintlify.project=p1", "--agent.state-file="+statePath, "--agent.poll-interval=200ms", "--mintlify.max-retries=0")...)
		testutil.WaitHTTP(t, x.Base+"/-/ready", 15*time.Second, nil)
		return x
	}
	client := &http.Client{Timeout: 30 * time.Second}
	call := func(x *testutil.Exporter, method, path, key, body string) (int, []byte, http.Header) {
		return call(t, client, method, x.Base+path, key, body)
	}
	statusOf := func(x *testutil.Exporter, id string) string {
		code, data, _ := call(x, "GET", k.view(id), "", "")
		var v struct{ Status string }
		if code != http.StatusOK || json.Unmarshal(data, &v) != nil {
			return ""
		}
		return v.Status
	}

	// Killed while the operation runs.
	x := start()
	k.hold(fake, true)
	if code, data, _ := call(x, "POST", k.start, "run-1", k.body); code/100 != 2 {
		t.Fatalf("start: HTTP %d %s", code, data)
	}
	id := k.ids(fake)[0]
	blackbox.Eventually(t, 0, k.name+" running", func() bool { return statusOf(x, id) == k.running })
	x.Kill(t)
	x = start()
	if code, data, h := call(x, "POST", k.start, "run-1", k.body); code/100 != 2 || h.Get("Idempotent-Replayed") != "true" || !strings.Contains(string(data), id) {
		t.Errorf("retry with the key after the restart: HTTP %d %s, want a replay of %s", code, data, id)
	}
	k.hold(fake, false)
	blackbox.Eventually(t, 0, k.name+" followed to its end after the restart", func() bool { return statusOf(x, id) == k.final })
	blackbox.WaitMetrics(t, x.Base, 0, map[string]float64{k.finished: 1, k.gauge: 0})

	// Killed while a request is on its way upstream.
	fake.SetFault(k.endpoint, fakeapi.Fault{Latency: 2 * time.Second, Remaining: 1})
	done := make(chan struct{})
	sent := fake.Requests(k.endpoint)
	go func() { // owned by the test: waited for below
		defer close(done)
		call(x, "POST", k.start, "lost-1", k.body)
	}()
	blackbox.Eventually(t, 0, "the request upstream", func() bool { return fake.Requests(k.endpoint) > sent })
	x.Kill(t)
	<-done
	x = start()
	blackbox.WaitMetrics(t, x.Base, 0, map[string]float64{k.gauge: 1})
	code, data, _ := call(x, "GET", k.unknown, "", "")
	if code != http.StatusOK || !strings.Contains(string(data), `"lost-1"`) {
		t.Errorf("GET %s after kill -9 during a request: HTTP %d %s, want the request listed with its key", k.unknown, code, data)
	}
	if code, data, _ := call(x, "POST", k.start, "lost-1", k.body); code != http.StatusConflict {
		t.Errorf("retry with the key of an outcome unknown: HTTP %d %s, want 409", code, data)
	}
	if n := fake.Requests(k.endpoint); n != sent+1 {
		t.Errorf("%d requests to start a %s upstream, want %d (the retry sent nothing)", n, k.name, sent+1)
	}
	x.Stop(t)
}

func withBody(k stallKind, body string) stallKind {
	k.body = body
	return k
}

// TestEveryKindRunsThroughTheTables: the kill -9, replicas and Redis
// stall tables have a row for every kind the engine follows
// (engine.Kinds), so a kind added to the registry without its rows fails
// here rather than going untested.
func TestEveryKindRunsThroughTheTables(t *testing.T) {
	t.Parallel()
	stall, kill9 := map[string]bool{}, map[string]bool{}
	for _, k := range stallKinds {
		stall[k.name] = true
	}
	for _, k := range kill9Kinds {
		kill9[k.name] = true
	}
	delete(stall, "toy") // testdata/toy's, not the registry's
	delete(kill9, "toy")
	for _, k := range engine.Kinds() {
		name := k.Declare().Name
		if !stall[name] {
			t.Errorf("kind %s has no row in stallKinds (TestRedisStallKeepsAcknowledgedOperations)", name)
		}
		if !kill9[name] {
			t.Errorf("kind %s has no row in kill9Kinds (TestKill9EveryKind, TestReplicasEveryKind)", name)
		}
	}
	if len(stall) != len(engine.Kinds()) || len(kill9) != len(engine.Kinds()) {
		t.Errorf("%d stall rows and %d kill -9 rows for %d kinds: a row names no kind", len(stall), len(kill9), len(engine.Kinds()))
	}
}
