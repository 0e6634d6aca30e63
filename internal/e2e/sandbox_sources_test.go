package e2e

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// TestSandboxServesEverySource: the sandbox's simulated API answers every
// analytics endpoint, within the one budget: with every source on, each
// is refreshed for each project, exports its data, and the plausible
// stories are there (pages thumbed down, feedback pending, unanswered
// questions); no free text is logged.
func TestSandboxServesEverySource(t *testing.T) {
	t.Parallel()
	args := []string{"--mintlify.sandbox", "--analytics.window=7d", "--analytics.search-top-queries=5",
		"--agent.state-file=" + filepath.Join(t.TempDir(), "agent.db")}
	for _, name := range sources.Names() {
		args = append(args, "--analytics.source="+name)
	}
	p := startExporter(t, nil, args...)
	refreshed := func(body, project, source string) bool {
		return strings.Contains(body, fmt.Sprintf(`mintlify_analytics_refresh_success{project=%q,scope="pages",source=%q,window="7d"} 1`, project, source))
	}
	body := testutil.WaitHTTP(t, p.Base+"/metrics", 60*time.Second, func(b string) bool {
		for _, project := range []string{"acme-docs", "acme-api"} {
			for _, name := range sources.Names() {
				if !refreshed(b, project, name) {
					return false
				}
			}
		}
		return true
	})
	for _, want := range []string{
		`mintlify_site_page_views_combined{project="acme-docs",window="7d"}`,
		`mintlify_page_feedback{kind="thumbs_down",path=`,
		`mintlify_feedback_pages_truncated{project="acme-docs",window="7d"}`,
		`mintlify_feedback_items{project="acme-docs",source="thumbs_only",status="pending",window="7d"}`,
		`mintlify_feedback_oldest_pending_age_seconds{project="acme-docs"}`,
		`mintlify_searches{project="acme-docs",window="7d"}`,
		`mintlify_search_query_click_through_ratio{project="acme-docs",query=`,
		`mintlify_assistant_conversations{caller="web",project="acme-docs",window="7d"}`,
		`mintlify_assistant_conversations_by_resolution{project="acme-docs",resolution="unanswered",window="7d"}`,
		`mintlify_assistant_conversations_by_category{category=`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// Plausible data: some feedback pending, some questions unanswered.
	for _, series := range []string{
		`mintlify_feedback_oldest_pending_age_seconds{project="acme-docs"}`,
		`mintlify_assistant_conversations_by_resolution{project="acme-docs",resolution="unanswered",window="7d"}`,
	} {
		if m := regexp.MustCompile(regexp.QuoteMeta(series) + ` (\S+)`).FindStringSubmatch(body); m == nil || m[1] == "0" {
			t.Errorf("%s is 0 or missing: the sandbox tells no story", series)
		}
	}
	testutil.CheckMetrics(t, body)
	checkHelpLines(t, body)
	if strings.Contains(body, `code="429"} 1`) {
		t.Error("the sandbox answered 429: the sources are not within the one budget")
	}
	p.Stop(t)
	if logs := p.Stderr.String(); strings.Contains(logs, "PRIVATE") || strings.Contains(logs, "@example.com") {
		t.Errorf("free text in the log:\n%s", logs)
	}
}

// helpLeftToOthers are the families whose long HELP another change
// shortens, or that are not ours to word.
var helpLeftToOthers = map[string]bool{
	// Renamed with the assistant's metrics (issue 35), which shortens its HELP.
	"mintlify_assistant_conversations_other_categories": true,
	// client_golang's collectors/version words it.
	"mintlify_exporter_build_info": true,
}

// maxHelpLine is the longest # HELP line /metrics may serve: a HELP says
// what a series is in a sentence or two; a longer one is a paragraph that
// belongs in docs/metrics.md (and is cut off in Grafana's tooltips).
const maxHelpLine = 160

// checkHelpLines fails t for every # HELP line of our families (mintlify_*)
// in body longer than maxHelpLine (issue 38, item 6); the Go runtime's
// (go_*, process_*) are client_golang's words.
func checkHelpLines(t *testing.T, body string) {
	t.Helper()
	n := 0
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, "# HELP mintlify_") {
			continue
		}
		n++
		if name := strings.Fields(line)[2]; helpLeftToOthers[name] {
			continue
		}
		if len(line) > maxHelpLine {
			t.Errorf("a HELP line of %d characters, want at most %d: %s", len(line), maxHelpLine, line)
		}
	}
	if n < 20 {
		t.Errorf("%d HELP lines in /metrics: the check read the wrong text", n)
	}
}
