package config

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
)

const good = `# two organizations
organizations:
  - name: acme
    api_key_file: /etc/mintlify/acme.key
    analytics_budget: 50
  - name: beta
    api_key_env: BETA_KEY
projects:
  - id: acme-docs
    organization: acme
    windows: [1d, 7d, "30d:6h"]
    timezone: Europe/Berlin
    paths: {include: "^/guides/", exclude: "", max: 100}
    agent_jobs: true
  - id: beta-docs
    deployments: true
    organization: beta
`

func TestParseGoodFile(t *testing.T) {
	cfg, err := Parse("c.yml", []byte(good), 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Organizations) != 2 || cfg.Organizations[0].AnalyticsBudget != 50 || cfg.Organizations[1].AnalyticsBudget != DefaultBudget {
		t.Errorf("organizations = %+v", cfg.Organizations)
	}
	p := cfg.Projects[0]
	if p.ID != "acme-docs" || len(p.Windows) != 3 || p.Windows[2].Interval != 6*time.Hour || p.Loc().String() != "Europe/Berlin" ||
		p.Paths.Include.String() != "^/guides/" || p.Paths.Exclude != nil || p.Paths.MaxPaths != 100 || !on(p, "job") {
		t.Errorf("project = %+v", p)
	}
	q := cfg.Projects[1]
	if q.Organization != "beta" || len(q.Windows) != 1 || q.Windows[0].Name != "1d" || q.Loc() != time.UTC || q.Paths.MaxPaths != DefaultMaxPaths || on(q, "job") {
		t.Errorf("defaults of a bare project = %+v", q)
	}
	if got := cfg.Taking("job"); len(got) != 1 || got[0] != "acme-docs" {
		t.Errorf("agent projects = %v", got)
	}
	if got := cfg.Taking("deployment"); len(got) != 1 || got[0] != "beta-docs" || on(p, "deployment") {
		t.Errorf("deployment projects = %v", got)
	}
	if got := cfg.ProjectsOf("beta"); len(got) != 1 || got[0].ID != "beta-docs" {
		t.Errorf("projects of beta = %v", got)
	}
}

