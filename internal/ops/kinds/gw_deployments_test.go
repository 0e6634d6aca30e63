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
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/kinds/deployment"
)

// TestDeploymentRoutesFollowToTheEnd: an update and a preview triggered
// over HTTP answer the API's 202 with the status id (and preview URL),
// are shown through update-status and the list, and are followed to
// success and failure with the metrics counting each once.
func TestDeploymentRoutesFollowToTheEnd(t *testing.T) {
	t.Parallel()
	e := newDeployEnv(t)
	up, _ := e.triggered(e.call("POST", "/api/v1/project/update/d1", ""))
	id, url := e.triggered(e.call("POST", "/api/v1/project/preview/d1", `{"branch": "fail-docs"}`))
	if url != fakeapi.PreviewURL("d1", "fail-docs") {
		t.Errorf("previewUrl %q", url)
	}
	if v := e.waitStatus(up, "success"); v.Kind != "update" || v.Commit.Ref != "main" || len(v.Commit.SHA) != 40 || v.EndedAt.IsZero() {
		t.Errorf("update followed: %+v", v)
	}
	if v := e.waitStatus(id, "failure"); v.Kind != "preview" || v.PreviewURL != url || v.Commit.Ref != "fail-docs" {
		t.Errorf("preview followed: %+v", v)
	}
	for _, c := range []struct {
		kind, status string
		want         float64
	}{{"update", "success", 1}, {"update", "failure", 0}, {"preview", "failure", 1}, {"preview", "success", 0}} {
		got := e.finished("d1", c.kind, c.status)
		if got != c.want {
			t.Errorf("finished{d1,%s,%s} = %v, want %v", c.kind, c.status, got, c.want)
		}
	}
	var list DeploymentList
	r := e.call("GET", "/api/v1/project/d1/deployments?limit=1", "")
	if r.status != http.StatusOK || json.Unmarshal(r.body, &list) != nil || len(list.Deployments) != 1 {
		t.Errorf("list: HTTP %d %s", r.status, r.body)
	}
	// A status id started elsewhere: followed once, shown, counted.
	other, err := e.api.TriggerPreview(context.Background(), "d2", "ci")
	if err != nil {
		t.Fatal(err)
	}
	r = e.call("POST", "/api/v1/project/d2/update-status/"+other.StatusID+"/track", `{"kind": "preview"}`)
	if r.status != http.StatusCreated {
		t.Fatalf("track: HTTP %d %s", r.status, r.body)
	}
	if r := e.call("POST", "/api/v1/project/d2/update-status/"+other.StatusID+"/track", ""); r.status != http.StatusOK {
		t.Errorf("track again: HTTP %d %s, want 200", r.status, r.body)
	}
	e.waitStatus(other.StatusID, "success")
	if got := e.finished("d2", "preview", "success"); got != 1 {
		t.Errorf("handed-over preview counted %v times", got)
	}
	if r := e.call("POST", "/api/v1/project/d1/update-status/"+other.StatusID+"/track", ""); r.status != http.StatusConflict {
		t.Errorf("another project's status id: HTTP %d %s, want 409", r.status, r.body)
	}
	if r := e.call("POST", "/api/v1/project/d1/update-status/nope/track", ""); r.status != http.StatusNotFound {
		t.Errorf("unknown status id: HTTP %d %s, want 404", r.status, r.body)
	}
}

// TestDeploymentStatusReadThrough (issue 44, 2): the update-status of a
// deployment the gateway does not follow is answered from the API, as a
// client of the API reads it, and stays not followed; one the API does
// not know is the API's 404, after one read per organization.
func TestDeploymentStatusReadThrough(t *testing.T) {
	t.Parallel()
	e := newDeployEnv(t)
	other, err := e.api.TriggerUpdate(context.Background(), "d2")
	if err != nil {
		t.Fatal(err)
	}
	var d apiclient.Deployment
	r := e.call("GET", "/api/v1/project/update-status/"+other.StatusID, "")
	if r.status != http.StatusOK || json.Unmarshal(r.body, &d) != nil || d.ID != other.StatusID || d.ProjectID != "d2" || d.Status == "" {
		t.Errorf("a status not followed: HTTP %d %s, want 200 with the API's answer", r.status, r.body)
	}
	if r := e.call("GET", "/api/v1/project/d2/deployments", ""); !strings.Contains(string(r.body), `"deployments":[]`) {
		t.Errorf("a status read through is followed: %s", r.body)
	}
	before := e.fake.Requests(fakeapi.DeploymentStatus)
	r = e.call("GET", "/api/v1/project/update-status/nope", "")
	if r.status != http.StatusNotFound || r.errorMessage(t) == "" {
		t.Errorf("a status the API does not know: HTTP %d %s, want 404 JSON", r.status, r.body)
	}
	if n := e.fake.Requests(fakeapi.DeploymentStatus) - before; n != 2 {
		t.Errorf("%d reads of an unknown status, want 2 (one per organization)", n)
	}
}

