package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil/blackbox"
)

// TestConfigCheckOfAGoodFile: exit 0, what is exported and each
// organization's budget arithmetic, without reading any key (the key file
// does not exist here, the variable is unset).
func TestConfigCheckOfAGoodFile(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "mintlify.yml")
	blackbox.WriteFile(t, file, `# two organizations
organizations:
  - name: acme
    api_key_file: /nonexistent/acme.key
    analytics_budget: 40
  - name: globex
    api_key_env: GLOBEX_MINTLIFY_KEY
projects:
  - id: acme-docs
    organization: acme
    windows: [1d, 7d, "30d:6h"]
    timezone: Europe/Berlin
    paths: {include: "^/guides/", exclude: "^/guides/old/", max: 500}
    agent_jobs: true
  - id: globex-docs
    organization: globex
`)
	code, stdout, stderr := runExporter(t, "config", "check", "--config.file="+file)
	if code != 0 || stderr != "" {
		t.Fatalf("config check of a good file: exit %d, stderr:\n%s", code, stderr)
	}
	for _, want := range []string{
		"2 organization(s), 2 project(s)",
		"organization acme: key from file /nonexistent/acme.key, analytics budget 40 requests per rolling hour (36 plannable)",
		"project acme-docs: windows 1d 7d 30d:6h, timezone Europe/Berlin, paths include ^/guides/, exclude ^/guides/old/, at most 500, sources visitors views feedback searches, agent jobs on",
		"acme-docs/visitors/30d pages every 6h",
		"organization globex: key from environment variable GLOBEX_MINTLIFY_KEY, analytics budget 60 requests per rolling hour (54 plannable)",
		"project globex-docs: windows 1d, timezone UTC, paths at most 1000, sources visitors views feedback searches, agent jobs off",
		"globex-docs/visitors/1d pages every 5m",
		"globex-docs/visitors/1d site every 12m",
		"SUCCESS: " + file + " is valid",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("config check output lacks %q:\n%s", want, stdout)
		}
	}
	if n := strings.Count(stdout, "plan before the first walks:"); n != 2 {
		t.Errorf("%d budget plans, want one per organization:\n%s", n, stdout)
	}
}

// TestConfigCheckWarnsOfTooFewSentinels: a Sentinel setup of one sentinel
// is valid, with one notice line; one of three has none.
func TestConfigCheckWarnsOfTooFewSentinels(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		sentinels string
		notice    bool
	}{{"[sentinel-0:26379]", true}, {"[sentinel-0:26379, sentinel-1:26379, sentinel-2:26379]", false}} {
		file := filepath.Join(t.TempDir(), "mintlify.yml")
		blackbox.WriteFile(t, file, "organizations: [{name: acme, api_key_file: /nonexistent/acme.key}]\nprojects: [{id: docs}]\n"+
			"cluster: {sentinel: {master_name: mintlify, addresses: "+c.sentinels+"}}\n")
		code, stdout, stderr := runExporter(t, "config", "check", "--config.file="+file)
		if code != 0 || stderr != "" {
			t.Fatalf("config check with sentinels %s: exit %d, stderr:\n%s", c.sentinels, code, stderr)
		}
		const want = "notice: cluster.sentinel.addresses (--cluster.redis-sentinel-address) names 1 Redis Sentinel(s), fewer than a quorum of 3"
		if n := strings.Count(stdout, "notice: cluster.sentinel"); n > 1 || c.notice != (n == 1 && strings.Contains(stdout, want)) {
			t.Errorf("config check with sentinels %s: want the notice %v, got:\n%s", c.sentinels, c.notice, stdout)
		}
	}
}

