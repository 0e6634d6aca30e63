package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// specsString shows specs compactly: name, windows and settings.
func specsString(specs []sources.Spec) string {
	var out []string
	for _, s := range specs {
		var ws []string
		for _, w := range s.Windows {
			ws = append(ws, w.Name)
		}
		out = append(out, fmt.Sprintf("%s[%s]q%dc%dp%d", s.Name, strings.Join(ws, ","), s.Settings["top_queries"], s.Settings["top_categories"], s.Settings["feedback_pages"]))
	}
	return strings.Join(out, " ")
}

// TestSourcesKey: the sources: key of a project chooses its sources (in
// the registry's order), each with its own windows and settings; left out,
// the default sources; every mistake names its line and key.
func TestSourcesKey(t *testing.T) {
	const head = "organizations: [{name: a, api_key_env: K}]\nprojects:\n"
	cfg, err := Parse("c.yml", []byte(head+`  - id: chosen
    windows: [1d, 7d, 30d]
    sources:
      assistant: {top_categories: 5}
      searches: {windows: [1d, 7d], top_queries: 20}
      feedback: {feedback_pages: 50}
      visitors: {}
  - id: bare
`), 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := specsString(cfg.Projects[0].Sources), "visitors[]q0c0p0 feedback[]q0c0p50 searches[1d,7d]q20c0p0 assistant[]q0c5p0"; got != want {
		t.Errorf("sources %s, want %s", got, want)
	}
	if got, want := specsString(cfg.Projects[0].Specs()), "visitors[1d,7d,30d]q0c0p0 feedback[1d,7d,30d]q0c0p50 searches[1d,7d]q20c0p0 assistant[1d,7d,30d]q0c5p0"; got != want {
		t.Errorf("walked as %s, want %s (a source without windows: the project's)", got, want)
	}
	if got, want := specsString(cfg.Projects[1].Sources), "visitors[]q0c0p0 views[]q0c0p0 feedback[]q0c0p0 searches[]q0c0p0"; got != want {
		t.Errorf("default sources %s, want %s", got, want)
	}

	for _, tc := range []struct{ name, yaml, want string }{
		{"unknown source", "  - id: p\n    sources: {pageviews: {}}\n", `c.yml:4: projects[0].sources.pageviews: unknown source "pageviews"`},
		{"setting of another source", "  - id: p\n    sources:\n      views: {top_queries: 5}\n", "c.yml:5: projects[0].sources.views.top_queries: only the searches source has top_queries"},
		{"top queries out of range", "  - id: p\n    sources:\n      searches: {top_queries: 5000}\n", "c.yml:5: projects[0].sources.searches.top_queries: must be between 0 and 1000, got 5000"},
		{"feedback pages out of range", "  - id: p\n    sources:\n      feedback: {feedback_pages: 101}\n", "projects[0].sources.feedback.feedback_pages: must be between 1 and 100"},
		{"no window", "  - id: p\n    sources:\n      views: {windows: []}\n", "projects[0].sources.views.windows: no window"},
		{"bad window", "  - id: p\n    sources:\n      views: {windows: [1x]}\n", "projects[0].sources.views.windows"},
		{"no source", "  - id: p\n    sources: {}\n", "projects[0].sources: no source"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("c.yml", []byte(head+tc.yaml), 5*time.Minute)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v, want one line with %q", err, tc.want)
			}
		})
	}
}

// TestAnalyticsSourceFlag: --analytics.source chooses the sources of the
// flag route (repeatable, registry order, each once), with
// --analytics.search-top-queries for searches; the defaults without it;
// mistakes are one line naming the flag; beside --config.file it is
// refused.
func TestAnalyticsSourceFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "visitors[]q0c0p0 views[]q0c0p0 feedback[]q0c0p0 searches[]q0c0p0"},
		{[]string{"--analytics.search-top-queries=20"}, "visitors[]q0c0p0 views[]q0c0p0 feedback[]q0c0p0 searches[]q20c0p0"},
		{[]string{"--analytics.source=assistant", "--analytics.source=views", "--analytics.source=views"}, "views[]q0c0p0 assistant[]q0c0p0"},
		{[]string{"--analytics.source=searches", "--analytics.source=feedback_items", "--analytics.search-top-queries=7"}, "feedback_items[]q0c0p0 searches[]q7c0p0"},
	} {
		cfg, err := parse(t, append([]string{"--mintlify.project=p"}, tc.args...)...)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if got := specsString(cfg.Projects[0].Sources); got != tc.want {
			t.Errorf("%v: sources %s, want %s", tc.args, got, tc.want)
		}
	}
	for flag, want := range map[string]string{
		"--analytics.source=pageviews":        `--analytics.source: unknown source "pageviews"`,
		"--analytics.search-top-queries=-1":   "--analytics.search-top-queries: must be between 0 and 1000",
		"--analytics.search-top-queries=1001": "--analytics.search-top-queries: must be between 0 and 1000",
	} {
		_, err := parse(t, "--mintlify.project=p", flag)
		if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line starting %q", flag, err, want)
		}
	}
	file := filepath.Join(t.TempDir(), "c.yml")
	if err := os.WriteFile(file, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--analytics.source=views", "--analytics.search-top-queries=5"} {
		name, _, _ := strings.Cut(flag, "=")
		if _, err := parse(t, "--config.file="+file, flag); err == nil || !strings.HasPrefix(err.Error(), name+": not with --config.file") {
			t.Errorf("%s beside --config.file: %v", flag, err)
		}
	}
}
