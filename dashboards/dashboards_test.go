package dashboards

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/mintlify-exporter/mintlify_exporter/alerts"
)

// exporterMetrics are the metric names mintlify_exporter exposes (docs/metrics.md).
var exporterMetrics = []string{
	// Visitors.
	"mintlify_site_unique_visitors",
	"mintlify_site_unique_visitors_deduplicated",
	"mintlify_page_unique_visitors",
	"mintlify_page_unique_visitors_deduplicated",
	// Views.
	"mintlify_site_page_views",
	"mintlify_site_page_views_combined",
	"mintlify_page_views",
	"mintlify_page_views_combined",
	// Feedback.
	"mintlify_page_feedback",
	"mintlify_page_feedback_combined",
	"mintlify_feedback_pages_truncated",
	"mintlify_feedback_items",
	"mintlify_feedback_oldest_pending_age_seconds",
	// Searches.
	"mintlify_searches",
	"mintlify_search_query_hits",
	"mintlify_search_query_click_through_ratio",
	// AI assistant.
	"mintlify_assistant_turns_by_caller",
	"mintlify_assistant_turns_combined",
	"mintlify_assistant_conversations",
	"mintlify_assistant_turns_by_resolution",
	"mintlify_assistant_turns_by_response_type",
	"mintlify_assistant_turns_by_category",
	"mintlify_assistant_turns_other_categories",
	// Refresh status of every source (labels project, source, window, scope).
	"mintlify_analytics_refresh_success",
	"mintlify_analytics_refresh_failures_total",
	"mintlify_analytics_last_refresh_timestamp_seconds",
	"mintlify_analytics_refresh_duration_seconds",
	"mintlify_analytics_refresh_interval_seconds",
	"mintlify_analytics_paths",
	"mintlify_analytics_paths_dropped",
	// API client and analytics budget.
	"mintlify_api_requests_total",
	"mintlify_api_budget_requests_per_hour",
	"mintlify_api_budget_effective_requests_per_hour",
	"mintlify_api_budget_spent_requests",
	"mintlify_api_budget_rejections_total",
	"mintlify_api_key_expiry_timestamp_seconds",
	// Agent jobs.
	"mintlify_agent_jobs",
	"mintlify_agent_jobs_submitted_total",
	"mintlify_agent_jobs_finished_total",
	"mintlify_agent_job_pull_requests_total",
	"mintlify_agent_job_oldest_active_age_seconds",
	"mintlify_agent_job_submit_rejected_total",
	"mintlify_agent_jobs_lost_total",
	"mintlify_agent_state_write_errors_total",
	"mintlify_agent_create_unknown_outcomes",
	"mintlify_agent_job_messages_total",
	"mintlify_agent_job_message_rejected_total",
	"mintlify_agent_poll_max_overdue_seconds",
	"mintlify_agent_poll_interval_seconds",
	// Deployments of the documentation (only with --web.enable-deployment-api).
	"mintlify_deployments_finished_total",
	"mintlify_deployments_in_progress",
	"mintlify_deployment_last_success_timestamp_seconds",
	"mintlify_deployment_oldest_in_progress_age_seconds",
	"mintlify_deployment_unknown_outcomes",
	// Static exports.
	"mintlify_static_exports_finished_total",
	"mintlify_static_exports_in_progress",
	"mintlify_static_export_progress_ratio",
	"mintlify_static_export_pages_exported",
	"mintlify_static_export_last_success_timestamp_seconds",
	"mintlify_static_export_oldest_in_progress_age_seconds",
	"mintlify_static_export_unknown_outcomes",
	// Automations (only with --web.enable-automation-api).
	"mintlify_automation_triggers_total",
	"mintlify_automation_runs_total",
	"mintlify_automation_runs_pending",
	"mintlify_automation_unknown_outcomes",
	// Exporter.
	"mintlify_exporter_build_info",
	"mintlify_exporter_config_last_reload_successful",
	"mintlify_exporter_config_last_reload_success_timestamp_seconds",
	// Replicas sharing a Redis (only with a cluster: section).
	"mintlify_exporter_cluster_up",
	"mintlify_exporter_cluster_operations_total",
	"mintlify_exporter_cluster_primary",
	"mintlify_exporter_cluster_walk_leases_held",
	"mintlify_exporter_cluster_agent_state_lost",
}

