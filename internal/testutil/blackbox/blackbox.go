// Package blackbox holds the helpers of the tests that drive a running
// exporter from outside, over HTTP and its configuration file: the
// black-box tests of internal/e2e (the built binary) and the root
// package's tests of main that run serve in this process
// (config_reload_prepare_test.go, soak_test.go). It waits (Eventually),
// writes configuration files and keys, fronts the fake API with a
// recorder (NewRecordingAPI), scrapes /metrics into a map, reloads, reads
// the status page and submits jobs. Tests import it; the exporter does
// not.
package blackbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// Eventually polls cond until it holds or timeout passes. The timeout is a
// hang guard for a test of a running exporter, not a bound the test
// asserts: never shorter than testutil.Patience, which a busy machine
// needs, stretched by the load (testutil.Slack).
func Eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, testutil.Slack(max(timeout, testutil.Patience)), what, cond)
}

// WriteFile writes content to path (0600), failing the test on error.
func WriteFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// KeyFile writes key into a new file in dir and returns its path.
func KeyFile(t *testing.T, dir, name, key string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	WriteFile(t, p, key+"\n")
	return p
}

// ConfigArgs are the flags every config-file test runs with: the file,
// a fake API, one walk per window for the test's length (a long
// min-interval; the projects' time zone is NoonZone), no retries.
func ConfigArgs(apiURL, file string, extra ...string) []string {
	// Page walks of visitors alone: the request counts are the tests'.
	return append([]string{"--config.file=" + file, "--mintlify.api-url=" + apiURL,
		"--analytics.min-interval=1h", "--mintlify.max-retries=0", "--analytics.site-totals-interval=0s"}, extra...)
}

// NoonZone is an IANA zone where it is around noon now, so that no walk
// of a test depends on the hour of day: neither today's window's new
// dates at midnight nor the finished day's walk after it.
func NoonZone() string {
	offset := 12 - time.Now().UTC().Hour() // local = UTC + offset, in -11..12
	if offset == 0 {
		return "UTC"
	}
	return fmt.Sprintf("Etc/GMT%+d", -offset) // Etc/GMT-3 is UTC+3
}

// ReloadFile writes configuration files of one organization, acme (key
// mint_test, budget 50), whose projects each have the given windows.
type ReloadFile struct {
	t *testing.T
	// Path is the file; Head is its text up to the projects' list.
	Path string
	Head string
}

// NewReloadFile returns a ReloadFile in a new temporary directory.
func NewReloadFile(t *testing.T) *ReloadFile {
	dir := t.TempDir()
	return &ReloadFile{t: t, Path: dir + "/mintlify.yml",
		Head: "organizations:\n  - name: acme\n    api_key_file: " + KeyFile(t, dir, "key", "mint_test") + "\n    analytics_budget: 50\nprojects:\n"}
}

// Write makes the file hold projects, "id:7d,30d" each.
func (f *ReloadFile) Write(projects ...string) {
	var b strings.Builder
	b.WriteString(f.Head)
	for _, p := range projects {
		id, windows, _ := strings.Cut(p, ":")
		b.WriteString("  - id: " + id + "\n    windows: [" + windows + "]\n    timezone: " + NoonZone() + "\n    sources: {visitors: {}}\n")
	}
	WriteFile(f.t, f.Path, b.String())
}

// AgentProjects is a file whose projects ids (7d windows) take agent jobs.
func (f *ReloadFile) AgentProjects(ids ...string) string {
	var b strings.Builder
	b.WriteString(f.Head)
	for _, id := range ids {
		b.WriteString("  - id: " + id + "\n    windows: [7d]\n    timezone: " + NoonZone() + "\n    sources: {visitors: {}}\n    agent_jobs: true\n")
	}
	return b.String()
}
