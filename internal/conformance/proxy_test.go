//go:build conformance

package conformance

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil/blackbox"
)

// project is the project the exporter walks and the gateway serves.
const project = "docs"

// fakeOptions make the fake's operations end within seconds.
var fakeOptions = fakeapi.Options{Paths: 60, StaticExportDuration: 2 * time.Second, DeployDuration: 2 * time.Second}

// validatedAPI serves the fake behind one `prism proxy --errors` per
// reference file, on one base URL (the router).
func validatedAPI(t *testing.T, fake *fakeapi.Server) (*router, string) {
	t.Helper()
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	upstreams := map[string]string{}
	for _, file := range Files() {
		upstreams[file] = prism(t, "proxy", "--errors", rootedSpec(t, dir, file, nil), srv.URL)
	}
	return newRouter(t, upstreams)
}

// TestProxyJudgesEveryExchange, part 2: the exporter with every source and
// its gateway with every kind against the fake behind `prism proxy
// --errors`, the gateway driven until the client has called every
// endpoint it has: no request the exporter sends and no answer the fake
// gives may break the reference. Then the judge itself is tried: a planted
// bad answer of the fake and a planted bad request must both be found.
func TestProxyJudgesEveryExchange(t *testing.T) {
	t.Parallel()
	fake := fakeapi.New(fakeOptions)
	rt, url := validatedAPI(t, fake)
	args := []string{"--mintlify.api-url=" + url, "--mintlify.project=" + project, "--mintlify.max-retries=0",
		"--mintlify.analytics-budget=10000", "--analytics.min-interval=1h", "--analytics.window=1d", "--analytics.window=7d",
		"--analytics.search-top-queries=20", "--analytics.timezone=" + blackbox.NoonZone(), "--agent.poll-interval=200ms",
		"--web.enable-agent-api", "--web.enable-deployment-api", "--web.enable-static-export-api", "--web.enable-automation-api"}
	for _, d := range sources.All() {
		args = append(args, "--analytics.source="+d.Name)
	}
	x := exporter(t, args...)
	driveGateway(t, x.Base)
	// Every endpoint the client has was called (its own request counter).
	blackbox.Eventually(t, 2*time.Minute, "every client endpoint called", func() bool {
		return len(uncalled(t, x.Base)) == 0
	})
	demands := walked(t, x.Base)
	tl := tallyOf(rt.exchanges())
	t.Logf("part 2, prism proxy --errors over the fake: %d walks; %s", len(demands), tl)
	if tl.requestViolations+tl.responseViolations > 0 {
		t.Errorf("%d request and %d response violations, want none", tl.requestViolations, tl.responseViolations)
	}
	for _, d := range demands {
		if d.Result != "ok" {
			t.Errorf("%s/%s/%s: walk %s through the validating proxy, want ok", d.Project, d.Source, d.Window, d.Result)
		}
	}

	// The judge can fail: a bad answer of the fake and a bad request.
	before := len(rt.exchanges())
	fake.SetFault(fakeapi.Feedback, fakeapi.Fault{UnknownEnum: true})
	for _, q := range []string{"/feedback?limit=10", "/visitors?limit=5000"} {
		req, err := http.NewRequest(http.MethodGet, url+"/v1/analytics/"+project+q, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		do(t, req)
	}
	planted := tallyOf(rt.exchanges()[before:])
	if planted.responseViolations == 0 || planted.requestViolations == 0 {
		t.Errorf("planted faults: %s; want the unknown enum in an answer and the limit of 5000 in a request found", planted)
	}
}

// uncalled lists the client's endpoints the exporter at base has sent no
// request to (mintlify_api_requests_total).
func uncalled(t *testing.T, base string) []string {
	t.Helper()
	m, err := blackbox.TryScrape(t.Context(), base)
	if err != nil {
		return []string{err.Error()}
	}
	sent := map[string]bool{}
	for k, v := range m {
		if strings.HasPrefix(k, "mintlify_api_requests_total{") && v > 0 {
			for _, l := range strings.Split(strings.TrimSuffix(strings.SplitN(k, "{", 2)[1], "}"), ",") {
				if e, ok := strings.CutPrefix(l, "endpoint="); ok {
					sent[e] = true
				}
			}
		}
	}
	return slices.DeleteFunc(apiclient.Endpoints(), func(e string) bool { return sent[e] })
}

// driveGateway makes the client call every endpoint of the operations
// through the gateway at base: an agent job and its follow-up, an update
// and a preview, an automation run, a static export and its bundle.
func driveGateway(t *testing.T, base string) {
	t.Helper()
	api := base + "/api"
	job := mustID(t, "create job", 201)(post(t, api+"/v2/agent/"+project+"/job", `{"prompt":"Fix the typos #fake:pr:1s"}`))
	waitStatus(t, api+"/v2/agent/"+project+"/job/"+job, "completed")
	mustStatus(t, "follow-up", 200)(post(t, api+"/v2/agent/"+project+"/job/"+job+"/message", `{"prompt":"And the links #fake:pr:1s"}`))
	mustStatus(t, "update", 202)(post(t, api+"/v1/project/update/"+project, `{}`))
	mustStatus(t, "preview", 202)(post(t, api+"/v1/project/preview/"+project, `{"branch":"conformance"}`))
	mustStatus(t, "automation", 202)(post(t, api+"/v1/workflow/"+project+"/"+fakeapi.AutomationAgentJob+"/trigger", `{}`))
	export := mustID(t, "static export", 202)(post(t, api+"/v1/static-export/"+project+"/jobs", `{"domain":"docs.example.com"}`))
	waitStatus(t, api+"/v1/static-export/"+project+"/jobs/"+export, "completed")
	mustStatus(t, "bundle", 200)(post(t, api+"/v1/static-export/"+project+"/jobs/"+export+"/bundle", `{}`))
}

// mustStatus fails the test unless a call answered want.
func mustStatus(t *testing.T, what string, want int) func(int, map[string]any) {
	return func(status int, body map[string]any) {
		t.Helper()
		if status != want {
			t.Fatalf("%s through the gateway: HTTP %d %v, want %d", what, status, body, want)
		}
	}
}

// mustID is mustStatus that returns the id of what was created.
func mustID(t *testing.T, what string, want int) func(int, map[string]any) string {
	return func(status int, body map[string]any) string {
		t.Helper()
		mustStatus(t, what, want)(status, body)
		for _, k := range []string{"id", "jobId"} {
			if id, ok := body[k].(string); ok && id != "" {
				return id
			}
		}
		t.Fatalf("%s: no id in %v", what, body)
		return ""
	}
}

// waitStatus waits until what url shows has the status.
func waitStatus(t *testing.T, url, want string) {
	t.Helper()
	var last map[string]any
	testutil.Eventually(t, time.Minute, fmt.Sprintf("%s %s", url, want), func() bool {
		_, last = get(t, url)
		return last["status"] == want
	}, func() string { return fmt.Sprint(last) })
}