// exporterHistograms are exposed as classic histograms: <name>_bucket, _sum and _count.
var exporterHistograms = []string{
	"mintlify_api_request_duration_seconds",
	"mintlify_agent_job_duration_seconds",
	"mintlify_agent_poll_delay_seconds",
	"mintlify_deployment_duration_seconds",
	"mintlify_static_export_duration_seconds",
}

// standardMetrics come from client_golang's Go and process collectors and from Prometheus itself
// (synthetic series of every scrape).
var standardMetrics = []string{
	"go_goroutines", "go_threads", "go_info", "go_memstats_alloc_bytes", "go_memstats_heap_alloc_bytes",
	"go_gc_duration_seconds_sum", "go_gc_duration_seconds_count",
	"process_cpu_seconds_total", "process_resident_memory_bytes", "process_virtual_memory_bytes",
	"process_open_fds", "process_max_fds", "process_start_time_seconds",
	"up", "scrape_duration_seconds", "scrape_samples_scraped", "scrape_samples_post_metric_relabeling",
	"scrape_series_added",
}

// allowedMetrics is the allow-list: exporter metrics, recording rules of alerts/mintlify.rules.yml and
// standard series.
func allowedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	rules, err := alerts.Load(alerts.RulesPath())
	if err != nil {
		t.Fatal(err)
	}
	recorded := rules.RecordingRules()
	if len(recorded) == 0 {
		t.Fatal("no recording rules in " + alerts.RulesPath())
	}
	allowed := map[string]bool{}
	for _, n := range slices.Concat(exporterMetrics, standardMetrics, recorded) {
		allowed[n] = true
	}
	for _, h := range exporterHistograms {
		for _, s := range []string{"_bucket", "_sum", "_count"} {
			allowed[h+s] = true
		}
	}
	return allowed
}

// metricNames returns the metric names an expression selects, or an error if it does not parse or
// has a selector without a metric name.
func metricNames(expr string) ([]string, error) {
	node, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var names []string
	var errs []error
	parser.Inspect(node, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		if name == "" {
			for _, m := range vs.LabelMatchers {
				if m.Name == "__name__" && m.Type.String() == "=" {
					name = m.Value
				}
			}
		}
		if name == "" {
			errs = append(errs, fmt.Errorf("selector %s has no metric name", vs))
			return nil
		}
		names = append(names, name)
		return nil
	})
	return names, errors.Join(errs...)
}

// checkExpr parses a dashboard expression (variables expanded with DefaultVars) and fails on any
// metric name not in allowed.
func checkExpr(expr string, allowed map[string]bool) error {
	expanded := Expand(expr, DefaultVars())
	names, err := metricNames(expanded)
	if err != nil {
		return fmt.Errorf("%q: %w", expanded, err)
	}
	if len(names) == 0 {
		return fmt.Errorf("%q selects no metric", expanded)
	}
	var unknown []string
	for _, n := range names {
		if !allowed[n] {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("unknown metric name(s) %v: not exported by mintlify_exporter, not a recording rule of alerts/%s, not a standard series", unknown, alerts.RulesFile)
	}
	return nil
}

func TestDashboardsFollowConventions(t *testing.T) {
	files, err := Files(Dir())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"agent-jobs.json", "assistant.json", "deployments.json", "exporter-health.json", "feedback-search.json", "visitors.json"}
	var got []string
	for _, f := range files {
		got = append(got, filepath.Base(f))
	}
	if !slices.Equal(got, want) {
		t.Errorf("dashboards = %v, want %v", got, want)
	}
	uids := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range Lint(data) {
			t.Errorf("%s: %v", filepath.Base(f), e)
		}
		d, err := Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		if other, dup := uids[d.UID]; dup {
			t.Errorf("%s and %s share uid %q", other, filepath.Base(f), d.UID)
		}
		uids[d.UID] = filepath.Base(f)
	}
	// The uids are part of the interface (links, provisioning): changing one breaks bookmarks.
	wantUIDs := map[string]string{
		"mintlify-agent-jobs":      "agent-jobs.json",
		"mintlify-assistant":       "assistant.json",
		"mintlify-deployments":     "deployments.json",
		"mintlify-exporter-health": "exporter-health.json",
		"mintlify-feedback-search": "feedback-search.json",
		"mintlify-visitors":        "visitors.json",
	}
	for uid, file := range wantUIDs {
		if uids[uid] != file {
			t.Errorf("uid %q: in %q, want %q", uid, uids[uid], file)
		}
	}
}