// TestConfigCheckOfABadFile: exit 1, one line per problem with file, line
// and key, FAILED last; an inline key is refused with where to put it.
func TestConfigCheckOfABadFile(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "mintlify.yml")
	blackbox.WriteFile(t, file, `organizations:
  - name: acme
    api_key: mint_written_inline
    analytics_budget: 0
projects:
  - id: acme-docs
    windows: [1x]
    timezone: Mars/Olympus
  - id: acme-docs
    organization: nobody
    paths: {include: "("}
`)
	code, stdout, stderr := runExporter(t, "config", "check", "--config.file="+file)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if stdout != "" {
		t.Errorf("output on stdout for a bad file:\n%s", stdout)
	}
	want := []string{
		file + ":3: organizations[0].api_key: an API key is never written in the configuration file: put it in a file (api_key_file) or an environment variable (api_key_env)",
		file + ":4: organizations[0].analytics_budget: ",
		file + ":7: projects[0].windows[0]: ", // the entry, not only the list
		file + ":8: projects[0].timezone: ",
		file + ":9: projects[1].id: project \"acme-docs\" given twice (first at line 6)",
		file + ":10: projects[1].organization: unknown organization \"nobody\"",
		file + ":11: projects[1].paths.include: ",
		"FAILED: " + file,
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d (one per problem, then FAILED):\n%s", len(lines), len(want), stderr)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d = %q, want it to start with %q", i+1, lines[i], w)
		}
	}
	if strings.Contains(stderr, "mint_written_inline") {
		t.Error("the inline key is echoed")
	}

	// A YAML type error and an unknown key are problems with their line too.
	blackbox.WriteFile(t, file, "organizations:\n  - name: acme\n    api_key_env: K\n    analytics_budget: lots\nprojects:\n  - id: p\n    agentjobs: true\n")
	code, _, stderr = runExporter(t, "config", "check", "--config.file="+file)
	if code != 1 || !strings.Contains(stderr, file+":4: ") || !strings.Contains(stderr, file+":7: ") || !strings.Contains(stderr, "agentjobs") {
		t.Errorf("exit %d, want 1 and lines 4 and 7 named:\n%s", code, stderr)
	}
	// And the server refuses to start on it, with the same lines.
	code, _, stderr = runExporter(t, "--web.listen-address=127.0.0.1:0", "--config.file="+file)
	if code == 0 || !strings.Contains(stderr, file+":7: ") {
		t.Errorf("serve on a bad file: exit %d:\n%s", code, stderr)
	}

	code, _, stderr = runExporter(t, "config", "check")
	if code != 1 || !strings.Contains(stderr, "--config.file") {
		t.Errorf("config check without a file: exit %d, %q", code, stderr)
	}
}

