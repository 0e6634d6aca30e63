package kinds_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/gateway"
)

// TestOverTracker serves the gateway over a real tracker and the fake API,
// as main wires them: the answers a client gets for what the API does.
func TestOverTracker(t *testing.T) {
	t.Parallel()
	const key = "mint_test_key_do_not_leak"
	fake := fakeapi.New(fakeapi.Options{Projects: []string{"p1"}, APIKey: key})
	api := httptest.NewServer(fake)
	t.Cleanup(api.Close)
	client, err := apiclient.New(apiclient.Config{BaseURL: api.URL, APIKey: key, MaxRetries: 0})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	tcfg := Defaults()
	tcfg.Projects = []string{"p1", "p9"} // p9 is unknown upstream
	tcfg.StatePath = filepath.Join(t.TempDir(), "agent.db")
	trk, err := New(client, reg, tcfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := trk.Close(); err != nil {
			t.Error(err)
		}
	})
	gcfg := gateway.Defaults()
	gcfg.Projects = tcfg.Projects
	g, err := newGatewayWith(t, trk, reg, gcfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/api/", g)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	call := func(method, path, body string) response {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if method == "POST" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(data), key) {
			t.Fatalf("response leaks the API key: %s", data)
		}
		return response{status: resp.StatusCode, header: resp.Header, body: data}
	}

	r := call("POST", "/api/v2/agent/p1/job", `{"prompt":"add a page #fake:pr:1h"}`)
	var job apiclient.Job
	// 201: the fake answers job creation as the reference documents it,
	// and the gateway passes the API's 2xx on.
	if r.status != http.StatusCreated || json.Unmarshal(r.body, &job) != nil || job.ID == "" || job.Status != "active" {
		t.Fatalf("create: HTTP %d %s", r.status, r.body)
	}
	var v JobView
	if r := call("GET", "/api/v2/agent/p1/job/"+job.ID, ""); r.status != 200 || json.Unmarshal(r.body, &v) != nil || v.Tracking.Origin != OriginGateway {
		t.Errorf("get: HTTP %d %s", r.status, r.body)
	}

	elsewhere, err := client.CreateJob(t.Context(), "p1", "made elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []int{http.StatusCreated, http.StatusOK} {
		if r := call("POST", "/api/v2/agent/p1/job/"+elsewhere.ID+"/track", ""); r.status != want {
			t.Errorf("track: HTTP %d, want %d: %s", r.status, want, r.body)
		}
	}
	if r := call("POST", "/api/v2/agent/p1/job/job_999999/track", ""); r.status != http.StatusNotFound {
		t.Errorf("track unknown: HTTP %d", r.status)
	}
	var l JobList
	if r := call("GET", "/api/v2/agent/p1/jobs", ""); json.Unmarshal(r.body, &l) != nil || len(l.Jobs) != 2 {
		t.Errorf("list: %s", r.body)
	}

	fake.SetFault(fakeapi.CreateJob, fakeapi.Fault{Status: 500, Remaining: 1})
	if r := call("POST", "/api/v2/agent/p1/job", `{"prompt":"x"}`); r.status != 502 || !strings.Contains(r.errorMessage(t), "injected fault") {
		t.Errorf("upstream 500: HTTP %d %s", r.status, r.body)
	}
	// p9 is configured here but unknown upstream: the API's 404 and message.
	if r := call("POST", "/api/v2/agent/p9/job", `{"prompt":"x"}`); r.status != 404 || r.errorMessage(t) != "project not found" {
		t.Errorf("upstream 404: HTTP %d %s", r.status, r.body)
	}
	fake.SetFault(fakeapi.CreateJob, fakeapi.Fault{Status: 429, RetryAfter: "30", Remaining: 1})
	if r := call("POST", "/api/v2/agent/p1/job", `{"prompt":"x"}`); r.status != 429 || r.header.Get("Retry-After") != "30" {
		t.Errorf("upstream 429: HTTP %d Retry-After %q %s", r.status, r.header.Get("Retry-After"), r.body)
	}
	// The client now holds creates back until the Retry-After passes: 429
	// again, and nothing is sent.
	before := fake.Requests(fakeapi.CreateJob)
	if r := call("POST", "/api/v2/agent/p1/job", `{"prompt":"x"}`); r.status != 429 || r.header.Get("Retry-After") == "" {
		t.Errorf("throttled: HTTP %d Retry-After %q %s", r.status, r.header.Get("Retry-After"), r.body)
	}
	if d := fake.Requests(fakeapi.CreateJob) - before; d != 0 {
		t.Errorf("%d requests sent while throttled", d)
	}

	for name, want := range map[string]float64{
		reasonUpstreamError: 1,
		reasonRateLimited:   2,
	} {
		if got := rejected(g, "p1", name); got != want {
			t.Errorf("rejected{reason=%q} = %v, want %v", name, got, want)
		}
	}
	if got := rejected(g, "p9", reasonUpstreamError); got != 1 {
		t.Errorf("p9 upstream_error = %v, want 1", got)
	}
	// The tracker's and the gateway's metrics share one registry cleanly.
	if n := countSeries(t, reg, "mintlify_agent_job_submit_rejected_total"); n != 2*len(rejectReasons) {
		t.Errorf("%d rejected series", n)
	}
	if problems, err := promtestutil.GatherAndLint(reg); err != nil || len(problems) != 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	for _, n := range []string{"mintlify_agent_jobs", "mintlify_agent_jobs_submitted_total", "mintlify_agent_job_submit_rejected_total"} {
		if !names[n] {
			t.Errorf("%s not registered", n)
		}
	}
}
