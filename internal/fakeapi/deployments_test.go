package fakeapi_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

// TestDeploymentChecks: the fake's deployment endpoints refuse what the
// reference says they refuse (no key 401, a preview without a branch 400,
// an unknown status id or another organization's 404), limit previews to
// 5 a minute per organization (another organization's key is not held
// back), and hold a deployment in progress while asked to.
func TestDeploymentChecks(t *testing.T) {
	t.Parallel()
	clk := newClock()
	e := start(t, fakeapi.Options{Now: clk.Now, Projects: []string{"docs", "other"}, APIKey: "-",
		Organizations: []fakeapi.Organization{{Key: key, Projects: []string{"docs"}}, {Key: "mint_other", Projects: []string{"other"}}}})
	e.wantError(e.do("POST", "/v1/project/update/docs", "", map[string]string{"Authorization": ""}), http.StatusUnauthorized, "no key")
	for _, body := range []string{`{}`, `{"branch": ""}`, `{"branch": 3}`, `not json`} {
		e.wantError(e.do("POST", "/v1/project/preview/docs", body, nil), http.StatusBadRequest, "preview "+body)
	}
	e.wantError(e.do("POST", "/v1/project/update/other", "", nil), http.StatusForbidden, "another organization's project")
	e.wantError(e.get("/v1/project/update-status/nope"), http.StatusNotFound, "unknown status id")

	var ids []string
	for i := range fakeapi.PreviewLimit {
		r := e.do("POST", "/v1/project/preview/docs", `{"branch": "b"}`, nil)
		var got struct{ StatusID, PreviewURL string }
		if r.status != http.StatusAccepted || json.Unmarshal(r.body, &got) != nil || got.StatusID == "" || got.PreviewURL != "https://docs-b.mintlify.app" {
			t.Fatalf("preview %d: %d %s", i, r.status, r.body)
		}
		ids = append(ids, got.StatusID)
	}
	r := e.do("POST", "/v1/project/preview/docs", `{"branch": "b"}`, nil)
	e.wantError(r, http.StatusTooManyRequests, "6th preview in a minute")
	if r.header.Get("Retry-After") != "61" {
		t.Errorf("Retry-After %q, want 61", r.header.Get("Retry-After"))
	}
	other := e.do("POST", "/v1/project/preview/other", `{"branch": "b"}`, map[string]string{"Authorization": "Bearer mint_other"})
	if other.status != http.StatusAccepted {
		t.Errorf("another organization's preview: %d %s", other.status, other.body)
	}
	e.wantError(e.do("GET", "/v1/project/update-status/"+ids[0], "", map[string]string{"Authorization": "Bearer mint_other"}), http.StatusNotFound,
		"another organization's deployment")
	clk.Advance(time.Minute)
	if r := e.do("POST", "/v1/project/preview/docs", `{"branch": "b"}`, nil); r.status != http.StatusAccepted {
		t.Errorf("a preview a minute later: %d %s", r.status, r.body)
	}

	e.fake.HoldDeployments(true)
	statuses := func() []string {
		var out []string
		for range 4 {
			var d struct{ Status string }
			e.decode(e.get("/v1/project/update-status/"+ids[1]), &d)
			out = append(out, d.Status)
		}
		return out
	}
	if got := statuses(); got[0] != "queued" || got[3] != "in_progress" {
		t.Errorf("held: %v, want queued then in_progress", got)
	}
	e.fake.HoldDeployments(false)
	if got := statuses(); got[0] != "success" {
		t.Errorf("released: %v, want success", got)
	}
}
