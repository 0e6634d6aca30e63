package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil/blackbox"
)

// submitJob posts a job for project through the gateway and fails the
// test unless it is acknowledged.
func submitJob(t *testing.T, base, project, prompt string) {
	t.Helper()
	resp, err := http.Post(base+"/api/v2/agent/"+project+"/job", "application/json", strings.NewReader(fmt.Sprintf(`{"prompt":%q}`, prompt)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("submit a job for %s: HTTP %d", project, resp.StatusCode)
	}
}

// TestTwoOrganizationsEachWithItsKeyAndBudget runs the built exporter on a
// file with two organizations (one key from a file, one from the
// environment) whose projects want more walks than their budgets pay for:
// every request of a project carries its organization's key (the fake
// answers 403 to another's), agent jobs too, and each budget is spent to
// its limit and no further, with no 429.
func TestTwoOrganizationsEachWithItsKeyAndBudget(t *testing.T) {
	t.Parallel()
	const acmeKey, globexKey = "mint_acme_key", "mint_globex_key"
	api := blackbox.NewRecordingAPI(t, fakeapi.Options{
		Paths: 20, // one request per walk
		Organizations: []fakeapi.Organization{
			{Key: acmeKey, Projects: []string{"acme-docs", "acme-api"}},
			{Key: globexKey, Projects: []string{"globex-docs"}},
		},
		// The organizations' real quotas: the exporter's budgets are
		// below them, so a 429 would mean a budget leaked.
		AnalyticsBudget: 4,
	})
	dir := t.TempDir()
	file := dir + "/mintlify.yml"
	zone := blackbox.NoonZone()
	blackbox.WriteFile(t, file, `
organizations:
  - name: acme
    api_key_file: `+blackbox.KeyFile(t, dir, "acme.key", acmeKey)+`
    analytics_budget: 3
  - name: globex
    api_key_env: GLOBEX_KEY
    analytics_budget: 2
projects:
  - id: acme-docs
    organization: acme
    windows: [1d, 7d, 30d]
    timezone: `+zone+`
    sources: {visitors: {}}
    agent_jobs: true
  - id: acme-api
    organization: acme
    windows: [1d, 7d]
    timezone: `+zone+`
    sources: {visitors: {}}
  - id: globex-docs
    organization: globex
    windows: [1d, 7d, 30d, 90d]
    timezone: `+zone+`
    sources: {visitors: {}}
    agent_jobs: true
`)
	x := startExporter(t, []string{"GLOBEX_KEY=" + globexKey}, blackbox.ConfigArgs(api.URL, file, "--web.enable-agent-api")...)
	blackbox.WaitMetrics(t, x.Base, 20*time.Second, map[string]float64{spent("acme"): 3, spent("globex"): 2})
	// Both budgets are spent: nothing more may leave within the hour.
	// Give the schedulers a few rounds to prove it.
	settle(t, x.Base)

	byOrg := map[string]int{}
	for _, s := range api.Analytics("") {
		want := acmeKey
		if strings.HasPrefix(s.Project, "globex") {
			want = globexKey
		}
		if s.Key != want {
			t.Errorf("%s request for %s carried key %q, want %q", s.Endpoint, s.Project, s.Key, want)
		}
		if s.Status != http.StatusOK {
			t.Errorf("%s request for %s: HTTP %d", s.Endpoint, s.Project, s.Status)
		}
		byOrg[s.Key]++
	}
	if byOrg[acmeKey] != 3 || byOrg[globexKey] != 2 {
		t.Errorf("analytics requests by key = %v, want 3 with acme's key and 2 with globex's (their budgets)", byOrg)
	}
	if n := api.Fake.AnalyticsRequestsByKey(acmeKey) + api.Fake.AnalyticsRequestsByKey(globexKey); n != 5 || api.Fake.AnalyticsRejections() != 0 {
		t.Errorf("the fake counted %d analytics requests and %d rejections, want 5 and 0", n, api.Fake.AnalyticsRejections())
	}
	m := blackbox.Scrape(t, x.Base)
	for org, budget := range map[string]float64{"acme": 3, "globex": 2} {
		if got := m[spent(org)]; got != budget {
			t.Errorf("%s = %v, want %v", spent(org), got, budget)
		}
		if got := m["mintlify_api_budget_requests_per_hour{organization="+org+"}"]; got != budget {
			t.Errorf("budget of %s = %v, want %v", org, got, budget)
		}
		if got := m["mintlify_api_budget_rejections_total{organization="+org+"}"]; got != 0 {
			t.Errorf("%s rejections = %v, want 0", org, got)
		}
	}
	// Today's window of each project comes first.
	for _, p := range []string{"acme-docs", "acme-api", "globex-docs"} {
		if m[blackbox.Refreshed(p, "1d")] != 1 {
			t.Errorf("%s is not 1: today's windows go first", blackbox.Refreshed(p, "1d"))
		}
	}

	// Agent jobs go out with their project's organization's key.
	submitJob(t, x.Base, "acme-docs", "fix the quickstart #fake:pr:1h")
	submitJob(t, x.Base, "globex-docs", "fix the changelog #fake:pr:1h")
	creates := map[string]string{}
	for _, s := range api.Sent() {
		if s.Method == http.MethodPost && strings.HasPrefix(s.Endpoint, "v2/agent/") {
			creates[s.Project] = s.Key
			if s.Status != http.StatusCreated {
				t.Errorf("create for %s: HTTP %d, want 201 (the reference's)", s.Project, s.Status)
			}
		}
	}
	if creates["acme-docs"] != acmeKey || creates["globex-docs"] != globexKey {
		t.Errorf("creates went out with keys %v", creates)
	}
	x.Stop(t)
}

// TestKeyRotationByReload rewrites an organization's key file while the
// exporter runs and reloads: the next requests (a new project's first
// walk, an agent job) carry the new key; nothing is sent with it before.
func TestKeyRotationByReload(t *testing.T) {
	t.Parallel()
	const oldKey, newKey = "mint_old_key", "mint_new_key"
	projects := []string{"docs", "api"}
	api := blackbox.NewRecordingAPI(t, fakeapi.Options{Paths: 20, Organizations: []fakeapi.Organization{
		{Key: oldKey, Projects: projects}, {Key: newKey, Projects: projects},
	}})
	dir := t.TempDir()
	key := blackbox.KeyFile(t, dir, "acme.key", oldKey)
	file := dir + "/mintlify.yml"
	project := func(id string) string {
		return "  - id: " + id + "\n    windows: [7d]\n    timezone: " + blackbox.NoonZone() + "\n    sources: {visitors: {}}\n    agent_jobs: true\n"
	}
	head := "organizations:\n  - name: acme\n    api_key_file: " + key + "\n    analytics_budget: 50\nprojects:\n"
	blackbox.WriteFile(t, file, head+project("docs"))
	x := startExporter(t, nil, blackbox.ConfigArgs(api.URL, file, "--web.enable-agent-api")...)
	blackbox.WaitMetrics(t, x.Base, 20*time.Second, map[string]float64{blackbox.Refreshed("docs", "7d"): 1})
	submitJob(t, x.Base, "docs", "before the rotation #fake:pr:1h")
	before := len(api.Sent())

	blackbox.WriteFile(t, key, "  "+newKey+"\n")
	blackbox.WriteFile(t, file, head+project("docs")+project("api"))
	sighupReload(t, x)
	blackbox.WaitMetrics(t, x.Base, 20*time.Second, map[string]float64{blackbox.Refreshed("api", "7d"): 1, "mintlify_exporter_config_last_reload_successful{}": 1})
	submitJob(t, x.Base, "docs", "after the rotation #fake:pr:1h")

	all := api.Sent()
	for i, s := range all {
		if s.Method == http.MethodGet && strings.HasPrefix(s.Endpoint, "v2/agent/") {
			continue // job polls may carry either key, depending on their timing
		}
		want := oldKey
		if i >= before {
			want = newKey
		}
		if s.Key != want {
			t.Errorf("request %d (%s %s for %s) carried %q, want %q", i, s.Method, s.Endpoint, s.Project, s.Key, want)
		}
		wantStatus := http.StatusOK
		if s.Method == http.MethodPost && s.Endpoint == "v2/agent/job" {
			wantStatus = http.StatusCreated // job creation, as the reference documents it
		}
		if s.Status != wantStatus {
			t.Errorf("request %d (%s %s): HTTP %d, want %d", i, s.Method, s.Endpoint, s.Status, wantStatus)
		}
	}
	if len(all) <= before {
		t.Fatal("nothing was sent after the reload")
	}
	if api.Fake.AnalyticsRequestsByKey(newKey) != 1 || api.Fake.AnalyticsRequestsByKey(oldKey) != 1 {
		t.Errorf("analytics requests: %d with the old key, %d with the new, want 1 and 1 (docs' first walk, api's first walk)",
			api.Fake.AnalyticsRequestsByKey(oldKey), api.Fake.AnalyticsRequestsByKey(newKey))
	}
	if strings.Contains(x.Stderr.String(), newKey) || strings.Contains(x.Stderr.String(), oldKey) {
		t.Error("a key is in the logs")
	}
	x.Stop(t)
}
