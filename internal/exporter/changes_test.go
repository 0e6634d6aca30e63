package exporter

import (
	"fmt"
	"testing"

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
}
