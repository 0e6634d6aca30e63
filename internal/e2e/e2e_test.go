//go:build e2e

package e2e

// The end-to-end test: the built exporter against the fake Mintlify API,
// scraped every second by Debian's Prometheus with the repository's rules,
// which notifies Debian's Alertmanager, whose webhook receiver is this test.
// Prometheus and Alertmanager run with examples/prometheus.yml and
// examples/alertmanager.yml, rewritten only where a test machine differs
// (see configs_test.go). Everything listens on 127.0.0.1 and every process is
// stopped by its PID when the test ends.

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/mintlify-exporter/mintlify_exporter/alerts"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil/blackbox"
)

const (
	// The alerts the test drives through Alertmanager.
	jobFailedAlert   = "MintlifyAgentJobFailed"
	keyRejectedAlert = "MintlifyAPIKeyRejected"

	apiKey     = "mint_e2e_0123456789abcdef"
	jobProject = "acme-docs"
	scrapeJob  = "mintlify" // the job_name in examples/prometheus.yml
)

var projects = []string{"acme-docs", "acme-api"}

func TestEndToEnd(t *testing.T) {
	began := time.Now()
	promBin := lookTool(t, "prometheus", "prometheus")
	amBin := lookTool(t, "prometheus-alertmanager", "prometheus-alertmanager")

	rules, err := alerts.Load(alerts.RulesPath())
	if err != nil {
		t.Fatal(err)
	}
	jobFailed, keyRejected := mustAlert(t, rules, jobFailedAlert), mustAlert(t, rules, keyRejectedAlert)
	jobFailedWindow, keyFor, keyWindow := ruleWindow(t, jobFailed), ruleFor(t, keyRejected), ruleWindow(t, keyRejected)
	// Fail early, with the reason, rather than at the go test timeout.
	if budget := keyFor + keyWindow; budget > 4*time.Minute {
		t.Fatalf("%s needs %s (for) + %s (window) to fire and resolve: too long for the e2e time budget of 5 minutes", keyRejectedAlert, keyFor, keyWindow)
	}

	// 1. The fake API, in this process so that the test can inject faults,
	// and the exporter built from this checkout, with the job gateway.
	fake, apiURL, bin := fakeAndExporter(t, began)
	exporterAddr := testutil.FreeAddr(t)
	configFile := filepath.Join(t.TempDir(), "mintlify.yml")
	blackbox.WriteFile(t, configFile, string(exporterConfig(projects)))
	exporterArgs := []string{
		"--web.listen-address=" + exporterAddr,
		"--web.enable-agent-api",
		"--web.enable-deployment-api",
		"--web.enable-static-export-api",
		"--web.enable-automation-api",
		"--mintlify.api-url=" + apiURL,
		"--config.file=" + configFile,
		"--agent.state-file=" + filepath.Join(t.TempDir(), "agent.db"),
		"--agent.poll-interval=500ms",
		"--visitors.cache-ttl=2s",
		"--analytics.max-staleness=10m",
		"--log.level=debug",
	}
	exporter := startProc(t, "exporter", bin, exporterArgs, []string{"MINTLIFY_API_KEY=" + apiKey})
	exporterURL := "http://" + exporterAddr

	// 2. The webhook receiver, 3. Alertmanager (before Prometheus, or the
	// first alerts would be dropped).
	hook := newReceiver(t)
	amAddr := testutil.FreeAddr(t)
	amConfig, err := rewriteAlertmanagerConfig(readExample(t, "alertmanager.yml"), amRewrite{
		WebhookBase: hook.srv.URL,
		// The example waits 30s before the first notification of a group and
		// 5m between updates (including resolutions): too slow for a test.
		GroupWait: "1s", GroupInterval: "1s", RepeatInterval: "1h",
	})
	if err != nil {
		t.Fatalf("examples/alertmanager.yml: %v", err)
	}
	amDir := t.TempDir()
	blackbox.WriteFile(t, filepath.Join(amDir, "alertmanager.yml"), string(amConfig))
	am := startProc(t, "alertmanager", amBin, []string{
		"--config.file=" + filepath.Join(amDir, "alertmanager.yml"),
		"--storage.path=" + filepath.Join(amDir, "data"),
		"--web.listen-address=" + amAddr,
		"--cluster.listen-address=",
		"--log.level=debug",
	}, nil)
	procs := []*proc{exporter, am}
	waitReady(t, "http://"+amAddr+"/-/ready", procs)

	// 4. Prometheus, scraping and evaluating every second.
	prom, api := startPrometheus(t, promBin, map[string]string{"exporter": exporterAddr, "alertmanager": amAddr}, procs)
	procs = append(procs, prom)
	promStarted := time.Now()
	waitReady(t, exporterURL+"/-/ready", procs)
	t.Logf("everything started in %s", time.Since(began).Round(100*time.Millisecond))

	// 5. Prometheus sees the exporter up, with visitors of every project and
	// window refreshed.
	eventuallyRunning(t, "exporter target up", 30*time.Second, 250*time.Millisecond, procs, func() error {
		var resp struct {
			Data struct {
				ActiveTargets []struct {
					Labels    map[string]string `json:"labels"`
					Health    string            `json:"health"`
					LastError string            `json:"lastError"`
				} `json:"activeTargets"`
			} `json:"data"`
		}
		if err := getJSON(api.base+"/api/v1/targets", &resp); err != nil {
			return err
		}
		for _, tg := range resp.Data.ActiveTargets {
			if tg.Labels["job"] == scrapeJob && tg.Labels["instance"] == exporterAddr {
				if tg.Health != "up" {
					return fmt.Errorf("target health %q (%s)", tg.Health, tg.LastError)
				}
				return nil
			}
		}
		return fmt.Errorf("no target job=%q instance=%q in %+v", scrapeJob, exporterAddr, resp.Data.ActiveTargets)
	})
	// The configured windows: from midnight to 01:00 there may also be the
	// finished day's window "yesterday".
	visitorsRefreshed := fmt.Sprintf(`mintlify_analytics_refresh_success{source="visitors",scope="pages",window=~%q} == 1`, strings.Join(trafficWindows, "|"))
	wantRefreshed := len(projects) * len(trafficWindows)
	eventuallyRunning(t, "visitors refreshed for every project and window", 30*time.Second, 250*time.Millisecond, procs,
		expectCount(api, visitorsRefreshed, wantRefreshed))

	// 6. Agent jobs through the gateway: one fails, one opens a pull request.
	failedID := submitJobID(t, exporterURL, jobProject, "Rewrite the quickstart #fake:fail:2s")
	prID := submitJobID(t, exporterURL, jobProject, "Document the new endpoint #fake:pr:2s")
	// And one the gateway refuses, for the rejections panel.
	if err := postJSON(exporterURL+"/api/v2/agent/"+jobProject+"/job", map[string]string{"prompt": ""}, &struct{}{}); err == nil || !strings.Contains(err.Error(), "400") {
		t.Fatalf("submitting an empty prompt: got %v, want 400 Bad Request", err)
	}
	eventuallyRunning(t, "agent jobs finished (failed, completed with a PR)", 30*time.Second, 250*time.Millisecond, procs, func() error {
		var list struct {
			Jobs []struct {
				ID     string  `json:"id"`
				Status string  `json:"status"`
				PRLink *string `json:"prLink"`
			} `json:"jobs"`
		}
		if err := getJSON(exporterURL+"/api/v2/agent/"+jobProject+"/jobs", &list); err != nil {
			return err
		}
		got := map[string]string{}
		for _, j := range list.Jobs {
			got[j.ID] = j.Status
			if j.ID == prID && j.Status == "completed" && j.PRLink == nil {
				return fmt.Errorf("job %s completed without prLink", prID)
			}
		}
		if got[failedID] != "failed" || got[prID] != "completed" {
			return fmt.Errorf("job %s is %q (want failed), job %s is %q (want completed)", failedID, got[failedID], prID, got[prID])
		}
		return nil
	})
	eventuallyRunning(t, "finished jobs scraped", 15*time.Second, 250*time.Millisecond, procs,
		expectCount(api, fmt.Sprintf(`mintlify_agent_jobs_finished_total{project=%q,status=~"failed|completed"} > 0`, jobProject), 2))

	// 7. Deployments through the gateway, for the Deployments dashboard: an
	// update that succeeds, a preview that fails and one that succeeds (the
	// fake's outcome follows the branch: fail-* fails). A failed preview
	// fires no alert (MintlifyDeploymentFailed watches updates by default).
	deploy(t, exporterURL, "update/"+jobProject, map[string]string{})
	deploy(t, exporterURL, "preview/"+jobProject, map[string]string{"branch": "fail-e2e"})
	deploy(t, exporterURL, "preview/"+jobProject, map[string]string{"branch": "docs-e2e"})
	eventuallyRunning(t, "deployments finished and scraped (update success, preview failure and success)", 30*time.Second, 250*time.Millisecond, procs,
		expectCount(api, fmt.Sprintf(`mintlify_deployments_finished_total{project=%q} > 0`, jobProject), 3))

	// 7a. A static export through the gateway, for the Static exports row:
	// the fake completes it in a few seconds (fakeAndExporter), with
	// progress on the way.
	var export struct {
		JobID string `json:"jobId"`
	}
	if err := postJSON(exporterURL+"/api/v1/static-export/"+jobProject+"/jobs", map[string]string{"domain": "docs.example.com"}, &export); err != nil || export.JobID == "" {
		t.Fatalf("static export: %v (job id %q)", err, export.JobID)
	}
	eventuallyRunning(t, "static export completed and scraped", 30*time.Second, 250*time.Millisecond, procs,
		expectCount(api, fmt.Sprintf(`mintlify_static_exports_finished_total{project=%q,status="completed"} > 0`, jobProject), 1))

	// 7b. Automations through the gateway, for the dashboard's Automations
	// row: a run that is an agent job (followed to its end) and one whose
	// job get-job does not know (not followed).
	for _, a := range []string{fakeapi.AutomationAgentJob, fakeapi.AutomationUnfollowed} {
		var out struct {
			JobID string `json:"jobId"`
		}
		if err := postJSON(exporterURL+"/api/v1/workflow/"+jobProject+"/"+a+"/trigger", map[string]string{}, &out); err != nil || out.JobID == "" {
			t.Fatalf("automation %s: %v (job id %q)", a, err, out.JobID)
		}
	}
	eventuallyRunning(t, "automation runs known and scraped (an agent job, one not followed)", 30*time.Second, 250*time.Millisecond, procs,
		expectCount(api, fmt.Sprintf(`mintlify_automation_runs_total{project=%q} > 0`, jobProject), 2))

	// 8. The job-failed alert reaches the webhook with its labels and
	// annotations.
	target := map[string]string{"job": scrapeJob, "instance": exporterAddr}
	jobAlertLabels := merge(target, map[string]string{"alertname": jobFailedAlert, "project": jobProject})
	failedAlert := waitAlert(t, hook, "firing", jobAlertLabels, 45*time.Second, procs)
	checkNotification(t, failedAlert, jobFailed, jobAlertLabels, jobProject)

	// 7. Every query of every dashboard panel returns data.
	checkDashboards(t, api, promStarted, procs)

	// 9. A 401 on the visitors endpoint fires the key alert; after the fault
	// is cleared, both alerts resolve.
	fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Status: http.StatusUnauthorized})
	faultAt := time.Now()
	t.Logf("injected 401 on the visitors endpoint at %s", faultAt.Format(time.TimeOnly))
	keyAlertLabels := merge(target, map[string]string{"alertname": keyRejectedAlert, "endpoint": fakeapi.Visitors})
	keyAlert := waitAlert(t, hook, "firing", keyAlertLabels, keyFor+45*time.Second, procs)
	if since := time.Since(faultAt); since < keyFor {
		t.Errorf("%s reached the webhook %s after the first 401, before its for: %s", keyRejectedAlert, since, keyFor)
	}
	checkNotification(t, keyAlert, keyRejected, keyAlertLabels, fakeapi.Visitors)

	fake.ClearFaults()
	clearedAt := time.Now()
	t.Logf("cleared the fault at %s; %s resolves about %s later, %s about %s after the job failed", clearedAt.Format(time.TimeOnly),
		keyRejectedAlert, keyWindow, jobFailedAlert, jobFailedWindow)
	// A failed walk is tried again within 30s (the refresh plan's longest
	// retry interval), whatever its window's planned interval.
	eventuallyRunning(t, "visitors refresh recovered", 45*time.Second, 250*time.Millisecond, procs,
		expectCount(api, visitorsRefreshed, wantRefreshed))
	waitAlert(t, hook, "resolved", jobAlertLabels, jobFailedWindow+45*time.Second, procs)
	resolved := waitAlert(t, hook, "resolved", keyAlertLabels, keyWindow+45*time.Second, procs)
	if resolved.EndsAt.Before(clearedAt) {
		t.Errorf("%s resolved at %s, before the fault was cleared at %s", keyRejectedAlert, resolved.EndsAt, clearedAt)
	}
	// Nothing else fired: in a healthy run with one failed job and one key
	// fault, any other notification is a rule that cries wolf.
	if other := hook.alertnames(jobFailedAlert, keyRejectedAlert); len(other) > 0 {
		t.Errorf("unexpected alerts reached the webhook: %v; received:%s", other, hook.summary())
	}
	t.Logf("end-to-end run took %s", time.Since(began).Round(time.Second))
}

