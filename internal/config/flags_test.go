package config

import (
	"strings"
	"testing"
)

// TestFlagRouteReportsEveryProblemByFlag: the flag route fills the file's
// structure and the file's builder checks it: every problem at once, each
// named by its flag (once, however many projects share it), none by a key
// of the file.
func TestFlagRouteReportsEveryProblemByFlag(t *testing.T) {
	_, err := parse(t, "--mintlify.project=a", "--mintlify.project=b", "--visitors.window=0d", "--visitors.timezone=Mars/Olympus",
		"--visitors.max-paths=-1", "--visitors.path-include=(", "--mintlify.analytics-budget=0", "--analytics.source=pageviews")
	if err == nil {
		t.Fatal("no error")
	}
	lines := strings.Split(err.Error(), "\n")
	want := []string{"--mintlify.analytics-budget: ", "--visitors.window: ", "--visitors.timezone: ", "--visitors.path-include: ",
		"--visitors.max-paths: ", `--analytics.source: unknown source "pageviews"`}
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
	if _, err := parse(t, "--visitors.window=0d"); err == nil || !strings.HasPrefix(err.Error(), "--visitors.window: ") {
		t.Errorf("no project, bad window: %v", err)
	}
	if cfg, err := parse(t); err != nil || len(cfg.Projects) != 0 {
		t.Errorf("no project: %v, %d projects, want none and no error", err, len(cfg.Projects))
	}
}
