package kinds_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/gateway"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/kinds/staticexport"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// startExport starts an export of domain on d1 and returns its view.
func (e *deployEnv) startExport(domain string) ExportView {
	e.t.Helper()
	r := e.call("POST", "/api/v1/static-export/d1/jobs", `{"domain": "`+domain+`", "version": "v1"}`)
	var v ExportView
	if r.status != http.StatusAccepted || json.Unmarshal(r.body, &v) != nil || v.JobID == "" {
		e.t.Fatalf("start: HTTP %d %s, want 202 with a jobId", r.status, r.body)
	}
	return v
}

// waitExport waits until the gateway shows export id as ok says.
func (e *deployEnv) waitExport(id, what string, ok func(ExportView) bool) ExportView {
	e.t.Helper()
	var v ExportView
	testutil.Eventually(e.t, 0, "static export "+id+" "+what, func() bool {
		r := e.call("GET", "/api/v1/static-export/d1/jobs/"+id, "")
		return r.status == http.StatusOK && json.Unmarshal(r.body, &v) == nil && ok(v)
	})
	return v
}

// TestStaticExportFollowedToItsEnd: over real HTTP against the fake, an
// export started through the gateway is followed with its progress while
// it runs, counted once when completed, and its bundle is refused (409)
// until then; the bundle's URL reaches the client and nothing else (logs,
// metrics, status page).
func TestStaticExportFollowedToItsEnd(t *testing.T) {
	t.Parallel()
	e := newDeployEnv(t, "d1")
	v := e.startExport("docs.example.com")
	bundle := "/api/v1/static-export/d1/jobs/" + v.JobID + "/bundle"
	if r := e.call("POST", bundle, ""); r.status != http.StatusConflict {
		t.Errorf("bundle before the end: HTTP %d %s, want 409", r.status, r.body)
	}
	e.clock.Advance(30 * time.Second)
	e.waitExport(v.JobID, "running with progress", func(v ExportView) bool {
		return v.Status == "running" && v.Progress > 0 && v.PageCount > 0
	})
	testutil.Eventually(t, 0, "progress ratio exported", func() bool {
		p, _ := e.value("mintlify_static_export_progress_ratio", "project", "d1")
		n, _ := e.value("mintlify_static_export_pages_exported", "project", "d1")
		running, _ := e.value("mintlify_static_exports_in_progress", "project", "d1")
		return p > 0 && p < 1 && n > 0 && running == 1
	})
	e.clock.Advance(time.Minute)
	e.waitExport(v.JobID, "completed", func(v ExportView) bool { return v.Status == "completed" && v.Progress == 100 })
	time.Sleep(50 * time.Millisecond) // real time: a few more poll rounds of 10 ms must not count it again
	if n, _ := e.value("mintlify_static_exports_finished_total", "project", "d1", "status", "completed"); n != 1 {
		t.Errorf("finished{completed} = %v, want 1", n)
	}
	if n, _ := e.value("mintlify_static_export_last_success_timestamp_seconds", "project", "d1"); n <= 0 {
		t.Errorf("last success timestamp = %v", n)
	}
	r := e.call("POST", bundle, "")
	var b struct {
		URL       string    `json:"bundleUrl"`
		ExpiresAt time.Time `json:"expiresAt"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &b) != nil || !strings.HasPrefix(b.URL, "http") {
		t.Fatalf("bundle: HTTP %d %s, want 200 with its URL", r.status, r.body)
	}
	st, err := json.Marshal(e.trk.Status())
	if err != nil {
		t.Fatal(err)
	}
	mfs, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for what, text := range map[string]string{"logs": e.logs.String(), "status page": string(st), "metrics": fmt.Sprint(mfs)} {
		if strings.Contains(text, b.URL) || strings.Contains(text, strings.SplitN(b.URL, "?", 2)[0]) {
			t.Errorf("the bundle's URL is in the %s", what)
		}
	}
	// The tracker's clock is the wall clock here, the fake's a day
	// earlier: the row says when the bundle expires (ready or expired).
	if !strings.Contains(string(st), "expire") || !strings.Contains(string(st), b.ExpiresAt.UTC().Format(time.RFC3339)) {
		t.Errorf("status page does not say when the bundle expires: %s", st)
	}
}

// TestStaticExportFailedAndRefused: a failed export is counted failed; a
// 403 of the API (static export not enabled) reaches the client as such.
func TestStaticExportFailedAndRefused(t *testing.T) {
	t.Parallel()
	e := newDeployEnv(t, "d1")
	v := e.startExport("fail.example.com")
	e.clock.Advance(2 * time.Minute)
	e.waitExport(v.JobID, "failed", func(v ExportView) bool { return v.Status == "failed" && v.Error != "" })
	testutil.Eventually(t, 0, "failed counted", func() bool {
		n, _ := e.value("mintlify_static_exports_finished_total", "project", "d1", "status", "failed")
		return n == 1
	})
	if r := e.call("POST", "/api/v1/static-export/d1/jobs", `{"domain": "noexport.example.com"}`); r.status != http.StatusForbidden {
		t.Errorf("start for an organization without static export: HTTP %d %s, want 403", r.status, r.body)
	}
	if r := e.call("POST", "/api/v1/static-export/jobs-only/jobs", `{"domain": "docs.example.com"}`); r.status != http.StatusForbidden {
		t.Errorf("start on a project without static_exports: HTTP %d %s, want 403", r.status, r.body)
	}
	if r := e.call("POST", "/api/v1/static-export/d1/jobs", `{"domain": "https://docs.example.com/x"}`); r.status != http.StatusBadRequest {
		t.Errorf("start with a URL for domain: HTTP %d %s, want 400", r.status, r.body)
	}
}

// TestAKeyOfAnotherKindIsAnotherRequest: the Idempotency-Keys of a project
// are one namespace for every kind, so a key that started a static export
// answers a job create, a deployment trigger and a start of another
// export as another request (422, nothing sent), and the export's own
// retry as a replay. Before the engine's keys named the op kind, a job
// create met an export's key as a request still under way (409).
func TestAKeyOfAnotherKindIsAnotherRequest(t *testing.T) {
	t.Parallel()
	e := newDeployEnv(t, "d1")
	key := []string{"Idempotency-Key", "shared-key"}
	first := e.call("POST", "/api/v1/static-export/d1/jobs", `{"domain": "docs.example.com"}`, key...)
	if first.status != http.StatusAccepted {
		t.Fatalf("start: HTTP %d %s", first.status, first.body)
	}
	for _, c := range []struct{ name, path, body string }{
		{"job create", "/api/v2/agent/d1/job", `{"prompt": "x"}`},
		{"deployment trigger", "/api/v1/project/update/d1", `{}`},
		{"another export", "/api/v1/static-export/d1/jobs", `{"domain": "other.example.com"}`},
	} {
		if r := e.call("POST", c.path, c.body, key...); r.status != http.StatusUnprocessableEntity {
			t.Errorf("%s with the export's key: HTTP %d %s, want 422", c.name, r.status, r.body)
		}
	}
	if r := e.call("POST", "/api/v1/static-export/d1/jobs", `{"domain": "docs.example.com"}`, key...); r.status != http.StatusAccepted ||
		r.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the export's retry: HTTP %d %s, want a replay", r.status, r.body)
	}
}

// TestStaticExportFollowedForOneProject: the API's exports are the
// organization's (its paths name no project), so an export started for d1
// and then handed over for d2, a project of the same organization, is
// refused (409) rather than followed and counted under both.
func TestStaticExportFollowedForOneProject(t *testing.T) {
	t.Parallel()
	e := newDeployEnv(t, "d1")
	v := e.startExport("docs.example.com")
	r := e.call("POST", "/api/v1/static-export/d2/jobs/"+v.JobID+"/track", "")
	if r.status != http.StatusConflict || !strings.Contains(string(r.body), "followed for project d1") {
		t.Errorf("track of d1's export for d2: HTTP %d %s, want 409 naming d1", r.status, r.body)
	}
	var list struct {
		Exports []ExportView `json:"exports"`
	}
	if r := e.call("GET", "/api/v1/static-export/d2/jobs", ""); r.status != http.StatusOK || json.Unmarshal(r.body, &list) != nil || len(list.Exports) != 0 {
		t.Errorf("d2's exports: HTTP %d %s, want none", r.status, r.body)
	}
	if r := e.call("POST", "/api/v1/static-export/d1/jobs/"+v.JobID+"/track", ""); r.status != http.StatusOK {
		t.Errorf("track for d1, which follows it: HTTP %d %s, want 200", r.status, r.body)
	}
}

// TestStaticExportStartLimit (issue 45): the N+1-th start of a project
// within the hour (--static-export.start-limit, here 3) is refused with
// 429 and Retry-After, and nothing reaches the API; the limit is per
// project, and the window rolls.
func TestStaticExportStartLimit(t *testing.T) {
	t.Parallel()
	e := newDeployEnvGW(t, func(*fakeapi.Options) {}, func(c *gateway.Config) { c.StartLimits = map[string]int{staticexport.Name: 3} }, "d1")
	start := func(project string) response {
		return e.call("POST", "/api/v1/static-export/"+project+"/jobs", `{"domain": "docs.example.com"}`)
	}
	for range 3 {
		if r := start("d1"); r.status != http.StatusAccepted {
			t.Fatalf("start: HTTP %d %s, want 202", r.status, r.body)
		}
	}
	e.clock.Advance(10 * time.Minute)
	r := start("d1")
	if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") != "3000" || !strings.Contains(r.errorMessage(t), "at most 3 static exports per 1h0m0s per project") {
		t.Errorf("4th start within the hour: HTTP %d %s Retry-After %q, want 429 after 3000", r.status, r.body, r.header.Get("Retry-After"))
	}
	if n := e.fake.Requests(fakeapi.StartStaticExport); n != 3 {
		t.Errorf("%d starts reached the API, want 3", n)
	}
	if v, _ := e.value("mintlify_gateway_requests_limited_total", "limit", "static_export_starts"); v != 1 {
		t.Errorf("mintlify_gateway_requests_limited_total{limit=static_export_starts} = %v, want 1", v)
	}
	if r := start("d2"); r.status != http.StatusAccepted {
		t.Errorf("another project's start: HTTP %d %s, want 202", r.status, r.body)
	}
	e.clock.Advance(50 * time.Minute)
	if r := start("d1"); r.status != http.StatusAccepted {
		t.Errorf("a start an hour later: HTTP %d %s, want 202", r.status, r.body)
	}
}

// TestStaticExportReadThrough (issue 44, 2): an export the gateway does
// not follow is read from the API with the organization's key and
// answered as the API answers it, and stays not followed; one the API
// does not know is the API's 404.
func TestStaticExportReadThrough(t *testing.T) {
	t.Parallel()
	e := newDeployEnv(t, "d1")
	x, err := e.api.StartStaticExport(context.Background(), apiclient.StaticExportRequest{Domain: "docs.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	var v apiclient.StaticExportJob
	r := e.call("GET", "/api/v1/static-export/d1/jobs/"+x.JobID, "")
	if r.status != http.StatusOK || json.Unmarshal(r.body, &v) != nil || v.JobID != x.JobID || v.Status == "" {
		t.Errorf("an export not followed: HTTP %d %s, want 200 with the API's answer", r.status, r.body)
	}
	if r := e.call("GET", "/api/v1/static-export/d1/jobs", ""); !strings.Contains(string(r.body), `"exports":[]`) {
		t.Errorf("an export read through is followed: %s", r.body)
	}
	if r := e.call("GET", "/api/v1/static-export/d1/jobs/nope", ""); r.status != http.StatusNotFound || r.errorMessage(t) == "" {
		t.Errorf("an export the API does not know: HTTP %d %s, want 404 JSON", r.status, r.body)
	}
}