// The windows of the e2e configuration: those the dashboards and alerts
// read (visitors and views also at 30d, for the planner's long windows).
var (
	trafficWindows = []string{"1d", "7d", "30d"}
	contentWindows = []string{"1d", "7d"}
)

// exporterConfig is the exporter's configuration file for the e2e run:
// every source of every project, so that every dashboard panel has data.
// This fake has no analytics quota: a budget of one request a second
// keeps the refresh plan near the cache TTL (at the default 60/h the 1d
// windows are walked every few minutes, and the injected 401 below would
// not be met within the alert's window). The path cap is below the fake's
// 40 paths, so that the paths-dropped panel has something to show; top
// queries are on for the "Top searches" panel.
// deploy triggers a deployment through the gateway (route: "update/P" or
// "preview/P", body {} or the preview's) and checks it was accepted.
func deploy(t *testing.T, exporterURL, route string, body any) {
	t.Helper()
	var out struct {
		StatusID string `json:"statusId"`
	}
	if err := postJSON(exporterURL+"/api/v1/project/"+route, body, &out); err != nil || out.StatusID == "" {
		t.Fatalf("deployment %s: %v (status id %q)", route, err, out.StatusID)
	}
}

func exporterConfig(projects []string) []byte {
	list := func(ws []string) string { return "[" + strings.Join(ws, ", ") + "]" }
	var b strings.Builder
	b.WriteString(`organizations:
  - name: acme
    api_key_env: MINTLIFY_API_KEY
    analytics_budget: 3600
projects:
`)
	for _, p := range projects {
		fmt.Fprintf(&b, `  - id: %s
    windows: %s
    paths: {max: 30}
    agent_jobs: true
    deployments: true
    static_exports: true
    automations: [%[4]s, %[5]s]
    sources:
      visitors: {}
      views: {}
      feedback: {windows: %[3]s}
      feedback_items: {windows: %[3]s}
      searches: {windows: %[3]s, top_queries: 20}
      assistant: {windows: %[3]s}
`, p, list(trafficWindows), list(contentWindows), fakeapi.AutomationAgentJob, fakeapi.AutomationUnfollowed)
	}
	return []byte(b.String())
}

