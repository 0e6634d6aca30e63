package fakeapi_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

// TestSandboxUpdatesSometimesFail: on the sandbox every third update of a
// project ends in failure (issue 38, item 5: every update succeeded, so
// MintlifyDeploymentFailed could not be seen), another project counts its
// own.
func TestSandboxUpdatesSometimesFail(t *testing.T) {
	t.Parallel()
	e := start(t, fakeapi.Options{Now: newClock().Now, Projects: []string{"docs", "api"}, FailEveryUpdate: fakeapi.SandboxFailEveryUpdate})
	end := func(project string) string {
		r := e.do("POST", "/v1/project/update/"+project, "", nil)
		var got struct{ StatusID string }
		if r.status != http.StatusAccepted || json.Unmarshal(r.body, &got) != nil {
			t.Fatalf("update %s: %d %s", project, r.status, r.body)
		}
		var d struct{ Status string }
		for range 3 { // queued, in_progress, then its end
			e.decode(e.get("/v1/project/update-status/"+got.StatusID), &d)
		}
		return d.Status
	}
	var docs []string
	for range 6 {
		docs = append(docs, end("docs"))
	}
	want := []string{"success", "success", "failure", "success", "success", "failure"}
	if !slices.Equal(docs, want) {
		t.Errorf("docs' updates ended %v, want %v", docs, want)
	}
	if got := end("api"); got != "success" {
		t.Errorf("api's first update ended %s, want success", got)
	}
}