// TestEveryExpressionUsesKnownMetrics parses every panel query and every variable query with the
// PromQL parser and fails on a metric name the exporter, the recording rules or Prometheus do not
// provide.
func TestEveryExpressionUsesKnownMetrics(t *testing.T) {
	allowed := allowedMetrics(t)
	panels, err := Queries(Dir())
	if err != nil {
		t.Fatal(err)
	}
	vars, err := TemplateQueries(Dir())
	if err != nil {
		t.Fatal(err)
	}
	if len(panels) < 20 || len(vars) < 9 {
		t.Fatalf("found %d panel queries and %d variable queries: the dashboards were not read", len(panels), len(vars))
	}
	for _, q := range slices.Concat(panels, vars) {
		if err := checkExpr(q.Expr, allowed); err != nil {
			t.Errorf("%s: %v", q, err)
		}
		if left := Expand(q.Expr, DefaultVars()); strings.Contains(left, "$") {
			t.Errorf("%s: variables left after expansion: %s", q, left)
		}
	}
}

// TestRulesUseKnownMetrics applies the same allow-list to the alerting and recording rules, so that a
// typo in a rule is caught here as well as in the promtool unit tests.
func TestRulesUseKnownMetrics(t *testing.T) {
	allowed := allowedMetrics(t)
	rules, err := alerts.Load(alerts.RulesPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if err := checkExpr(r.Expr, allowed); err != nil {
				t.Errorf("rule %s%s: %v", r.Alert, r.Record, err)
			}
		}
	}
}

// TestDashboardPanels pins the panels the issue asks for, by title, so that none is lost in an edit.
func TestDashboardPanels(t *testing.T) {
	qs, err := Queries(Dir())
	if err != nil {
		t.Fatal(err)
	}
	titles := map[string][]string{}
	exprs := map[string][]string{}
	for _, q := range qs {
		if !slices.Contains(titles[q.File], q.Panel) {
			titles[q.File] = append(titles[q.File], q.Panel)
		}
		exprs[q.File] = append(exprs[q.File], q.Expr)
	}
	want := map[string][]string{
		"visitors.json": {"Site unique visitors, human vs AI", "Site unique visitors, deduplicated",
			"AI share of visitors", "Top pages, human visitors", "Top pages, AI visitors",
			"Unique visitors of $path", "Paths exported and dropped",
			"Daily unique visitors, human and AI", "Daily unique visitors, deduplicated",
			"Daily visitors, week over week", "Daily visitors, 4 weeks over 4 weeks", "Top pages by visitor-days",
			"Site page views, human vs AI", "Site page views, combined", "Top pages by views", "Views of $path"},
		"agent-jobs.json": {"Jobs by status", "Submissions and rejections", "Jobs finished by status",
			"Success and failure ratio, last 24h", "Time to terminal state", "Pull requests opened",
			"Oldest active job age", "Poll delay", "Most overdue poll"},
		"exporter-health.json": {"Target up", "Build info", "Configuration reload", "Last successful configuration load",
			"Refresh success", "Age of analytics data", "Refreshes not succeeding, by source",
			"API requests by endpoint and code", "API latency", "Analytics budget", "Scrape duration"},
		"feedback-search.json": {"Worst-rated pages", "Triage backlog by status", "Open feedback by source",
			"Oldest pending feedback age", "Searches", "Top searches"},
		"assistant.json": {"Turns by caller, and conversations", "Unanswered ratio", "Turns by response type",
			"Top categories"},
		"deployments.json": {"Deployments in progress", "Failed deployments over the time range",
			"Time since the last success", "Deployments finished by status", "Deployments queued or in progress",
			"Deployment duration", "Oldest deployment in progress"},
	}
	for file, ts := range want {
		for _, title := range ts {
			if !slices.Contains(titles[file], title) {
				t.Errorf("%s: no panel %q (have %q)", file, title, titles[file])
			}
		}
	}
	// Quantiles come from the classic buckets (Debian's Prometheus has no native histograms).
	for _, file := range []string{"agent-jobs.json", "deployments.json", "exporter-health.json"} {
		n := 0
		for _, e := range exprs[file] {
			if strings.Contains(e, "histogram_quantile(") {
				n++
				if !strings.Contains(e, "_bucket{") || !strings.Contains(e, "by (le") {
					t.Errorf("%s: %s: quantiles must use the classic _bucket series summed by le", file, e)
				}
			}
		}
		if n < 3 {
			t.Errorf("%s: %d quantile queries, want p50/p90/p99", file, n)
		}
	}
}