func waitReady(t *testing.T, url string, procs []*proc) {
	t.Helper()
	eventuallyRunning(t, url, 30*time.Second, 100*time.Millisecond, procs, func() error {
		body, status, err := testutil.Get(context.Background(), url)
		if err != nil {
			return err
		}
		if status != http.StatusOK {
			return fmt.Errorf("%d: %s", status, body)
		}
		return nil
	})
}

// expectCount returns a check that query has exactly n series.
func expectCount(api promAPI, query string, n int) func() error {
	return func() error {
		r, err := api.query(query, time.Now())
		if err != nil {
			return err
		}
		if len(r.Series) != n {
			return fmt.Errorf("%s: %d series, want %d", query, len(r.Series), n)
		}
		return nil
	}
}

// submitJobID submits an agent job for project and returns its id (the
// untagged tests' submitJob checks the answer's status only).
func submitJobID(t *testing.T, exporterURL, project, prompt string) string {
	t.Helper()
	var job struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	if err := postJSON(exporterURL+"/api/v2/agent/"+project+"/job", map[string]string{"prompt": prompt}, &job); err != nil {
		t.Fatalf("submitting a job: %v", err)
	}
	if job.ID == "" {
		t.Fatalf("submitting a job: no id in the answer")
	}
	t.Logf("submitted job %s (%s): %q", job.ID, job.Status, prompt)
	return job.ID
}

