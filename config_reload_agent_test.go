package main

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
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
	for _, l := range statusReport(t, base).Links {
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
	api := newRecordingAPI(t, fakeapi.Options{Paths: 20, APIKey: "mint_test"})
	f := newReloadFile(t)
	writeFile(t, f.path, f.agentProjects("docs", "blog"))
	x := startExporter(t, nil, configArgs(api.URL, f.path, "--web.enable-agent-api", "--agent.state-file="+t.TempDir()+"/agent.db")...)
	testutil.WaitHTTP(t, x.Base+"/-/ready", 10*time.Second, nil)
	jobs := func(p string) string { return "Jobs of " + p + " /api/v2/agent/" + p + "/jobs" }
	fixed := []string{"Metrics /metrics", "Health /-/healthy"}
	if got, want := statusLinks(t, x.Base), append(fixed, jobs("docs"), jobs("blog")); !slices.Equal(got, want) {
		t.Fatalf("links at start %q, want %q", got, want)
	}
	writeFile(t, f.path, f.agentProjects("docs", "guides"))
	if code, body := postReload(t, x.Base); code != http.StatusOK {
		t.Fatalf("POST /-/reload: HTTP %d %v", code, body)
	}
	if got, want := statusLinks(t, x.Base), append(fixed, jobs("docs"), jobs("guides")); !slices.Equal(got, want) {
		t.Errorf("links after the reload %q, want %q", got, want)
	}
	x.Stop(t)
}