// TestDeploymentRefusals: every 4xx of the gateway's own is JSON and
// sends nothing upstream.
func TestDeploymentRefusals(t *testing.T) {
	t.Parallel()
	e := newDeployEnv(t)
	long := strings.Repeat("b", deployment.MaxBranchBytes+1)
	cases := []struct {
		name, method, path, body string
		hdr                      []string
		status                   int
		allow                    string
	}{
		{"unknown project", "POST", "/api/v1/project/update/nope", "", nil, 404, ""},
		{"project without deployments", "POST", "/api/v1/project/preview/jobs-only", `{"branch":"a"}`, nil, 403, ""},
		{"list of a project without deployments", "GET", "/api/v1/project/jobs-only/deployments", "", nil, 403, ""},
		{"missing branch", "POST", "/api/v1/project/preview/d1", `{}`, nil, 400, ""},
		{"null branch", "POST", "/api/v1/project/preview/d1", `{"branch": null}`, nil, 400, ""},
		{"empty branch", "POST", "/api/v1/project/preview/d1", `{"branch": " "}`, nil, 400, ""},
		{"branch not a string", "POST", "/api/v1/project/preview/d1", `{"branch": 7}`, nil, 400, ""},
		{"over-long branch", "POST", "/api/v1/project/preview/d1", `{"branch": "` + long + `"}`, nil, 400, ""},
		{"control characters", "POST", "/api/v1/project/preview/d1", `{"branch": "a\nb"}`, nil, 400, ""},
		{"empty preview body", "POST", "/api/v1/project/preview/d1", ``, nil, 400, ""},
		{"bad JSON", "POST", "/api/v1/project/update/d1", `{"x":`, nil, 400, ""},
		{"not an object", "POST", "/api/v1/project/update/d1", `[]`, nil, 400, ""},
		{"two values", "POST", "/api/v1/project/preview/d1", `{"branch":"a"} {}`, nil, 400, ""},
		{"body too large", "POST", "/api/v1/project/preview/d1", `{"branch": "a", "pad": "` + strings.Repeat("x", 5000) + `"}`, nil, 413, ""},
		{"not JSON", "POST", "/api/v1/project/update/d1", "x", []string{"Content-Type", "text/plain"}, 415, ""},
		{"bad Idempotency-Key", "POST", "/api/v1/project/update/d1", "", []string{"Idempotency-Key", strings.Repeat("k", 256)}, 400, ""},
		{"bad kind", "POST", "/api/v1/project/d1/update-status/x/track", `{"kind": "rollback"}`, nil, 400, ""},
		{"GET a trigger", "GET", "/api/v1/project/update/d1", "", nil, 405, "POST"},
		{"DELETE a preview", "DELETE", "/api/v1/project/preview/d1", "", nil, 405, "POST"},
		{"POST a status", "POST", "/api/v1/project/update-status/x", "", nil, 405, "GET, HEAD"},
		{"PUT a list", "PUT", "/api/v1/project/d1/deployments", "", nil, 405, "GET, HEAD"},
		{"GET a track", "GET", "/api/v1/project/d1/update-status/x/track", "", nil, 405, "POST"},
		{"bad limit", "GET", "/api/v1/project/d1/deployments?limit=0", "", nil, 400, ""},
		{"agent routes stay", "GET", "/api/v2/agent/jobs-only/jobs", "", nil, 200, ""},
	}
	for _, c := range cases {
		r := e.call(c.method, c.path, c.body, c.hdr...)
		if r.status != c.status {
			t.Errorf("%s: HTTP %d %s, want %d", c.name, r.status, r.body, c.status)
			continue
		}
		if c.status >= 400 && r.errorMessage(t) == "" {
			t.Errorf("%s: no JSON error", c.name)
		}
		if got := r.header.Get("Allow"); got != c.allow {
			t.Errorf("%s: Allow %q, want %q", c.name, got, c.allow)
		}
	}
	if n := e.triggers() + e.fake.Requests(fakeapi.DeploymentStatus); n != 0 {
		t.Errorf("%d requests reached the API for refused requests", n)
	}
}