func waitAlert(t *testing.T, hook *receiver, status string, labels map[string]string, timeout time.Duration, procs []*proc) webhookAlert {
	t.Helper()
	var got webhookAlert
	eventuallyRunning(t, fmt.Sprintf("webhook received %s %s", labels["alertname"], status), timeout, 250*time.Millisecond, procs, func() error {
		var ok bool
		if got, ok = hook.find(status, labels); !ok {
			return fmt.Errorf("no %s alert with labels %v; received:%s", status, labels, hook.summary())
		}
		return nil
	})
	return got
}

// checkNotification compares a notified alert with its rule: the rule's
// labels plus the expected ones, the static summary and runbook_url as
// written, and a description rendered for the alert (mentioning subject).
func checkNotification(t *testing.T, a webhookAlert, rule alerts.Rule, labels map[string]string, subject string) {
	t.Helper()
	want := merge(rule.Labels, labels)
	for k, v := range want {
		if a.Labels[k] != v {
			t.Errorf("%s: label %s=%q, want %q (labels %v)", rule.Alert, k, a.Labels[k], v, a.Labels)
		}
	}
	if a.Labels["severity"] == "" {
		t.Errorf("%s: no severity label: %v", rule.Alert, a.Labels)
	}
	for _, k := range []string{"summary", "runbook_url"} {
		if a.Annotations[k] == "" || a.Annotations[k] != rule.Annotations[k] {
			t.Errorf("%s: annotation %s=%q, want %q", rule.Alert, k, a.Annotations[k], rule.Annotations[k])
		}
	}
	if d := a.Annotations["description"]; d == "" || strings.Contains(d, "{{") || strings.Contains(d, "<no value>") || !strings.Contains(d, subject) {
		t.Errorf("%s: description %q: want it rendered and mentioning %q", rule.Alert, d, subject)
	}
}

