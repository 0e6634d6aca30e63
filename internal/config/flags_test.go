package config

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
)

// TestFlagRouteReportsEveryProblemByFlag: the flag route fills the file's
// structure and the file's builder checks it: every problem at once, each
// named by its flag (once, however many projects share it), none by a key
// of the file.
func TestFlagRouteReportsEveryProblemByFlag(t *testing.T) {
	_, err := parse(t, "--mintlify.project=a", "--mintlify.project=b", "--analytics.window=0d", "--analytics.timezone=Mars/Olympus",
		"--analytics.max-paths=-1", "--analytics.path-include=(", "--mintlify.analytics-budget=0", "--analytics.source=pageviews")
	if err == nil {
		t.Fatal("no error")
	}
	lines := strings.Split(err.Error(), "\n")
	want := []string{"--mintlify.analytics-budget: ", "--analytics.window: ", "--analytics.timezone: ", "--analytics.path-include: ",
		"--analytics.max-paths: ", `--analytics.source: unknown source "pageviews"`}
	if len(lines) != len(want) {
		t.Errorf("%d problems, want %d:\n%s", len(lines), len(want), err)
	}
	for _, w := range want {
		n := 0
		for _, l := range lines {
			if strings.HasPrefix(l, w) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d lines start with %q, want 1:\n%s", n, w, err)
		}
	}
	if strings.Contains(err.Error(), "projects[") || strings.Contains(err.Error(), "organizations[") {
		t.Errorf("a problem names a key of the file, not its flag:\n%s", err)
	}
	// Without a project the flags are still checked.
	if _, err := parse(t, "--analytics.window=0d"); err == nil || !strings.HasPrefix(err.Error(), "--analytics.window: ") {
		t.Errorf("no project, bad window: %v", err)
	}
	if cfg, err := parse(t); err != nil || len(cfg.Projects) != 0 {
		t.Errorf("no project: %v, %d projects, want none and no error", err, len(cfg.Projects))
	}
}

// TestOldFlagNamesStillWork: the --visitors.* names of the analytics flags
// (from when visitors was the one source) still work, hidden from --help,
// with a notice that names the new ones; their errors name the flag given;
// beside --config.file they are refused like the new ones.
func TestOldFlagNamesStillWork(t *testing.T) {
	build := func(args ...string) (*Config, *Flags, error) {
		app := kingpin.New("t", "")
		f := RegisterFlags(app)
		if _, err := app.Parse(args); err != nil {
			t.Fatal(err)
		}
		cfg, err := f.Build(5*time.Minute, nil)
		return cfg, f, err
	}
	newCfg, newFlags, err := build("--mintlify.project=p", "--analytics.window=7d", "--analytics.window=30d:6h", "--analytics.timezone=Europe/Berlin",
		"--analytics.max-paths=5", "--analytics.path-include=^/a", "--analytics.path-exclude=^/b")
	if err != nil {
		t.Fatal(err)
	}
	if n := newFlags.Deprecated(); n != "" {
		t.Errorf("new names: notice %q", n)
	}
	oldCfg, oldFlags, err := build("--mintlify.project=p", "--visitors.window=7d", "--visitors.window=30d:6h", "--visitors.timezone=Europe/Berlin",
		"--visitors.max-paths=5", "--visitors.path-include=^/a", "--visitors.path-exclude=^/b")
	if err != nil {
		t.Fatal(err)
	}
	a, b := newCfg.Projects[0], oldCfg.Projects[0]
	if !a.SameWalks(&b.PlanProject.Project) || !slices.EqualFunc(a.Specs(), b.Specs(), func(x, y analytics.SourceSpec) bool { return x.Equal(y) }) {
		t.Errorf("old names gave %+v, new names %+v", b, a)
	}
	notice := oldFlags.Deprecated()
	for _, name := range []string{"window", "timezone", "max-paths", "path-include", "path-exclude"} {
		if !strings.Contains(notice, "--visitors."+name+" is deprecated: use --analytics."+name) {
			t.Errorf("notice %q does not name --visitors.%s and its new name", notice, name)
		}
	}
	if _, _, err := build("--mintlify.project=p", "--visitors.max-paths=-1"); err == nil || !strings.HasPrefix(err.Error(), "--visitors.max-paths: ") {
		t.Errorf("bad value under the old name: %v, want the old name", err)
	}
	if _, _, err := build("--config.file=c.yml", "--visitors.timezone=UTC"); err == nil || !strings.HasPrefix(err.Error(), "--visitors.timezone: not with --config.file") {
		t.Errorf("old name beside --config.file: %v", err)
	}
}