func TestOneOrganizationMayBeLeftOut(t *testing.T) {
	cfg, err := Parse("c.yml", []byte("organizations: [{name: solo, api_key_env: K}]\nprojects: [{id: p}]\n"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Projects[0].Organization != "solo" {
		t.Errorf("organization = %q, want solo", cfg.Projects[0].Organization)
	}
}

// Every problem is reported with the file, the line and the key.
func TestParseProblemsNameFileLineAndKey(t *testing.T) {
	cases := []struct {
		name, yaml string
		want       []string
	}{
		{"unknown key", "organizations: [{name: a, api_key_env: K}]\nprojects:\n  - id: p\n    windowz: [1d]\n", []string{"c.yml:4:", "windowz"}},
		{"wrong type", "organizations: [{name: a, api_key_env: K, analytics_budget: lots}]\nprojects: [{id: p}]\n", []string{"c.yml:1:", "lots"}},
		{"duplicate project", "organizations: [{name: a, api_key_env: K}]\nprojects:\n  - id: p\n  - id: p\n", []string{"c.yml:4:", "projects[1].id", `"p" given twice (first at line 3)`}},
		{"inline key", "organizations:\n  - name: a\n    api_key: mint_secret\nprojects: [{id: p}]\n", []string{"c.yml:3:", "organizations[0].api_key", "api_key_file", "environment variable"}},
		{"no key source", "organizations:\n  - name: a\nprojects: [{id: p}]\n", []string{"c.yml:2:", "api_key_file or api_key_env"}},
		{"both key sources", "organizations:\n  - {name: a, api_key_env: K, api_key_file: /k}\nprojects: [{id: p}]\n", []string{"c.yml:2:", "not both"}},
		{"unknown organization", "organizations: [{name: a, api_key_env: K}]\nprojects:\n  - id: p\n    organization: b\n", []string{"c.yml:4:", `unknown organization "b"`}},
		{"organization required", "organizations: [{name: a, api_key_env: K}, {name: b, api_key_env: L}]\nprojects:\n  - id: p\n", []string{"c.yml:3:", "more than one organization"}},
		{"bad window", "organizations: [{name: a, api_key_env: K}]\nprojects:\n  - id: p\n    windows: [1d, 8x]\n", []string{"c.yml:4:", "projects[0].windows", "8x"}},
		{"conflicting windows", "organizations: [{name: a, api_key_env: K}]\nprojects:\n  - id: p\n    windows: [1d, \"1d:1h\"]\n", []string{"c.yml:4:", "projects[0].windows[1]", "given twice, with different intervals"}},
		{"window below min interval", "organizations: [{name: a, api_key_env: K}]\nprojects:\n  - id: p\n    windows: [\"7d:1m\"]\n", []string{"c.yml:4:", "min-interval"}},
		{"bad timezone", "organizations: [{name: a, api_key_env: K}]\nprojects:\n  - id: p\n    timezone: Mars/Olympus\n", []string{"c.yml:4:", "Mars/Olympus"}},
		{"bad regexp", "organizations: [{name: a, api_key_env: K}]\nprojects:\n  - id: p\n    paths:\n      include: \"(\"\n", []string{"c.yml:5:", "paths.include"}},
		{"negative max", "organizations: [{name: a, api_key_env: K}]\nprojects:\n  - id: p\n    paths: {max: -1}\n", []string{"c.yml:4:", "paths.max"}},
		{"bad project id", "organizations: [{name: a, api_key_env: K}]\nprojects:\n  - id: a/b\n", []string{"c.yml:3:", "invalid project id"}},
		{"budget out of range", "organizations:\n  - {name: a, api_key_env: K, analytics_budget: 0}\nprojects: [{id: p}]\n", []string{"c.yml:2:", "analytics_budget"}},
		{"bad organization name", "organizations:\n  - {name: \"a b\", api_key_env: K}\nprojects: [{id: p, organization: \"a b\"}]\n", []string{"c.yml:2:", "invalid organization name"}},
		{"duplicate yaml key", "organizations: [{name: a, api_key_env: K}]\nprojects:\n  - id: p\n    id: q\n", []string{"c.yml:4:", "already defined"}},
		{"empty file", "", []string{"no organization", "no project"}},
		{"not yaml", "organizations: [\n", []string{"c.yml:"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("c.yml", []byte(tc.yaml), 5*time.Minute)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestSeveralProblemsOneLineEach(t *testing.T) {
	_, err := Parse("c.yml", []byte("organizations: [{name: a, api_key_env: K}]\nprojects:\n  - id: p\n    timezone: Nowhere\n  - id: q\n    windows: [0d]\n"), time.Minute)
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "c.yml:4:") || !strings.HasPrefix(lines[1], "c.yml:6:") {
		t.Errorf("want two problems on lines 4 and 6, got:\n%s", err)
	}
}

// TestEndlessFilesAreRefused: --config.file and an organization's
// api_key_file naming /dev/zero are refused with one line after a bounded
// read, not read until memory runs out.
func TestEndlessFilesAreRefused(t *testing.T) {
	t.Parallel()
	if _, err := LoadFile("/dev/zero", time.Minute); err == nil || !strings.Contains(err.Error(), "not a regular file") || strings.Contains(err.Error(), "\n") {
		t.Errorf("--config.file=/dev/zero: %v", err)
	}
	cfg := &Config{Organizations: []Organization{{Name: "acme", APIKeyFile: "/dev/zero"}}}
	if err := cfg.LoadKeys(func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "not a regular file") || strings.Contains(err.Error(), "\n") {
		t.Errorf("api_key_file: /dev/zero: %v", err)
	}
}

func TestLoadKeys(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "acme.key")
	if err := os.WriteFile(keyFile, []byte("mint_acme\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := &Config{Organizations: []Organization{{Name: "acme", APIKeyFile: keyFile}, {Name: "beta", APIKeyEnv: "BETA_KEY"}}}
	env := map[string]string{"BETA_KEY": " mint_beta "}
	if err := cfg.LoadKeys(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if cfg.Organizations[0].APIKey != "mint_acme" || cfg.Organizations[1].APIKey != "mint_beta" {
		t.Errorf("keys = %q, %q", cfg.Organizations[0].APIKey, cfg.Organizations[1].APIKey)
	}
	// Rotation: the file is read again on every load.
	if err := os.WriteFile(keyFile, []byte("mint_rotated"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := cfg.LoadKeys(func(k string) string { return env[k] }); err != nil || cfg.Organizations[0].APIKey != "mint_rotated" {
		t.Errorf("after rotation: %q, %v", cfg.Organizations[0].APIKey, err)
	}
	env["BETA_KEY"] = ""
	if err := cfg.LoadKeys(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "organization beta") || !strings.Contains(err.Error(), "BETA_KEY") {
		t.Errorf("empty variable: %v", err)
	}
}

func parse(t *testing.T, args ...string) (*Config, error) {
	t.Helper()
	app := kingpin.New("t", "")
	f := RegisterFlags(app)
	if _, err := app.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f.Build(5*time.Minute, nil)
}

func TestFlagsBesideConfigFileAreRefused(t *testing.T) {
	file := filepath.Join(t.TempDir(), "c.yml")
	if err := os.WriteFile(file, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--mintlify.project=x", "--visitors.window=7d", "--visitors.timezone=UTC", "--visitors.max-paths=5",
		"--visitors.path-include=x", "--visitors.path-exclude=x", "--mintlify.api-key-file=/k", "--mintlify.analytics-budget=5"} {
		_, err := parse(t, "--config.file="+file, flag)
		name, _, _ := strings.Cut(flag, "=")
		if err == nil || !strings.HasPrefix(err.Error(), name+": not with --config.file") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s beside --config.file: %v", flag, err)
		}
	}
	if cfg, err := parse(t, "--config.file="+file); err != nil || cfg.File != file || len(cfg.Projects) != 2 {
		t.Errorf("file alone: %v", err)
	}
}

// Both routes give the same value for the same settings.
func TestFlagsAndFileAgree(t *testing.T) {
	fromFlags, err := parse(t, "--mintlify.project=p", "--visitors.window=1d", "--visitors.window=7d", "--visitors.timezone=Asia/Kolkata",
		"--visitors.path-exclude=^/x", "--visitors.max-paths=10", "--mintlify.api-key-file=/k", "--mintlify.analytics-budget=40")
	if err != nil {
		t.Fatal(err)
	}
	fromFile, err := Parse("c.yml", []byte(`organizations: [{name: default, api_key_file: /k, analytics_budget: 40}]
projects:
  - {id: p, windows: [1d, 7d], timezone: Asia/Kolkata, paths: {exclude: "^/x", max: 10}, agent_jobs: true, deployments: true, static_exports: true, automations: ["*"]}
`), 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	a, b := fromFlags.Projects[0], fromFile.Projects[0]
	if !a.SameWalks(&b.PlanProject.Project) || a.Organization != b.Organization || !maps.EqualFunc(a.Kinds, b.Kinds, slices.Equal) ||
		!on(a, "deployment") {
		t.Errorf("flags %+v\nfile  %+v", a, b)
	}
	oa, ob := fromFlags.Organizations[0], fromFile.Organizations[0]
	if oa.Name != ob.Name || oa.APIKeyFile != ob.APIKeyFile || oa.AnalyticsBudget != ob.AnalyticsBudget {
		t.Errorf("organizations differ: %+v %+v", oa, ob)
	}
}

// on reports whether p takes kind's operations.
func on(p Project, kind string) bool {
	_, ok := p.Takes(kind)
	return ok
}
