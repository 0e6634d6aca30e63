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

// projectJobIDs reads the gateway's job list of project: the ids, or the HTTP
// status when it is not 200.
func projectJobIDs(t *testing.T, base, project string) ([]string, int) {
	t.Helper()
	body, code, err := testutil.Get(t.Context(), base+"/api/v2/agent/"+project+"/jobs")
	if err != nil {
		t.Fatal(err)
	}
	if code != http.StatusOK {
		return nil, code
	}
	var list struct {
		Jobs []struct {
			ID string `json:"id"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatalf("jobs of %s: %v in %q", project, err, body)
	}
	var ids []string
	for _, j := range list.Jobs {
		ids = append(ids, j.ID)
	}
	return ids, code
}

// TestReloadAddsAnAgentProject: a project added by a reload with
// agent_jobs takes jobs at once, without a restart, and a project that had
// jobs in an earlier run (then left the configuration) gets them back from
// the state file when a reload adds it again: each tracked once, polled
// again, counted under its project.
func TestReloadAddsAnAgentProject(t *testing.T) {
	t.Parallel()
	api := blackbox.NewRecordingAPI(t, fakeapi.Options{Paths: 20, APIKey: "mint_test"})
	f := blackbox.NewReloadFile(t)
	state := t.TempDir() + "/agent.db"
	agent := f.AgentProjects
	args := blackbox.ConfigArgs(api.URL, f.Path, "--web.enable-agent-api", "--agent.state-file="+state, "--agent.poll-interval=1s")

	// A first run with blog, which takes a job that stays active.
	blackbox.WriteFile(t, f.Path, agent("docs", "blog"))
	x := startExporter(t, nil, args...)
	testutil.WaitHTTP(t, x.Base+"/-/ready", 10*time.Second, nil)
	code, earlier := blackbox.PostJob(t, x.Base, "blog", "an earlier run's job #fake:pr:1h")
	if code/100 != 2 || earlier == "" {
		t.Fatalf("blog's job in the first run: HTTP %d, id %q", code, earlier)
	}
	x.Stop(t)

	// Restarted without blog: no jobs for it.
	blackbox.WriteFile(t, f.Path, agent("docs"))
	x = startExporter(t, nil, args...)
	testutil.WaitHTTP(t, x.Base+"/-/ready", 10*time.Second, nil)
	if _, code := projectJobIDs(t, x.Base, "blog"); code != http.StatusNotFound {
		t.Fatalf("jobs of blog, not configured: HTTP %d, want 404", code)
	}

	// A reload adds blog back and guides, new: both take jobs at once.
	blackbox.WriteFile(t, f.Path, agent("docs", "blog", "guides"))
	if code, body := blackbox.PostReload(t, x.Base); code != http.StatusOK {
		t.Fatalf("POST /-/reload: HTTP %d %v", code, body)
	}
	code, added := blackbox.PostJob(t, x.Base, "guides", "a job for the added project #fake:pr:1h")
	if code/100 != 2 || added == "" {
		t.Fatalf("job for guides, added by the reload: HTTP %d, want it accepted", code)
	}
	if ids, code := projectJobIDs(t, x.Base, "guides"); code != http.StatusOK || len(ids) != 1 || ids[0] != added {
		t.Errorf("jobs of guides: %v (HTTP %d), want [%s]", ids, code, added)
	}
	if ids, code := projectJobIDs(t, x.Base, "blog"); code != http.StatusOK || len(ids) != 1 || ids[0] != earlier {
		t.Errorf("jobs of blog after the reload: %v (HTTP %d), want the earlier run's [%s], once", ids, code, earlier)
	}
	if code, _ := blackbox.PostJob(t, x.Base, "blog", "a second job for blog #fake:pr:1h"); code/100 != 2 {
		t.Errorf("job for blog after the reload: HTTP %d", code)
	}
	blackbox.WaitMetrics(t, x.Base, 10*time.Second, map[string]float64{
		"mintlify_agent_jobs{project=guides,status=active}":                            1,
		"mintlify_agent_jobs{project=blog,status=active}":                              2,
		"mintlify_agent_jobs_submitted_total{project=guides}":                          1,
		"mintlify_agent_jobs_submitted_total{project=blog}":                            1,
		"mintlify_exporter_config_last_reload_successful{}":                            1,
		"mintlify_agent_job_submit_rejected_total{project=guides,reason=rate_limited}": 0,
	})
	// The earlier job is polled again (with a poll interval of 1s).
	polled := func(id string) int {
		n := 0
		for _, s := range api.Sent() {
			if s.Method == http.MethodGet && s.Project == "blog" && strings.HasSuffix(s.Endpoint, "/"+id) {
				n++
			}
		}
		return n
	}
	before := polled(earlier)
	blackbox.Eventually(t, 10*time.Second, "the earlier job to be polled after the reload", func() bool { return polled(earlier) > before })
	x.Stop(t)
}