// TestConfigFileRefusesPerProjectFlags: --config.file with a flag that
// the file replaces exits non-zero with one line naming that flag.
func TestConfigFileRefusesPerProjectFlags(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "mintlify.yml")
	blackbox.WriteFile(t, file, "organizations:\n  - name: acme\n    api_key_env: K\nprojects:\n  - id: p\n")
	for _, flag := range []string{
		"--mintlify.project=p", "--mintlify.api-key-file=/k", "--mintlify.analytics-budget=10", "--analytics.window=7d",
		"--analytics.timezone=UTC", "--analytics.max-paths=10", "--analytics.path-include=^/a", "--analytics.path-exclude=^/b",
		"--analytics.source=views", "--analytics.search-top-queries=5", "--cluster.redis-address=127.0.0.1:6379",
	} {
		name, _, _ := strings.Cut(flag, "=")
		code, stdout, stderr := runExporter(t, "--web.listen-address=127.0.0.1:0", "--config.file="+file, flag)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code == 0 || len(lines) != 1 || !strings.Contains(lines[0], name) || !strings.Contains(lines[0], "--config.file") || stdout != "" {
			t.Errorf("%s with --config.file: exit %d, stderr %q, want one line naming %s", flag, code, stderr, name)
		}
	}
	// Process-wide settings stay flags beside the file.
	code, stdout, stderr := runExporter(t, "--analytics.min-interval=10m", "--mintlify.timeout=5s", "config", "check", "--config.file="+file)
	if code != 0 || !strings.Contains(stdout, "SUCCESS") {
		t.Errorf("process-wide flags with --config.file: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestExampleConfigFile: examples/mintlify.yml shows every key of the
// file, passes `config check`, and runs on the sandbox as the compose
// example runs it, every project exported with its organization's budget.
func TestExampleConfigFile(t *testing.T) {
	t.Parallel()
	file, err := filepath.Abs(filepath.Join(examplesDir(), "mintlify.yml"))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"organizations:", "name:", "api_key_file:", "api_key_env:", "analytics_budget:", "projects:", "id:",
		"organization:", "windows:", "timezone:", "paths:", "include:", "exclude:", "max:", "agent_jobs:"} {
		if !strings.Contains(string(data), key) {
			t.Errorf("examples/mintlify.yml does not show %s", key)
		}
	}
	if code, stdout, stderr := runExporter(t, "config", "check", "--config.file="+file); code != 0 || !strings.Contains(stdout, "SUCCESS") {
		t.Fatalf("config check examples/mintlify.yml: exit %d\n%s%s", code, stdout, stderr)
	}
	x := startExporter(t, nil, "--mintlify.sandbox", "--config.file="+file)
	m := blackbox.WaitMetrics(t, x.Base, 20*time.Second, map[string]float64{
		blackbox.Refreshed("acme-docs", "1d"): 1, blackbox.Refreshed("acme-api", "1d"): 1, blackbox.Refreshed("globex-docs", "1d"): 1,
		"mintlify_api_budget_requests_per_hour{organization=acme}":   60,
		"mintlify_api_budget_requests_per_hour{organization=globex}": 30,
	})
	pages := 0
	for k := range m {
		if strings.HasPrefix(k, "mintlify_page_unique_visitors{") && strings.Contains(k, "project=acme-api,") {
			pages++
			if !strings.Contains(k, "path=/api-reference/") {
				t.Errorf("acme-api exports a path its include filter leaves out: %s", k)
			}
		}
	}
	if pages == 0 {
		t.Error("acme-api exports no page")
	}
	x.Stop(t)
}

// TestConfigCheckTellsWrongTypesInTheFilesWords: the examples
// (issue 38, item 2) through `config check`: each value of the wrong type
// is FILE:LINE: KEY: what is wrong; what is expected, and a typo'd key in a
// source is the unknown key with the key meant; never Go's words.
func TestConfigCheckTellsWrongTypesInTheFilesWords(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "mintlify.yml")
	blackbox.WriteFile(t, file, `organizations:
  - name: acme
    api_key_env: K
projects:
  - id: p
    windows: 1d
    sources:
      feedback: {feedback_pages: abc}
      searches: {windwos: [1d]}
cluster:
  address: localhost:6379
  timeout: 2 seconds
`)
	code, _, stderr := runExporter(t, "config", "check", "--config.file="+file)
	want := []string{
		file + `:6: projects[0].windows: "1d" is one value, not a list; expected a list such as [1d]`,
		file + `:8: projects[0].sources.feedback.feedback_pages: "abc" is not a whole number; expected a whole number such as 10`,
		file + `:9: unknown key "windwos" in projects[0].sources.searches; did you mean "windows"?`,
		file + `:12: cluster.timeout: "2 seconds" is not a duration; expected a duration such as 30s or 2m (units ms, s, m, h)`,
		"FAILED: " + file,
	}
	if code != 1 || strings.TrimSpace(stderr) != strings.Join(want, "\n") {
		t.Errorf("exit %d, stderr\n%s\nwant exit 1 and\n%s", code, stderr, strings.Join(want, "\n"))
	}
	if strings.Contains(stderr, "unmarshal") || strings.Contains(stderr, "time.Duration") {
		t.Errorf("Go's words in the problems:\n%s", stderr)
	}
}
