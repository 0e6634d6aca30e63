package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// TestStatusPageOfTheSandbox renders the status page of the built exporter
// running on the sandbox in Debian's headless chromium, through the
// README's screenshot script: the sandbox's budget, refreshes of every
// source, grouped by project (collapsed: all fine), and its agent jobs are
// on the page as a browser shows it.
func TestStatusPageOfTheSandbox(t *testing.T) {
	t.Parallel()
	chromium := testutil.Chromium(t)
	x := startExporter(t, nil, "--mintlify.sandbox", "--web.enable-agent-api", "--analytics.window=1d", "--analytics.window=7d")
	testutil.WaitHTTP(t, x.Base+"/-/ready", 10*time.Second, nil)
	// A job that stays active for the test (the sandbox's #fake:pr with a
	// duration), so that acme-docs' row in the jobs table counts it.
	req, _ := http.NewRequest(http.MethodPost, x.Base+"/api/v2/agent/acme-docs/job", strings.NewReader(`{"prompt":"fix the typo #fake:pr:1h"}`))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode/100 != 2 {
		t.Fatalf("create job: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	// Wait until every source of both projects has refreshed once
	// (the budget spreads the longer windows out) and the job is counted.
	var body string
	testutil.Eventually(t, 0, "every demand refreshed and the job counted", func() bool {
		var status int
		var err error
		body, status, err = testutil.Get(context.Background(), x.Base+"/?format=json")
		if err != nil || status != http.StatusOK {
			t.Fatalf("GET /?format=json: %d %v", status, err)
		}
		var r struct {
			Demands []struct{ Project, Source, Result string }
			Jobs    struct {
				Projects []struct {
					Project  string
					ByStatus map[string]int `json:"by_status"`
				}
			}
		}
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			t.Fatal(err)
		}
		ok, all := map[string]bool{}, map[string]bool{}
		for _, d := range r.Demands {
			all[d.Project+"/"+d.Source] = true
			if d.Result == "ok" {
				ok[d.Project+"/"+d.Source] = true
			}
		}
		active := -1
		for _, p := range r.Jobs.Projects {
			if p.Project == "acme-docs" {
				active = p.ByStatus["active"]
			}
		}
		return len(all) == 2*len(sources.Names()) && len(ok) == len(all) && active == 1 // 2 projects × every source
	}, func() string { return body })

	dom := testutil.RunChromium(t, chromium, "--dump-dom", x.Base+"/")
	for _, want := range []string{"acme-docs", "acme-api", "visitors", "views", "feedback", "searches", "assistant", "default", "Analytics budget", "active",
		// Each project's refreshes, all fine, one collapsed line.
		`<details class="project ok" data-project="acme-docs">`, `<details class="project ok" data-project="acme-api">`} {
		if !strings.Contains(dom, want) {
			t.Errorf("the rendered page lacks %q", want)
		}
	}
	// The job is in acme-docs' row, still active: the browser shows the
	// tracker's count, not only the table's headings.
	row := regexp.MustCompile(`(?s)<tr class="row" data-kind="projects" data-project="acme-docs">.*?</tr>`).FindString(dom)
	if !regexp.MustCompile(`data-label="active">1<`).MatchString(row) {
		t.Errorf("acme-docs' jobs row does not count the active job: %q", row)
	}
	testutil.Screenshot(t, filepath.Join(repoRoot(), "scripts", "status-screenshot.sh"), chromium, x.Base+"/", filepath.Join(t.TempDir(), "status.png"), 390, 844)
}
