package conformance_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/conformance"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// TestGatewayAnswersWhileInProgress: the gateway is a drop-in for the API,
// so its answers validate against the reference at every stage of an
// operation, not only once it ended. The fake holds deployments and
// exports in progress, so the reads here see them queued or running: an
// update-status read then once answered `endedAt: null`, a field the
// reference types as a string (make conformance's generated requests
// caught it on a slow run only), and an export not yet read answered
// `updatedAt: null`, a required string. The static export routes are the
// gateway's per project; their answers are checked against the reference's
// per organization paths.
func TestGatewayAnswersWhileInProgress(t *testing.T) {
	t.Parallel()
	ref, err := conformance.Load()
	if err != nil {
		t.Fatal(err)
	}
	api := fakeapi.New(fakeapi.Options{Projects: []string{"docs"}, APIKey: key})
	api.HoldDeployments(true)
	api.HoldStaticExports(true)
	fake := httptest.NewServer(api)
	t.Cleanup(fake.Close)
	bin, err := testutil.ExporterBinary()
	if err != nil {
		t.Fatal(err)
	}
	x := testutil.StartExporter(t, bin, []string{"MINTLIFY_API_KEY=" + key}, "--mintlify.api-url="+fake.URL,
		"--mintlify.project=docs", "--analytics.min-interval=1h", "--agent.poll-interval=100ms",
		"--web.enable-agent-api", "--web.enable-deployment-api", "--web.enable-static-export-api", "--web.enable-automation-api")
	testutil.WaitHTTP(t, x.Base+"/-/ready", 30*time.Second, nil)

	// call sends a request to the gateway and checks its answer against
	// the reference's path refPath; it returns the answer's fields.
	call := func(method, path, refPath, body string) map[string]any {
		t.Helper()
		req, err := http.NewRequest(method, x.Base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: HTTP %d %s", method, path, resp.StatusCode, data)
		}
		check, err := http.NewRequest(method, "http://api.invalid"+refPath, bytes.NewReader([]byte(body)))
		if err != nil {
			t.Fatal(err)
		}
		if err := ref.CheckResponse(check, resp.StatusCode, resp.Header, data); err != nil {
			t.Errorf("%s %s: %v\n%s", method, path, err, data)
		}
		var fields map[string]any
		if err := json.Unmarshal(data, &fields); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		return fields
	}
	id := func(fields map[string]any, name string) string {
		t.Helper()
		s, _ := fields[name].(string)
		if s == "" {
			t.Fatalf("no %s in %v", name, fields)
		}
		return s
	}

	// polled reads path until the exporter has polled the operation (its
	// tracking has lastPolledAt) and it shows status, checking every
	// answer on the way.
	polled := func(path, refPath, status string) {
		t.Helper()
		var got map[string]any
		testutil.Eventually(t, 0, "a poll of "+path+" answering "+status, func() bool {
			got = call("GET", path, refPath, "")
			tracking, _ := got["tracking"].(map[string]any)
			return tracking["lastPolledAt"] != nil && got["status"] == status
		}, func() string { return fmt.Sprint(got) })
	}

	// Read at once (queued, never read) and once polled (in progress).
	status := id(call("POST", "/api/v1/project/update/docs", "/v1/project/update/docs", ""), "statusId")
	call("GET", "/api/v1/project/update-status/"+status, "/v1/project/update-status/"+status, "")
	polled("/api/v1/project/update-status/"+status, "/v1/project/update-status/"+status, "in_progress")

	export := id(call("POST", "/api/v1/static-export/docs/jobs", "/v1/static-export/jobs", `{"domain":"docs.example.com"}`), "jobId")
	call("GET", "/api/v1/static-export/docs/jobs/"+export, "/v1/static-export/jobs/"+export, "")
	polled("/api/v1/static-export/docs/jobs/"+export, "/v1/static-export/jobs/"+export, "running")

	job := id(call("POST", "/api/v2/agent/docs/job", "/v2/agent/docs/job", `{"prompt":"document the reload"}`), "id")
	call("GET", "/api/v2/agent/docs/job/"+job, "/v2/agent/docs/job/"+job, "")

	trigger := "/v1/workflow/docs/" + fakeapi.AutomationAgentJob + "/trigger"
	call("POST", "/api"+trigger, trigger, "")
}
