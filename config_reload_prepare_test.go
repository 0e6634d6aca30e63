package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/exporter"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/logging"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil/blackbox"
)

// serveInProcess runs serve in this process, as main does, with args, and
// returns its base URL; the cleanup stops it and checks it returned
// without an error once every goroutine it started has ended.
func serveInProcess(t *testing.T, args ...string) string {
	t.Helper()
	addr := testutil.FreeAddr(t)
	f, err := parseFlags(append([]string{"--web.listen-address=" + addr}, args...))
	if err != nil {
		t.Fatal(err)
	}
	loggers, err := logging.New(io.Discard, "error", "logfmt")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- exporter.Serve(ctx, f.options(), loggers) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	base := "http://" + addr
	testutil.WaitHTTP(t, base+"/-/ready", time.Minute, nil)
	return base
}

// TestFailedReloadChangesNoSubsystem: a reload whose later organization
// cannot be prepared (its ledger cannot be opened) fails with 500 and
// changes nothing in any subsystem: the engine does not follow the agent
// project the reload adds to the earlier organization (no series, no
// jobs on the status page, no job accepted), the organizations and their
// projects are the old ones, the reload metric is 0. Every subsystem
// prepares before any commits.
func TestFailedReloadChangesNoSubsystem(t *testing.T) {
	t.Parallel()
	api := blackbox.NewRecordingAPI(t, fakeapi.Options{Paths: 20, APIKey: "mint_test"})
	f := blackbox.NewReloadFile(t)
	stateDir := t.TempDir() // the ledgers live beside the job state
	blackbox.WriteFile(t, f.Path, f.AgentProjects("docs"))
	base := serveInProcess(t, blackbox.ConfigArgs(api.URL, f.Path, "--web.enable-agent-api", "--agent.state-file="+filepath.Join(stateDir, "agent.db"))...)
	blackbox.WaitMetrics(t, base, time.Minute, map[string]float64{blackbox.Refreshed("docs", "7d"): 1})

	// The reload adds blog (agent jobs) to acme and a later organization,
	// zeta, whose ledger path is a directory: it cannot be opened.
	if err := os.Mkdir(config.LedgerPath(stateDir, "zeta"), 0o700); err != nil {
		t.Fatal(err)
	}
	project := func(id, org string) string {
		return "  - id: " + id + "\n    windows: [7d]\n    timezone: " + blackbox.NoonZone() + "\n    sources: {visitors: {}}\n    agent_jobs: true\n    organization: " + org + "\n"
	}
	file := strings.Replace(f.Head, "projects:\n",
		"  - name: zeta\n    api_key_file: "+blackbox.KeyFile(t, t.TempDir(), "zeta.key", "mint_test")+"\nprojects:\n", 1) +
		project("docs", "acme") + project("blog", "acme") + project("guide", "zeta")
	blackbox.WriteFile(t, f.Path, file)
	code, body := blackbox.PostReload(t, base)
	if code != http.StatusInternalServerError || !strings.Contains(body["error"], "organization zeta") {
		t.Fatalf("POST /-/reload with zeta's ledger unreadable: HTTP %d %v, want 500 naming zeta", code, body)
	}

	m := blackbox.Scrape(t, base)
	if m["mintlify_exporter_config_last_reload_successful{}"] != 0 {
		t.Error("mintlify_exporter_config_last_reload_successful is not 0 after the failed reload")
	}
	for k := range m {
		for _, p := range []string{"project=blog", "project=guide", "organization=zeta"} {
			if strings.Contains(k, p) {
				t.Errorf("series %s of the failed reload's configuration", k)
			}
		}
	}
	if len(blackbox.DataSeries(m, "docs")) == 0 {
		t.Error("docs, of the old configuration, is no longer exported")
	}
	r := blackbox.StatusReport(t, base)
	if len(r.Organizations) != 1 || !slices.Equal(r.Organizations[0].Projects, []string{"docs"}) {
		t.Errorf("organizations after the failed reload: %+v, want acme with docs alone", r.Organizations)
	}
	if r.Jobs == nil {
		t.Fatal("no jobs on the status page")
	}
	var followed []struct{ Project string }
	if err := r.Jobs.Rows("projects", &followed); err != nil {
		t.Fatal(err)
	}
	for _, p := range followed {
		if p.Project != "docs" {
			t.Errorf("the engine follows %s after the failed reload", p.Project)
		}
	}
	if code, _ := blackbox.PostJob(t, base, "blog", "#fake:pr:1h"); code != http.StatusNotFound {
		t.Errorf("job for blog after the failed reload: HTTP %d, want 404", code)
	}

	// Once the ledger can be opened, the same file applies in full.
	if err := os.Remove(config.LedgerPath(stateDir, "zeta")); err != nil {
		t.Fatal(err)
	}
	if code, body := blackbox.PostReload(t, base); code != http.StatusOK {
		t.Fatalf("POST /-/reload with zeta's ledger readable: HTTP %d %v", code, body)
	}
	if code, _ := blackbox.PostJob(t, base, "blog", "#fake:pr:1h"); code/100 != 2 {
		t.Errorf("job for blog after the reload: HTTP %d", code)
	}
	blackbox.WaitMetrics(t, base, time.Minute, map[string]float64{
		"mintlify_exporter_config_last_reload_successful{}": 1,
		"mintlify_agent_jobs_submitted_total{project=blog}": 1,
		blackbox.Refreshed("guide", "7d"):                   1,
	})
}