// load a good dashboard as a generic map to break it.
func loadMap(t *testing.T, name string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(Dir(), name))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func firstPanel(m map[string]any) map[string]any {
	for _, p := range m["panels"].([]any) {
		pm := p.(map[string]any)
		if pm["type"] != "row" {
			return pm
		}
	}
	return nil
}

func dropVariable(m map[string]any, name string) {
	tpl := m["templating"].(map[string]any)
	var keep []any
	for _, v := range tpl["list"].([]any) {
		if v.(map[string]any)["name"] != name {
			keep = append(keep, v)
		}
	}
	tpl["list"] = keep
}

// TestLintRejectsBadDashboards breaks a good dashboard in each way the conventions forbid and checks
// that Lint reports it.
func TestLintRejectsBadDashboards(t *testing.T) {
	cases := []struct {
		name   string
		break_ func(m map[string]any)
		want   string
	}{
		{"numeric id", func(m map[string]any) { m["id"] = 42 }, `"id" must be present and null`},
		{"missing id", func(m map[string]any) { delete(m, "id") }, `"id" must be present and null`},
		{"empty uid", func(m map[string]any) { m["uid"] = "" }, "uid"},
		{"__inputs", func(m map[string]any) {
			m["__inputs"] = []any{map[string]any{"name": "DS_PROMETHEUS", "type": "datasource"}}
		}, "__inputs"},
		{"hard-coded panel datasource", func(m map[string]any) {
			firstPanel(m)["datasource"] = map[string]any{"type": "prometheus", "uid": "P1809F7CD0C75ACF3"}
		}, "datasource must be"},
		{"input placeholder in a target", func(m map[string]any) {
			tg := firstPanel(m)["targets"].([]any)[0].(map[string]any)
			tg["datasource"] = map[string]any{"type": "prometheus", "uid": "${DS_PROMETHEUS}"}
		}, "${DS_"},
		{"no unit", func(m map[string]any) {
			delete(firstPanel(m)["fieldConfig"].(map[string]any)["defaults"].(map[string]any), "unit")
		}, "no unit"},
		{"no description", func(m map[string]any) { delete(firstPanel(m), "description") }, "no description"},
		{"no project variable", func(m map[string]any) { dropVariable(m, "project") }, `no "project" query variable`},
		{"no datasource variable", func(m map[string]any) { dropVariable(m, "datasource") }, `no "datasource" variable`},
		{"fixed rate range", func(m map[string]any) {
			tg := firstPanel(m)["targets"].([]any)[0].(map[string]any)
			tg["expr"] = `sum(rate(mintlify_api_requests_total[5m]))`
		}, "range [5m]"},
		{"undefined variable", func(m map[string]any) {
			tg := firstPanel(m)["targets"].([]any)[0].(map[string]any)
			tg["expr"] = `mintlify_site_unique_visitors{project=~"$site"}`
		}, "undefined variable $site"},
		{"no queries", func(m map[string]any) { firstPanel(m)["targets"] = []any{} }, "no queries"},
		{"fixed 1d range outside a daily query", func(m map[string]any) {
			tg := firstPanel(m)["targets"].([]any)[0].(map[string]any)
			tg["expr"] = `max_over_time(mintlify_site_unique_visitors{job=~"$job"}[1d])`
		}, "range [1d]"},
		{"day subquery outside a daily query", func(m map[string]any) {
			tg := firstPanel(m)["targets"].([]any)[0].(map[string]any)
			tg["expr"] = `sum_over_time(mintlify_site_unique_visitors{job=~"$job"}[$__range:1d])`
		}, "range [$__range:1d]"},
		{"other range in a daily query", func(m map[string]any) {
			tg := firstPanel(m)["targets"].([]any)[0].(map[string]any)
			tg["expr"] = `max_over_time(mintlify_site_unique_visitors{job=~"$job"}[2d] offset $day_offset)`
		}, "range [2d]"},
		{"no day_offset variable", func(m map[string]any) { dropVariable(m, "day_offset") }, "undefined variable $day_offset"},
		{"day_offset default not an option", func(m map[string]any) {
			for _, v := range m["templating"].(map[string]any)["list"].([]any) {
				if vm := v.(map[string]any); vm["name"] == "day_offset" {
					vm["current"] = map[string]any{"text": "x", "value": "-26h"}
				}
			}
		}, "not one of its options"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := loadMap(t, "visitors.json")
			c.break_(m)
			data, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			errs := Lint(data)
			if len(errs) == 0 {
				t.Fatalf("Lint accepted a dashboard with %s", c.name)
			}
			if !strings.Contains(errors.Join(errs...).Error(), c.want) {
				t.Errorf("Lint errors %v do not mention %q", errs, c.want)
			}
		})
	}
	// And the unbroken dashboard passes, so the cases above fail for their own reason.
	data, _ := json.Marshal(loadMap(t, "visitors.json"))
	if errs := Lint(data); len(errs) != 0 {
		t.Fatalf("good dashboard rejected: %v", errs)
	}
	if errs := Lint([]byte(`[1, 2]`)); len(errs) == 0 {
		t.Error("Lint accepted a JSON array")
	}
}

