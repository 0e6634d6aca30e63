package exporter

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
)

// TestReloadSaysWhatChanged: a reload logs the projects, sources and
// windows added or removed, each at the highest level (a new project, not
// its sources), and the plan when it moved (issue 38, item 8).
func TestReloadSaysWhatChanged(t *testing.T) {
	win := func(names ...string) []analytics.Window {
		var out []analytics.Window
		for _, n := range names {
			w, err := analytics.ParseWindow(n)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, w)
		}
		return out
	}
	project := func(id string, windows []analytics.Window, srcs ...string) config.Project {
		p := config.Project{}
		p.ID, p.Windows = id, windows
		for _, s := range srcs {
			p.Sources = append(p.Sources, analytics.SourceSpec{Name: s})
		}
		return p
	}
	old := &config.Config{Projects: []config.Project{
		project("docs", win("1d", "7d"), "visitors", "views"),
		project("api", win("1d"), "visitors"),
	}}
	next := &config.Config{Projects: []config.Project{
		project("docs", win("1d", "30d"), "visitors", "searches"),
		project("blog", win("1d"), "visitors"),
	}}
	got := fmt.Sprint(changes(old, next, 41, 52.34))
	want := fmt.Sprint([]any{
		"projects_added", "blog", "projects_removed", "api",
		"sources_added", "docs/searches", "sources_removed", "docs/views",
		"windows_added", "docs/visitors/30d", "windows_removed", "docs/visitors/7d",
		"planned_requests_per_hour", "41.0 -> 52.3",
	})
	if got != want {
		t.Errorf("changes\n%s\nwant\n%s", got, want)
	}
	if got := fmt.Sprint(changes(old, old, 41, 41)); got != "[changed nothing]" {
		t.Errorf("a reload that changed nothing: %s", got)
	}

	// Every setting applied, of what is kept (issue 46: 30d:6h to 30d:30h
	// logged only the project removed beside it).
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	docs := project("docs", win("1d", "30d:6h"), "visitors", "searches")
	old = &config.Config{Organizations: []config.Organization{{Name: "acme", AnalyticsBudget: 60, APIKeyFile: "/k"}}, Projects: []config.Project{docs}}
	docs = project("docs", win("1d", "30d:30h"), "visitors", "searches")
	docs.Location, docs.Kinds = berlin, map[string][]string{"deployments": nil, "automations": {"wf_a"}}
	docs.Sources[1].Settings = map[string]int{"top_queries": 20}
	next = &config.Config{Organizations: []config.Organization{{Name: "acme", AnalyticsBudget: 90, APIKeyFile: "/k"}, {Name: "globex"}}, Projects: []config.Project{docs}}
	got = fmt.Sprint(changes(old, next, 41, 41))
	want = fmt.Sprint([]any{"organizations_added", "globex", "settings_changed", strings.Join([]string{
		"docs automations [] -> [wf_a]",
		"docs deployments false -> true",
		"docs timezone UTC -> Europe/Berlin",
		"docs/searches top_queries none -> 20",
		"docs/searches/30d interval 6h -> 30h",
		"docs/visitors/30d interval 6h -> 30h",
		"organization acme analytics_budget 60 -> 90",
	}, "; ")})
	if got != want {
		t.Errorf("changes of settings\n%s\nwant\n%s", got, want)
	}
}
