package e2e

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil/blackbox"
)

// TestJobForAProjectWithoutAgentJobsNamesTheSetting: a job for a project
// the exporter exports with agent_jobs: false is refused with a 403 (the
// rule of every kind, issue 38: a project the exporter does not know is
// 404) that says the project takes no agent jobs and names agent_jobs (not
// --mintlify.project, which would send the reader to the wrong setting);
// a project the exporter does not know keeps its own message. A reload
// that turns agent_jobs off for a project moves it from one to the other.
func TestJobForAProjectWithoutAgentJobsNamesTheSetting(t *testing.T) {
	t.Parallel()
	api := blackbox.NewRecordingAPI(t, fakeapi.Options{Paths: 20, APIKey: "mint_test"})
	f := blackbox.NewReloadFile(t)
	jobless := "  - id: blog\n    windows: [7d]\n    timezone: " + blackbox.NoonZone() + "\n    sources: {visitors: {}}\n    agent_jobs: false\n"
	blackbox.WriteFile(t, f.Path, f.AgentProjects("docs")+jobless)
	x := startExporter(t, nil, blackbox.ConfigArgs(api.URL, f.Path, "--web.enable-agent-api", "--agent.state-file="+t.TempDir()+"/agent.db")...)
	testutil.WaitHTTP(t, x.Base+"/-/ready", 10*time.Second, nil)
	submit := func(project string, want int) string {
		t.Helper()
		resp, err := http.Post(x.Base+"/api/v2/agent/"+project+"/job", "application/json", strings.NewReader(`{"prompt":"x"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct{ Error string }
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != want {
			t.Fatalf("job for %s: HTTP %d, %v; want %d with a JSON error", project, resp.StatusCode, err, want)
		}
		return body.Error
	}
	if msg := submit("blog", http.StatusForbidden); !strings.Contains(msg, "does not take agent jobs") || !strings.Contains(msg, "agent_jobs: false") ||
		strings.Contains(msg, "not configured") {
		t.Errorf("job for blog (agent_jobs: false): %q, want it to say it takes no agent jobs and name agent_jobs", msg)
	}
	if msg := submit("nowhere", http.StatusNotFound); !strings.Contains(msg, "not configured in this exporter") || strings.Contains(msg, "does not take") {
		t.Errorf("job for an unknown project: %q, want it to say it is not configured", msg)
	}
	// docs loses its agent jobs in a reload.
	blackbox.WriteFile(t, f.Path, f.Head+strings.ReplaceAll(jobless, "blog", "docs"))
	if code, body := blackbox.PostReload(t, x.Base); code != http.StatusOK {
		t.Fatalf("POST /-/reload: HTTP %d %v", code, body)
	}
	if msg := submit("docs", http.StatusForbidden); !strings.Contains(msg, "does not take agent jobs") {
		t.Errorf("job for docs after its agent_jobs became false: %q", msg)
	}
	x.Stop(t)
}