// TestCheckExprRejects feeds bad expressions to the metric-name check.
func TestCheckExprRejects(t *testing.T) {
	allowed := allowedMetrics(t)
	bad := map[string]string{
		`rate(mintlify_api_request_total{job=~"$job"}[$__rate_interval])`: "unknown metric",
		`mintlify:site_ai_share:ratio_typo`:                               "unknown metric",
		`mintlify_agent_job_duration_seconds{project=~"$project"}`:        "unknown metric", // a histogram has no plain series
		`sum(rate(mintlify_api_requests_total[$__rate_interval])`:         "unclosed",
		`{job="mintlify"}`: "no metric name",
		`vector(1)`:        "selects no metric",
	}
	for expr, want := range bad {
		err := checkExpr(expr, allowed)
		if err == nil {
			t.Errorf("%s: accepted", expr)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %q does not mention %q", expr, err, want)
		}
	}
	good := []string{
		`histogram_quantile(0.9, sum by (le) (rate(mintlify_agent_job_duration_seconds_bucket{project=~"$project"}[$__rate_interval])))`,
		`mintlify:agent_jobs_failure:ratio1d{job=~"$job"}`,
		`{__name__="up", job=~"$job"}`,
		`scrape_duration_seconds{job=~"$job",instance=~"$instance"}`,
	}
	for _, expr := range good {
		if err := checkExpr(expr, allowed); err != nil {
			t.Errorf("%s: %v", expr, err)
		}
	}
}