// TestDeploymentLocalLimits: the 11th update trigger of an organization in
// 10 s, and its 6th preview in a minute, are refused with 429 and
// Retry-After without reaching the API; another organization's are not;
// the windows roll; an upstream 429 is passed on with its Retry-After and
// pauses the endpoint.
func TestDeploymentLocalLimits(t *testing.T) {
	t.Parallel()
	e := newDeployEnv(t)
	for i := range gateway.UpdateLimit {
		e.triggered(e.call("POST", "/api/v1/project/update/"+[]string{"d1", "d2"}[i%2], ""))
	}
	r := e.call("POST", "/api/v1/project/update/d2", "")
	if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") != "10" {
		t.Errorf("11th update of organization a in 10s: HTTP %d %s Retry-After %q, want 429 after 10", r.status, r.body, r.header.Get("Retry-After"))
	}
	if n := e.fake.Requests(fakeapi.TriggerUpdate); n != gateway.UpdateLimit {
		t.Errorf("%d updates reached the API, want %d", n, gateway.UpdateLimit)
	}
	e.triggered(e.call("POST", "/api/v1/project/update/d3", "")) // organization b
	for i := range deployment.PreviewLimit {
		e.triggered(e.call("POST", "/api/v1/project/preview/d1", fmt.Sprintf(`{"branch": "b%d"}`, i)))
	}
	e.clock.Advance(30 * time.Second)
	r = e.call("POST", "/api/v1/project/preview/d2", `{"branch": "x"}`)
	if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") != "30" {
		t.Errorf("6th preview in a minute: HTTP %d %s Retry-After %q, want 429 after 30", r.status, r.body, r.header.Get("Retry-After"))
	}
	if n := e.fake.Requests(fakeapi.TriggerPreview); n != deployment.PreviewLimit {
		t.Errorf("%d previews reached the API, want %d", n, deployment.PreviewLimit)
	}
	e.triggered(e.call("POST", "/api/v1/project/update/d1", "")) // 30s later: the update window rolled
	e.clock.Advance(30 * time.Second)
	e.fake.SetFault(fakeapi.TriggerPreview, fakeapi.Fault{Status: http.StatusTooManyRequests, RetryAfter: "7", Remaining: 1})
	r = e.call("POST", "/api/v1/project/preview/d1", `{"branch": "y"}`)
	if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") != "7" {
		t.Errorf("upstream 429: HTTP %d %s Retry-After %q, want 429 after 7", r.status, r.body, r.header.Get("Retry-After"))
	}
	sent := e.fake.Requests(fakeapi.TriggerPreview)
	if r := e.call("POST", "/api/v1/project/preview/d1", `{"branch": "y"}`); r.status != http.StatusTooManyRequests || e.fake.Requests(fakeapi.TriggerPreview) != sent {
		t.Errorf("a preview during the API's pause: HTTP %d, %d sent; want 429, none sent", r.status, e.fake.Requests(fakeapi.TriggerPreview)-sent)
	}
	e.clock.Advance(8 * time.Second)
	e.triggered(e.call("POST", "/api/v1/project/preview/d1", `{"branch": "y"}`))
}

// TestDeploymentIdempotencyOverHTTP: a retried trigger with its key is
// answered as the first, marked replayed, and sent once.
func TestDeploymentIdempotencyOverHTTP(t *testing.T) {
	t.Parallel()
	e := newDeployEnv(t)
	first := e.call("POST", "/api/v1/project/preview/d1", `{"branch": "pr-7"}`, "Idempotency-Key", "pipeline-7")
	id, url := e.triggered(first)
	again := e.call("POST", "/api/v1/project/preview/d1", `{ "branch" : "pr-7" }`, "Idempotency-Key", `"pipeline-7"`)
	id2, url2 := e.triggered(again)
	if id2 != id || url2 != url || again.header.Get("Idempotent-Replayed") != "true" || first.header.Get("Idempotent-Replayed") != "" {
		t.Errorf("replay: %s %s %v; first %s %s", id2, url2, again.header, id, url)
	}
	if r := e.call("POST", "/api/v1/project/preview/d1", `{"branch": "pr-8"}`, "Idempotency-Key", "pipeline-7"); r.status != http.StatusUnprocessableEntity {
		t.Errorf("the key with another branch: HTTP %d %s, want 422", r.status, r.body)
	}
	if n := e.fake.Deployments("d1", "preview"); n != 1 {
		t.Errorf("%d previews upstream, want 1", n)
	}
}
