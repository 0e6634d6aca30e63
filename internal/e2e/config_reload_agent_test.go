package e2e

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil/blackbox"
)

// statusLinks are the status page's header links as its JSON lists them,
// "text href" each, and whether its HTML shows each of them.
func statusLinks(t *testing.T, base string) []string {
	t.Helper()
	var out []string
	page, code, err := testutil.Get(t.Context(), base+"/")
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET /: HTTP %d %v", code, err)
	}
	for _, l := range blackbox.StatusReport(t, base).Links {
		if !strings.Contains(page, `<a href="`+l.Href+`">`+l.Text+`</a>`) {
			t.Errorf("the page does not show the link %q to %s", l.Text, l.Href)
		}
		out = append(out, l.Text+" "+l.Href)
	}
	return out
}

// TestStatusPageLinksFollowReloads: the status page's links to each agent
// project's jobs, in its HTML and its JSON, are those of the configuration
// in force: a reload that adds a project adds its link, one that removes
// a project removes it.
func TestStatusPageLinksFollowReloads(t *testing.T) {
	t.Parallel()
	api := blackbox.NewRecordingAPI(t, fakeapi.Options{Paths: 20, APIKey: "mint_test"})
	f := blackbox.NewReloadFile(t)
	blackbox.WriteFile(t, f.Path, f.AgentProjects("docs", "blog"))
	x := startExporter(t, nil, blackbox.ConfigArgs(api.URL, f.Path, "--web.enable-agent-api", "--agent.state-file="+t.TempDir()+"/agent.db")...)
	testutil.WaitHTTP(t, x.Base+"/-/ready", 10*time.Second, nil)
	jobs := func(p string) string { return "Agent jobs of " + p + " /api/v2/agent/" + p + "/jobs" }
	fixed := []string{"Metrics /metrics", "Health /-/healthy"}
	if got, want := statusLinks(t, x.Base), append(fixed, jobs("docs"), jobs("blog")); !slices.Equal(got, want) {
		t.Fatalf("links at start %q, want %q", got, want)
	}
	blackbox.WriteFile(t, f.Path, f.AgentProjects("docs", "guides"))
	if code, body := blackbox.PostReload(t, x.Base); code != http.StatusOK {
		t.Fatalf("POST /-/reload: HTTP %d %v", code, body)
	}
	if got, want := statusLinks(t, x.Base), append(fixed, jobs("docs"), jobs("guides")); !slices.Equal(got, want) {
		t.Errorf("links after the reload %q, want %q", got, want)
	}
	x.Stop(t)
}

// TestReloadFailsWhenAnAddedAgentProjectCannotBeRead: a reload adding an
// agent project whose jobs cannot be read from the state (with replicas,
// the state in Redis) fails as a file that does not validate does: 500
// naming the project and what could not be read, the reload metric 0, and
// nothing of the new configuration applies (the project takes no job, is
// not walked, has no link). Once the state reads again, the same reload
// succeeds.
func TestReloadFailsWhenAnAddedAgentProjectCannotBeRead(t *testing.T) {
	t.Parallel()
	redisSrv := testutil.NewRedis(t)
	api := blackbox.NewRecordingAPI(t, fakeapi.Options{Paths: 20, APIKey: "mint_test"})
	f := blackbox.NewReloadFile(t)
	const prefix = "reload:"
	f.Head = "cluster:\n  address: " + redisSrv.Addr + "\n  key_prefix: \"" + prefix + "\"\n  timeout: 500ms\n  lease_duration: 3s\n" +
		"  forward_secret_file: " + blackbox.KeyFile(t, t.TempDir(), "forward-secret", "a secret the replicas share") + "\n" + f.Head
	blackbox.WriteFile(t, f.Path, f.AgentProjects("docs"))
	x := startExporter(t, nil, blackbox.ConfigArgs(api.URL, f.Path, "--web.enable-agent-api", "--agent.state-file="+t.TempDir()+"/agent.db")...)
	testutil.WaitHTTP(t, x.Base+"/-/ready", 10*time.Second, nil)
	blackbox.WaitMetrics(t, x.Base, 15*time.Second, map[string]float64{"mintlify_exporter_cluster_agent_gateway{}": 1})

	// The follow-up intents, read last when a project is added, become
	// unreadable: a key of the wrong type answers WRONGTYPE.
	intents := prefix + "state:{agent}:bucket:message_intents"
	testutil.RedisCLI(t, redisSrv.Addr, nil, "DEL", intents)
	testutil.RedisCLI(t, redisSrv.Addr, nil, "SET", intents, "not a hash")
	blackbox.WriteFile(t, f.Path, f.AgentProjects("docs", "blog"))
	code, body := blackbox.PostReload(t, x.Base)
	if code != http.StatusInternalServerError || !strings.Contains(body["error"], "blog") || !strings.Contains(body["error"], "message intents") {
		t.Fatalf("POST /-/reload with blog's state unreadable: HTTP %d %v, want 500 naming blog and what could not be read", code, body)
	}
	if m := blackbox.Scrape(t, x.Base); m["mintlify_exporter_config_last_reload_successful{}"] != 0 {
		t.Error("mintlify_exporter_config_last_reload_successful is not 0 after the failed reload")
	} else {
		for k := range m {
			if strings.Contains(k, "project=blog") {
				t.Errorf("series %s of a project the failed reload added", k)
			}
		}
	}
	if code, _ := blackbox.PostJob(t, x.Base, "blog", "#fake:pr:1h"); code != http.StatusNotFound {
		t.Errorf("job for blog after the failed reload: HTTP %d, want 404", code)
	}
	r := blackbox.StatusReport(t, x.Base)
	if len(r.Organizations) != 1 || !slices.Equal(r.Organizations[0].Projects, []string{"docs"}) || r.Exporter.Config.LastReloadSuccessful {
		t.Errorf("status after the failed reload: %+v %+v, want the old configuration (docs only) and the reload failed", r.Organizations, r.Exporter.Config)
	}
	if len(api.Analytics("blog")) != 0 {
		t.Error("blog was walked after the failed reload")
	}

	testutil.RedisCLI(t, redisSrv.Addr, nil, "DEL", intents)
	if code, body := blackbox.PostReload(t, x.Base); code != http.StatusOK {
		t.Fatalf("POST /-/reload with the state readable: HTTP %d %v", code, body)
	}
	if code, _ := blackbox.PostJob(t, x.Base, "blog", "#fake:pr:1h"); code/100 != 2 {
		t.Errorf("job for blog after the reload: HTTP %d", code)
	}
	if links := statusLinks(t, x.Base); !slices.Contains(links, "Agent jobs of blog /api/v2/agent/blog/jobs") {
		t.Errorf("links %q lack blog's jobs", links)
	}
	blackbox.WaitMetrics(t, x.Base, 10*time.Second, map[string]float64{
		"mintlify_exporter_config_last_reload_successful{}": 1,
		"mintlify_agent_jobs_submitted_total{project=blog}": 1,
	})
	x.Stop(t)
}