func TestExpand(t *testing.T) {
	vars := map[string]string{"job": "mintlify", "instance": "127.0.0.1:9871", "__rate_interval": "15s"}
	cases := map[string]string{
		`rate(x{job=~"$job",instance=~"${instance}"}[$__rate_interval])`: `rate(x{job=~"mintlify",instance=~"127.0.0.1:9871"}[15s])`,
		`x{job=~"${job:regex}",a="[[job]]"}`:                             `x{job=~"mintlify",a="mintlify"}`,
		`x{project=~"$project"}`:                                         `x{project=~"$project"}`,
		`x{job=~"$jobs"}`:                                                `x{job=~"$jobs"}`, // $jobs is another variable
	}
	for in, want := range cases {
		if got := Expand(in, vars); got != want {
			t.Errorf("Expand(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestLabelValues(t *testing.T) {
	cases := []struct{ q, expr, label string }{
		{`label_values(mintlify_exporter_build_info, job)`, "mintlify_exporter_build_info", "job"},
		{`label_values(x{a=~"$a", b="c"}, instance)`, `x{a=~"$a", b="c"}`, "instance"},
		{`label_values(job)`, "", "job"},
	}
	for _, c := range cases {
		expr, label, ok := LabelValues(c.q)
		if !ok || expr != c.expr || label != c.label {
			t.Errorf("LabelValues(%s) = %q, %q, %v", c.q, expr, label, ok)
		}
	}
	if _, _, ok := LabelValues(`query_result(up)`); ok {
		t.Error("query_result taken for label_values")
	}
}

// TestQueriesForE2E checks the helper the end-to-end test uses: every query, with file, panel and
// refId, in a stable order.
func TestQueriesForE2E(t *testing.T) {
	qs, err := Queries(Dir())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, q := range qs {
		key := q.File + "/" + q.Panel + "/" + q.RefID
		if seen[key] {
			t.Errorf("duplicate query key %s", key)
		}
		seen[key] = true
		if q.UID == "" || q.Dashboard == "" || q.Panel == "" || q.RefID == "" {
			t.Errorf("incomplete query %+v", q)
		}
	}
	files := []string{}
	for _, q := range qs {
		if len(files) == 0 || files[len(files)-1] != q.File {
			files = append(files, q.File)
		}
	}
	if !sort.StringsAreSorted(files) {
		t.Errorf("queries not in file order: %v", files)
	}
	if _, err := Queries(t.TempDir()); err == nil {
		t.Error("Queries of an empty directory did not fail")
	}
}

// TestDayOffsetOptions checks every value of the visitors dashboard's day_offset variable against its
// label: a zone at UTC+H needs -(25h - H), so that a 1d step at UTC midnight of day D reads from 01:00
// local on D to 01:00 local on D+1; the default is UTC.
func TestDayOffsetOptions(t *testing.T) {
	ds, err := Load(Dir())
	if err != nil {
		t.Fatal(err)
	}
	var v *Variable
	for i, tv := range ds["visitors.json"].Templating.List {
		if tv.Name == DayOffsetVariable {
			v = &ds["visitors.json"].Templating.List[i]
		}
	}
	if v == nil || v.Type != "custom" || v.Multi || v.IncludeAll {
		t.Fatalf("visitors.json: want a single-value custom variable %s, got %+v", DayOffsetVariable, v)
	}
	if v.CurrentValue() != "-25h" {
		t.Errorf("default %q, want -25h (UTC, the exporter's default --analytics.timezone)", v.CurrentValue())
	}
	labelRe := regexp.MustCompile(`^UTC(?:([+-])(\d+)(?::(\d+))?)?(?: |$)`)
	var fromQuery []string
	for _, part := range strings.Split(v.QueryString(), ",") {
		fromQuery = append(fromQuery, strings.TrimSpace(part))
	}
	if len(fromQuery) != len(v.Options) || len(v.Options) < 10 {
		t.Fatalf("%d values in the query, %d options", len(fromQuery), len(v.Options))
	}
	for i, o := range v.Options {
		if want := o.Text + " : " + o.Value; fromQuery[i] != want {
			t.Errorf("option %d is %q, the query says %q", i, want, fromQuery[i])
		}
		m := labelRe.FindStringSubmatch(o.Text)
		if m == nil {
			t.Errorf("option %q: label does not start with UTC, UTC+H or UTC-H", o.Text)
			continue
		}
		h, _ := strconv.Atoi(m[2])
		mins, _ := strconv.Atoi(m[3])
		offset := time.Duration(h)*time.Hour + time.Duration(mins)*time.Minute
		if m[1] == "-" {
			offset = -offset
		}
		want := -(25*time.Hour - offset)
		d, err := model.ParseDuration(strings.TrimPrefix(o.Value, "-"))
		if err != nil || !strings.HasPrefix(o.Value, "-") || -time.Duration(d) != want {
			t.Errorf("option %q: value %q, want -%s", o.Text, o.Value, model.Duration(-want))
		}
		expr := Expand(`max_over_time(mintlify_site_unique_visitors[1d] offset $day_offset)`, map[string]string{DayOffsetVariable: o.Value})
		if _, err := parser.NewParser(parser.Options{}).ParseExpr(expr); err != nil {
			t.Errorf("option %q: %s: %v", o.Text, expr, err)
		}
	}
}
