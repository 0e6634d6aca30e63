package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/kinds/deployment"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil/blackbox"
)

// TestDeploymentKill9InProgress runs the built exporter with the
// deployment routes alone, lets a preview finish, triggers an update, kills
// the exporter with SIGKILL while the update is in progress, and checks
// that the restarted exporter follows it to its end and counts it once,
// that the finished preview is not counted again, and that a retry of the
// trigger with its Idempotency-Key is a replay (one deployment upstream).
func TestDeploymentKill9InProgress(t *testing.T) {
	t.Parallel()
	fake := fakeapi.New(fakeapi.Options{Projects: []string{"p1"}})
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	statePath := filepath.Join(t.TempDir(), "agent.db")
	start := func() *testutil.Exporter {
		x := startExporter(t, []string{"MINTLIFY_API_KEY=mint_test"}, "--mintlify.api-url="+srv.URL, "--mintlify.project=p1",
			"--web.enable-deployment-api", "--agent.state-file="+statePath, "--agent.poll-interval=200ms")
		testutil.WaitHTTP(t, x.Base+"/-/ready", 15*time.Second, nil)
		return x
	}
	client := &http.Client{Timeout: 10 * time.Second}
	call := func(x *testutil.Exporter, method, path, key, body string) (int, []byte, http.Header) {
		t.Helper()
		req, err := http.NewRequest(method, x.Base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, data, resp.Header
	}
	trigger := func(x *testutil.Exporter, path, key, body string) string {
		t.Helper()
		status, data, _ := call(x, "POST", path, key, body)
		var out struct{ StatusID string }
		if status != http.StatusAccepted || json.Unmarshal(data, &out) != nil || out.StatusID == "" {
			t.Fatalf("POST %s: HTTP %d %s", path, status, data)
		}
		return out.StatusID
	}
	statusOf := func(x *testutil.Exporter, id string) string {
		status, data, _ := call(x, "GET", "/api/v1/project/update-status/"+id, "", "")
		var v deployment.View
		if status != http.StatusOK || json.Unmarshal(data, &v) != nil {
			return ""
		}
		return v.Status
	}
	finished := func(kind, status string) string {
		return "mintlify_deployments_finished_total{kind=" + kind + ",project=p1,status=" + status + "}"
	}

	x := start()
	if status, data, _ := call(x, "GET", "/api/v2/agent/p1/jobs", "", ""); status != http.StatusNotFound || !strings.Contains(string(data), "--web.enable-agent-api") {
		t.Errorf("agent routes without --web.enable-agent-api: HTTP %d %s", status, data)
	}
	preview := trigger(x, "/api/v1/project/preview/p1", "", `{"branch": "docs-pr"}`)
	blackbox.Eventually(t, 0, "the preview succeeded", func() bool { return statusOf(x, preview) == "success" })
	if got, want := statusLinks(t, x.Base), []string{"Metrics /metrics", "Health /-/healthy", "Deployments of p1 /api/v1/project/p1/deployments"}; !slices.Equal(got, want) {
		t.Errorf("status page links %q, want %q", got, want)
	}
	if d := statusRows[deploymentRow](t, blackbox.StatusReport(t, x.Base), "deployments"); len(d) != 1 || d[0].StatusID != preview || d[0].Branch != "docs-pr" || d[0].Status != "success" {
		t.Errorf("status page deployments: %+v", d)
	}
	blackbox.WaitMetrics(t, x.Base, 0, map[string]float64{finished("preview", "success"): 1})
	fake.HoldDeployments(true)
	update := trigger(x, "/api/v1/project/update/p1", "release-1", "")
	blackbox.Eventually(t, 0, "the update in progress", func() bool { return statusOf(x, update) == "in_progress" })
	x.Kill(t)

	x = start()
	if got := statusOf(x, update); got != "in_progress" {
		t.Errorf("after kill -9 and restart the update is %q, want in_progress", got)
	}
	status, data, h := call(x, "POST", "/api/v1/project/update/p1", "release-1", "")
	if status != http.StatusAccepted || !strings.Contains(string(data), update) || h.Get("Idempotent-Replayed") != "true" {
		t.Errorf("retry with the key after the restart: HTTP %d %s %v, want a replay of %s", status, data, h, update)
	}
	m := withPrefix(blackbox.Scrape(t, x.Base), "mintlify_deployment")
	for k, want := range map[string]float64{
		finished("preview", "success"):                             0,
		"mintlify_deployments_in_progress{kind=update,project=p1}": 1,
	} {
		if got, ok := m[k]; !ok || got != want {
			t.Errorf("after the restart: %s = %v (present %v), want %v", k, got, ok, want)
		}
	}
	// The preview's end is still known: the API's endedAt, read from the
	// state.
	if got := m["mintlify_deployment_last_success_timestamp_seconds{kind=preview,project=p1}"]; got < float64(time.Now().Add(-time.Hour).Unix()) {
		t.Errorf("after the restart: the preview's last success is %v", got)
	}
	fake.HoldDeployments(false)
	blackbox.Eventually(t, 0, "the update succeeded", func() bool { return statusOf(x, update) == "success" })
	m = blackbox.WaitMetrics(t, x.Base, 0, map[string]float64{finished("update", "success"): 1})
	for k, want := range map[string]float64{
		finished("update", "failure"):  0,
		finished("preview", "success"): 0,
		"mintlify_deployment_duration_seconds{kind=update,project=p1,status=success}": 1,
		"mintlify_deployments_in_progress{kind=update,project=p1}":                    0,
		"mintlify_deployment_oldest_in_progress_age_seconds{kind=update,project=p1}":  0,
	} {
		if got, ok := m[k]; !ok || got != want {
			t.Errorf("after the update ended: %s = %v (present %v), want %v", k, got, ok, want)
		}
	}
	if n := fake.Deployments("p1", "update"); n != 1 {
		t.Errorf("%d updates upstream, want 1", n)
	}
	x.Stop(t)
}