func mustAlert(t *testing.T, f *alerts.File, name string) alerts.Rule {
	t.Helper()
	r, ok := f.Alert(name)
	if !ok {
		t.Fatalf("%s: no alert %s; the e2e test drives it", alerts.RulesPath(), name)
	}
	return r
}

func ruleFor(t *testing.T, r alerts.Rule) time.Duration {
	t.Helper()
	if r.For == "" {
		return 0
	}
	d, err := model.ParseDuration(r.For)
	if err != nil {
		t.Fatalf("%s: for: %v", r.Alert, err)
	}
	return time.Duration(d)
}

var rangeSelector = regexp.MustCompile(`\[([0-9]+[smhdwy])\]`)

// ruleWindow is the longest range selector of the rule: how long an event
// keeps an increase()-based alert firing.
func ruleWindow(t *testing.T, r alerts.Rule) time.Duration {
	t.Helper()
	var longest time.Duration
	for _, m := range rangeSelector.FindAllStringSubmatch(r.Expr, -1) {
		d, err := model.ParseDuration(m[1])
		if err != nil {
			t.Fatalf("%s: %v", r.Alert, err)
		}
		longest = max(longest, time.Duration(d))
	}
	if longest == 0 {
		t.Fatalf("%s: no range selector in %q", r.Alert, r.Expr)
	}
	return longest
}

func merge(maps ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}
