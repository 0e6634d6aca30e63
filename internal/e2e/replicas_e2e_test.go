//go:build e2e

package e2e

// Replicas on real Prometheus: three replicas of the built exporter share
// one Redis and are scraped as three targets of one job; every dashboard
// panel query and every rule expression must give over that scrape the
// answer it gives over a scrape of a single exporter.
//
// The single exporter is the primary replica (the one that exports what the
// replicas share), scraped alone. Rather than a second Prometheus, whose
// scrapes would land at other moments than the first one's and whose
// history would start later, each query is evaluated twice over the one
// TSDB at the same instant: as written, and with every selector restricted
// to the primary's target (an instance="<primary>" matcher added to each
// vector selector by the PromQL parser). That is exactly what a Prometheus
// scraping the primary alone would hold: same samples, same recording rule
// results (every recording rule keeps the instance label; one that dropped
// it would read nothing from the restricted side and fail the comparison),
// so the answers must be identical, not merely close.
//
// The job gateway is off: the agent dashboard and the agent rules have no
// series on either side here (agent series are each replica's own jobs).

import (
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/mintlify-exporter/mintlify_exporter/alerts"
	"github.com/mintlify-exporter/mintlify_exporter/dashboards"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil/blackbox"
)

// How a query's answer over every replica may legitimately differ from the
// primary's alone.
type differKind int

const (
	// perReplica: the answer keeps the instance label, one series per
	// replica, each about that replica only (process, scrape and
	// configuration series). The primary's series must be the single
	// exporter's answer exactly, and the other replicas must add series of
	// their own (or the entry is stale).
	perReplica differKind = iota + 1
	// clusterSum: a sum over the replicas of what each did itself (requests
	// each sent): at least the primary's share in every series, more in at
	// least one (the other replicas walked too). That each request is
	// counted by one replica only is checked against the fake API's own
	// count.
	clusterSum
	// mergedQuantile: a quantile of the replicas' histograms merged: it
	// lies between the replicas' own quantiles. A quantile is scale-free (a
	// histogram counted three times has the same quantiles), so it can
	// neither show double counting nor be required to differ.
	mergedQuantile
)

type allowedDiff struct {
	kind   differKind
	reason string
}

// differAllowed lists the queries whose answer over the three replicas may
// differ from the primary's alone, keyed by "file: panel title: refId" or
// "alert NAME" / "record NAME" (with " (thresholds removed)" for the
// variant without its comparisons), each with the reason. Every other query
// must answer identically. An entry whose query answers identically fails
// the test (except mergedQuantile, see there), so the list cannot go stale.
var differAllowed = map[string]allowedDiff{
	"exporter-health.json: Target up: A":                          {perReplica, "up: one per scraped target"},
	"exporter-health.json: Configuration reload: A":               {perReplica, "each replica reloads its own configuration file"},
	"exporter-health.json: Last successful configuration load: A": {perReplica, "each replica reloads its own configuration file"},
	"exporter-health.json: Build info: A":                         {perReplica, "each replica's build"},
	"exporter-health.json: Scrape duration: A":                    {perReplica, "scrape_duration_seconds: one per scraped target"},
	"exporter-health.json: Samples scraped: A":                    {perReplica, "scrape_samples_scraped: one per scraped target (the primary's scrape holds the shared data besides)"},
	"exporter-health.json: Memory and CPU: A":                     {perReplica, "process_resident_memory_bytes: each process' own"},
	"exporter-health.json: Memory and CPU: B":                     {perReplica, "process_cpu_seconds_total: each process' own"},
	"exporter-health.json: API requests by endpoint and code: A":  {clusterSum, "mintlify_api_requests_total is per process: each replica counts the requests it sent, and the walks are spread over the replicas, so the sum over the replicas is the cluster's requests and the primary's alone only its share"},
	"exporter-health.json: API latency: A":                        {mergedQuantile, apiLatencyMerged},
	"exporter-health.json: API latency: B":                        {mergedQuantile, apiLatencyMerged},
	"exporter-health.json: API latency: C":                        {mergedQuantile, apiLatencyMerged},

	"alert MintlifyExporterDown (thresholds removed)":       {perReplica, "up by target"},
	"alert MintlifyConfigReloadFailed (thresholds removed)": {perReplica, "each replica reloads its own configuration file"},
	"alert MintlifyAPIKeyRejected (thresholds removed)":     {perReplica, perInstanceRequests},
	"alert MintlifyAPIRateLimited (thresholds removed)":     {perReplica, perInstanceRequests},
	"alert MintlifyAPIErrors (thresholds removed)":          {perReplica, perInstanceRequests},
	"alert MintlifyClusterRedisDown (thresholds removed)":   {perReplica, "each replica's own connection to Redis"},
	"alert MintlifyClusterNoPrimary (thresholds removed)":   {clusterSum, "its value counts the replicas that reach Redis"},
}

const (
	apiLatencyMerged    = "mintlify_api_request_duration_seconds is per process (requests each replica sent): the quantile is the cluster's, of the replicas' histograms merged"
	perInstanceRequests = "by (job, instance, endpoint) over mintlify_api_requests_total: each replica's requests, as it sent them"
)

// thresholdsRemoved names the variant of a rule without its comparisons.
const thresholdsRemoved = " (thresholds removed)"

func TestThreeReplicasCountedOnce(t *testing.T) {
	began := time.Now()
	promBin := lookTool(t, "prometheus", "prometheus")
	redis := testutil.NewRedis(t)

	fake, apiURL, bin := fakeAndExporter(t, began)

	// One configuration file for every replica: the e2e configuration
	// (every source, so that every data panel has data) and the cluster.
	dir := t.TempDir()
	configFile := filepath.Join(dir, "mintlify.yml")
	blackbox.WriteFile(t, configFile, string(append(exporterConfig(projects), []byte(`cluster:
  address: `+redis.Addr+`
  key_prefix: "e2e:"
`)...)))
	names := []string{"a", "b", "c"}
	addrs := map[string]string{} // replica -> host:port (its instance label)
	for _, n := range names {
		addrs[n] = testutil.FreeAddr(t)
	}

	// Prometheus first, so that it scrapes the replicas from their start:
	// one job, three targets, every second, with the repository's rules.
	promAddr := testutil.FreeAddr(t)
	promDir := t.TempDir()
	blackbox.WriteFile(t, filepath.Join(promDir, "prometheus.yml"), fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - %q
scrape_configs:
  - job_name: %s
    static_configs:
      - targets: [%q, %q, %q]
`, alerts.RulesPath(), scrapeJob, addrs["a"], addrs["b"], addrs["c"]))
	prom := startProc(t, "prometheus", promBin, []string{
		"--config.file=" + filepath.Join(promDir, "prometheus.yml"),
		"--storage.tsdb.path=" + filepath.Join(promDir, "data"),
		"--web.listen-address=" + promAddr,
	}, nil)
	procs := []*proc{prom}
	waitReady(t, "http://"+promAddr+"/-/ready", procs)
	promStarted := time.Now()
	api := promAPI{base: "http://" + promAddr}

	// The replicas: the e2e exporter's flags without the job gateway, and
	// a 15s shortest interval so that demands are walked again while the
	// test runs, by whichever replica claims them first.
	for _, n := range names {
		procs = append(procs, startProc(t, "replica-"+n, bin, []string{
			"--web.listen-address=" + addrs[n],
			"--mintlify.api-url=" + apiURL,
			"--config.file=" + configFile,
			"--agent.state-file=" + filepath.Join(dir, n, "agent.db"),
			"--analytics.min-interval=15s",
			"--analytics.max-staleness=10m",
			"--log.level=debug",
		}, []string{"MINTLIFY_API_KEY=" + apiKey}))
	}
	for _, n := range names {
		waitReady(t, "http://"+addrs[n]+"/-/ready", procs)
	}
	t.Logf("everything started in %s", time.Since(began).Round(100*time.Millisecond))

	eventuallyRunning(t, "three targets up", 30*time.Second, 250*time.Millisecond, procs,
		expectCount(api, fmt.Sprintf(`up{job=%q} == 1`, scrapeJob), len(names)))

	// Exactly one target is the primary.
	var primary string
	eventuallyRunning(t, "one primary among the three targets", 30*time.Second, 250*time.Millisecond, procs, func() error {
		r, err := api.query(`mintlify_exporter_cluster_primary`, time.Now())
		if err != nil {
			return err
		}
		if len(r.Series) != len(names) {
			return fmt.Errorf("mintlify_exporter_cluster_primary: %d series, want one per replica (%d)", len(r.Series), len(names))
		}
		var primaries []string
		for _, s := range r.Series {
			if v, _ := s.value(); v == 1 {
				primaries = append(primaries, s.Metric["instance"])
			}
		}
		if len(primaries) != 1 {
			return fmt.Errorf("targets with mintlify_exporter_cluster_primary == 1: %v, want exactly one", primaries)
		}
		primary = primaries[0]
		return nil
	})
	t.Logf("the primary is %s", primary)

	// Every demand walked, and the rules evaluated over the data.
	minDemands := len(projects) * (2*len(trafficWindows) + 4*len(contentWindows))
	eventuallyRunning(t, "every demand refreshed", 60*time.Second, 500*time.Millisecond, procs, func() error {
		r, err := api.query(`mintlify_analytics_refresh_success`, time.Now())
		if err != nil {
			return err
		}
		failing := 0
		for _, s := range r.Series {
			if v, _ := s.value(); v != 1 {
				failing++
			}
		}
		if len(r.Series) < minDemands || failing > 0 {
			return fmt.Errorf("%d demands, %d not (yet) refreshed; want at least %d, all refreshed", len(r.Series), failing, minDemands)
		}
		return nil
	})
	for _, rec := range []string{"mintlify:site_ai_share:ratio", "mintlify:assistant_unanswered:ratio", "mintlify:page_feedback_thumbs_down:ratio"} {
		eventuallyRunning(t, rec+" recorded", 15*time.Second, 250*time.Millisecond, procs, func() error {
			r, err := api.query(rec, time.Now())
			if err == nil && len(r.Series) == 0 {
				err = fmt.Errorf("no series")
			}
			return err
		})
	}

	// The rate windows span the run (see below): wait until the other
	// replicas have sent requests that Prometheus saw, so that the
	// clusterSum entries differ for certain.
	var at time.Time
	var window string
	evalPoint := func() {
		at = time.Now().Add(-2 * time.Second) // every scrape up to it ingested
		window = fmt.Sprintf("%ds", int(math.Ceil(at.Sub(promStarted).Seconds())))
	}
	eventuallyRunning(t, "the other replicas walked while Prometheus scraped them", 60*time.Second, time.Second, procs, func() error {
		evalPoint()
		q := fmt.Sprintf(`sum(increase(mintlify_api_requests_total{instance!=%q}[%s])) > 0`, primary, window)
		r, err := api.query(q, at)
		if err == nil && len(r.Series) == 0 {
			err = fmt.Errorf("%s: nothing yet", q)
		}
		return err
	})

	// The series that replicas share were exported by the primary alone
	// during the whole run.
	// The client's own counters (requests, their durations, the rows it
	// skipped) are each process's, like its requests.
	sharedSeries := `{__name__=~"mintlify_.+",__name__!~"mintlify_(exporter|agent|web)_.+|mintlify_api_requests_total|mintlify_api_rows_skipped_total|mintlify_api_request_duration_seconds.*"}`
	r, err := api.query(fmt.Sprintf(`count by (instance) (last_over_time(%s[%s]))`, sharedSeries, window), at)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Series) != 1 || r.Series[0].Metric["instance"] != primary {
		t.Errorf("targets that exported analytics data, plan status or budget series during the run: %v, want the primary %s alone", instances(r), primary)
	}
	// Still the same one primary at the evaluation time, and never two
	// (before the first one took the lease, at start, there is none for a
	// moment).
	r, err = api.query(`mintlify_exporter_cluster_primary == 1`, at)
	if err != nil {
		t.Fatal(err)
	}
	if got := instances(r); len(got) != 1 || got[0] != primary {
		t.Fatalf("targets with mintlify_exporter_cluster_primary == 1 at the evaluation time: %v, want the primary %s alone", got, primary)
	}
	r, err = api.query(fmt.Sprintf(`max_over_time(sum(mintlify_exporter_cluster_primary)[%s:1s])`, window), at)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Series) != 1 {
		t.Errorf("sum of mintlify_exporter_cluster_primary over the run: %v", r.Series)
	} else if v, _ := r.Series[0].value(); v != 1 {
		t.Errorf("sum of mintlify_exporter_cluster_primary over the run reached %v, want at most 1", v)
	}

	// Every panel query and every rule expression, over the three replicas
	// and over the primary alone, at the same instant.
	vars := map[string]string{}
	for k, v := range builtinVars {
		vars[k] = v
	}
	// Grafana's $__rate_interval and $__range grow with the dashboard's
	// time range; here both span the run, so that every replica's work
	// since Prometheus started is in the windows.
	secs := strings.TrimSuffix(window, "s")
	n, _ := strconv.Atoi(secs)
	vars["__rate_interval"], vars["__range"], vars["__range_s"], vars["__range_ms"] = window, window, secs, strconv.Itoa(n*1000)
	queries := replicaQueries(t, api, vars, at, dailyAt(promStarted))
	cmp := &comparison{t: t, api: api, primary: primary, replicas: slices.Sorted(maps.Values(addrs))}
	for _, q := range queries {
		cmp.check(q)
	}
	for k := range differAllowed {
		if !slices.ContainsFunc(queries, func(q namedQuery) bool { return q.key == k }) {
			t.Errorf("differAllowed: %q is no dashboard query or rule", k)
		}
	}
	t.Logf("compared %d queries (%d dashboard panel queries in %d variable settings, %d rule expressions with and without their thresholds) at %s: %d answer with data, %d are empty over both; %d identical, %d differ as allowed",
		len(queries), cmp.panels, len(variableSettings), cmp.rules, at.Format(time.TimeOnly), cmp.withData, cmp.empty, cmp.identical, cmp.allowed)
	t.Logf("empty over both (no data in this run): %s", strings.Join(cmp.emptyKeys, "; "))
	// The analytics panels must have had something to compare.
	for _, q := range cmp.emptyQueries {
		if !slices.Contains([]string{"visitors.json", "feedback-search.json", "assistant.json"}, q.file) {
			continue
		}
		if _, ok := needHistory[q.key]; ok {
			continue
		}
		if q.key == "visitors.json: Top pages by visitor-days: A" && dailyMidnightMissed(promStarted, at) {
			continue
		}
		t.Errorf("%s [%s]: no data over either side, nothing compared\n  query: %s", q.key, q.setting, q.expr)
	}
	for k := range needHistory {
		if !slices.ContainsFunc(queries, func(q namedQuery) bool { return q.key == k }) {
			t.Errorf("needHistory: %q is no dashboard query", k)
		}
		if !slices.ContainsFunc(cmp.emptyQueries, func(q namedQuery) bool { return q.key == k }) {
			t.Errorf("needHistory: %q has data: remove it", k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(differAllowed)) {
		t.Logf("differs as allowed: %s: %s", k, differAllowed[k].reason)
	}

	// Each request counted once: the replicas' requests add up to what the
	// API received, and the shared ledger (exported by the primary) holds
	// each analytics request once.
	eventuallyRunning(t, "the replicas' requests add up to the API's count", 30*time.Second, 250*time.Millisecond, procs, func() error {
		r, err := api.query(`sum by (endpoint) (mintlify_api_requests_total)`, time.Now())
		if err != nil {
			return err
		}
		spent, err := api.query(`sum(mintlify_api_budget_spent_requests)`, time.Now())
		if err != nil {
			return err
		}
		got := map[string]float64{}
		for _, s := range r.Series {
			got[s.Metric["endpoint"]], _ = s.value()
		}
		var problems []string
		var analytics int64
		for _, e := range []string{fakeapi.Visitors, fakeapi.Views, fakeapi.FeedbackByPage, fakeapi.Feedback, fakeapi.Searches, fakeapi.Assistant, fakeapi.AssistantCallerStats} {
			n := fake.Requests(e)
			analytics += n
			if got[e] != float64(n) {
				problems = append(problems, fmt.Sprintf("%s: the replicas counted %v requests, the API received %d", e, got[e], n))
			}
		}
		if len(spent.Series) != 1 {
			problems = append(problems, fmt.Sprintf("sum(mintlify_api_budget_spent_requests): %d series", len(spent.Series)))
		} else if v, _ := spent.Series[0].value(); v != float64(analytics) {
			problems = append(problems, fmt.Sprintf("the shared ledger holds %v analytics requests, the API received %d", v, analytics))
		}
		if len(problems) > 0 {
			return fmt.Errorf("%s", strings.Join(problems, "; "))
		}
		return nil
	})
	t.Logf("three replicas on real Prometheus took %s", time.Since(began).Round(time.Second))
}

// namedQuery is one expression to compare.
type namedQuery struct {
	key     string // the differAllowed key
	setting string // the variable setting, for messages ("" for rules)
	file    string // the dashboard file, "" for rules
	expr    string
	at      time.Time // the evaluation time
}

// variableSetting is one way the test sets the dashboards' variables: job
// and instance always "All" (every replica: the question is what a
// dashboard over every replica shows), the others the values the e2e test
// prefers (one project, window 1d, the home page) or "All".
type variableSetting struct {
	name string
	all  bool
	// daily: only the queries of the daily panels (offset $day_offset),
	// evaluated at dailyAt over a 2-day range. Their negative offset reads
	// from 1h to 25h after each step, so at the evaluation time itself they
	// read the future (as noDataAllowed says).
	daily bool
}

// The daily panels are evaluated in the daily setting only.
var variableSettings = []variableSetting{{name: "preferred"}, {name: "all", all: true}, {name: "daily", all: true, daily: true}}

// dailyAt is when the daily panels are evaluated: just over an hour
// before Prometheus started, so that the day they read (1h to 25h later)
// holds the whole run; the day step of "Top pages by visitor-days" is the
// last UTC midnight before it, which reads the run unless it is more than
// 25h before at (dailyMidnightMissed).
func dailyAt(promStarted time.Time) time.Time { return promStarted.Add(-time.Hour - time.Second) }

func dailyMidnightMissed(promStarted, at time.Time) bool {
	return dailyAt(promStarted).UTC().Truncate(24 * time.Hour).Before(at.Add(-25 * time.Hour))
}

// needHistory lists the analytics panel queries that have no data in a run
// of a minute, with the reason; every other query of the analytics
// dashboards must have data, so that "identical" is never "empty on both
// sides".
var needHistory = map[string]string{
	"visitors.json: Daily visitors, week over week: A":       "divides by the same day a week earlier",
	"visitors.json: Daily visitors, 4 weeks over 4 weeks: A": "divides by the same day 4 weeks earlier",
}

// replicaQueries returns every dashboard panel query, expanded in each
// variable setting, and every rule expression, as written and without its
// thresholds.
func replicaQueries(t *testing.T, api promAPI, builtins map[string]string, at, daily time.Time) []namedQuery {
	t.Helper()
	dir := dashboards.Dir()
	panels, err := dashboards.Queries(dir)
	if err != nil {
		t.Fatalf("dashboards: %v", err)
	}
	ds, err := dashboards.Load(dir)
	if err != nil {
		t.Fatalf("dashboards: %v", err)
	}
	var out []namedQuery
	for _, setting := range variableSettings {
		b, when := builtins, at
		if setting.daily {
			b = maps.Clone(builtins)
			b["__range"], b["__range_s"], b["__range_ms"] = "2d", "172800", "172800000"
			when = daily
		}
		vars := map[string]map[string]string{}
		for file, d := range ds {
			if vars[file], err = replicaVars(api, file, d, b, setting.all); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s (%s): variables %v", file, setting.name, vars[file])
		}
		for _, q := range panels {
			if setting.daily != strings.Contains(q.Expr, dashboards.DayOffsetVariable) {
				continue
			}
			out = append(out, namedQuery{key: fmt.Sprintf("%s: %s: %s", q.File, q.Panel, q.RefID), setting: setting.name, file: q.File,
				expr: dashboards.Expand(q.Expr, vars[q.File]), at: when})
		}
	}
	rules, err := alerts.Load(alerts.RulesPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			key := "record " + r.Record
			if r.Alert != "" {
				key = "alert " + r.Alert
			}
			out = append(out, namedQuery{key: key, expr: r.Expr, at: at})
			bare, changed, err := withoutThresholds(r.Expr)
			if err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			if changed {
				out = append(out, namedQuery{key: key + thresholdsRemoved, expr: bare, at: at})
			}
		}
	}
	return out
}

// replicaVars resolves dashboard d's variables as Grafana would, from this
// Prometheus: job and instance "All", the others the preferred value (or
// the first) or, with all, "All". Grafana writes a multi-value or "All"
// variable as a regex of the escaped values, (v1|v2) for several. A
// variable without values (a source that has no series) matches nothing.
func replicaVars(api promAPI, file string, d *dashboards.Dashboard, builtins map[string]string, all bool) (map[string]string, error) {
	vars := maps.Clone(builtins)
	for _, v := range d.Templating.List {
		if v.Type == "custom" {
			vars[v.Name] = v.CurrentValue()
			continue
		}
		if v.Type != "query" {
			continue
		}
		expr, label, ok := dashboards.LabelValues(v.QueryString())
		if !ok || expr == "" {
			return nil, fmt.Errorf("%s: variable %s: only label_values(expr, label) queries are supported, got %q", file, v.Name, v.QueryString())
		}
		values, err := api.labelValues(label, dashboards.Expand(expr, vars))
		if err != nil {
			return nil, fmt.Errorf("%s: variable %s: %w", file, v.Name, err)
		}
		if !v.Multi && !v.IncludeAll {
			value := "no value"
			if len(values) > 0 {
				value = values[0]
			}
			if p, ok := preferred[v.Name]; ok && slices.Contains(values, p) {
				value = p
			}
			vars[v.Name] = value
			continue
		}
		if !all && v.Name != "job" && v.Name != "instance" && len(values) > 0 {
			value := values[0]
			if p, ok := preferred[v.Name]; ok && slices.Contains(values, p) {
				value = p
			}
			values = []string{value}
		}
		escaped := make([]string, len(values))
		for i, s := range values {
			escaped[i] = strings.ReplaceAll(regexp.QuoteMeta(s), `\`, `\\`)
		}
		switch len(values) {
		case 0:
			vars[v.Name] = "$^" // matches nothing: no label value is both empty and missing
		case 1:
			vars[v.Name] = escaped[0]
		default:
			vars[v.Name] = "(" + strings.Join(escaped, "|") + ")"
		}
	}
	return vars, nil
}

// answer is an instant vector: value by label set.
type answer map[string]float64

// comparison evaluates and compares queries, counting what it saw.
type comparison struct {
	t        *testing.T
	api      promAPI
	primary  string
	replicas []string

	panels, rules, withData, empty, identical, allowed int
	emptyKeys                                          []string
	emptyQueries                                       []namedQuery
}

func (c *comparison) eval(expr string, at time.Time) (answer, map[string]map[string]string) {
	c.t.Helper()
	r, err := c.api.query(expr, at)
	if err != nil {
		c.t.Fatalf("%s: %v", expr, err)
	}
	out, lbls := answer{}, map[string]map[string]string{}
	for _, s := range r.Series {
		k := labelKey(s.Metric)
		if _, dup := out[k]; dup {
			c.t.Fatalf("%s: two samples for %s", expr, k)
		}
		out[k], _ = s.value()
		lbls[k] = s.Metric
	}
	return out, lbls
}

// check evaluates q over every replica and over the primary alone and
// compares the answers.
func (c *comparison) check(q namedQuery) {
	t := c.t
	t.Helper()
	if q.file != "" {
		c.panels++
	} else {
		c.rules++
	}
	name := q.key
	if q.setting != "" {
		name += " [" + q.setting + "]"
	}
	alone, err := restrictTo(q.expr, c.primary)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	all, allLabels := c.eval(q.expr, q.at)
	one, _ := c.eval(alone, q.at)
	if len(all) == 0 && len(one) == 0 {
		c.empty++
		c.emptyKeys = append(c.emptyKeys, name)
		c.emptyQueries = append(c.emptyQueries, q)
	} else {
		c.withData++
	}
	allowed, isAllowed := differAllowed[q.key]
	// Counted two or three times: the value over every replica a multiple
	// of the single exporter's.
	if !isAllowed || allowed.kind == perReplica {
		for k, v := range one {
			if w, ok := all[k]; ok && v != 0 && !math.IsNaN(v) {
				for _, times := range []float64{2, 3} {
					if math.Abs(w/v-times) < 1e-9 {
						t.Errorf("%s: %s is %v over the three replicas, %v times the single exporter's %v: counted %v times\n  query: %s", name, k, w, times, v, times, q.expr)
					}
				}
			}
		}
	}
	same := sameAnswer(all, one)
	if !isAllowed {
		if same {
			c.identical++
		} else {
			t.Errorf("%s: over the three replicas the answer differs from the single exporter's:\n%s\n  query: %s\n  single exporter: %s", name, diffAnswers(one, all), q.expr, alone)
		}
		return
	}
	c.allowed++
	switch allowed.kind {
	case perReplica:
		mine := answer{}
		others := 0
		for k, v := range all {
			switch inst := allLabels[k]["instance"]; {
			case inst == c.primary:
				mine[k] = v
			case slices.Contains(c.replicas, inst):
				others++
			default:
				t.Errorf("%s: allowed per replica, but %s is no replica's series", name, k)
			}
		}
		if !sameAnswer(mine, one) {
			t.Errorf("%s: the primary's series over the three replicas differ from the single exporter's answer:\n%s", name, diffAnswers(one, mine))
		}
		if others == 0 {
			t.Errorf("%s: answers the same over the three replicas as over the single exporter: remove it from differAllowed (%s)", name, allowed.reason)
		}
	case clusterSum:
		more := false
		for k, v := range one {
			w, ok := all[k]
			switch {
			case !ok:
				t.Errorf("%s: %s is missing over the three replicas", name, k)
			case w < v-1e-9*math.Abs(v):
				t.Errorf("%s: %s is %v over the three replicas, less than the primary's own %v", name, k, w, v)
			case w > v+1e-9*math.Abs(v):
				more = true
			}
		}
		if !more && len(all) == len(one) {
			t.Errorf("%s: answers the same over the three replicas as over the single exporter: remove it from differAllowed (%s)", name, allowed.reason)
		}
	case mergedQuantile:
		per := map[string][]float64{}
		for _, inst := range c.replicas {
			e, err := restrictTo(q.expr, inst)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			a, _ := c.eval(e, q.at)
			for k, v := range a {
				if !math.IsNaN(v) {
					per[k] = append(per[k], v)
				}
			}
		}
		for k, w := range all {
			vs := per[k]
			if len(vs) == 0 || math.IsNaN(w) {
				if len(vs) != 0 || !math.IsNaN(w) {
					t.Errorf("%s: %s is %v over the three replicas, the replicas' own: %v", name, k, w, vs)
				}
				continue
			}
			lo, hi := slices.Min(vs), slices.Max(vs)
			if tol := 1e-9 * math.Max(math.Abs(lo), math.Abs(hi)); w < lo-tol || w > hi+tol {
				t.Errorf("%s: %s is %v over the three replicas, outside the replicas' own quantiles %v", name, k, w, vs)
			}
		}
	}
}

func (s sample) value() (float64, error) {
	if len(s.Value) != 2 {
		return math.NaN(), fmt.Errorf("no value")
	}
	str, _ := s.Value[1].(string)
	return strconv.ParseFloat(str, 64)
}

func labelKey(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%q", k, m[k])
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func sameAnswer(a, b answer) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || !sameValue(v, w) {
			return false
		}
	}
	return true
}

func sameValue(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return a == b || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// diffAnswers lists how got differs from want, at most 10 lines.
func diffAnswers(want, got answer) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		w, ok := got[k]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("  missing %s (single exporter: %v)", k, want[k]))
		case !sameValue(w, want[k]):
			out = append(out, fmt.Sprintf("  %s: %v, single exporter %v", k, w, want[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("  extra %s: %v", k, got[k]))
		}
	}
	if len(out) > 10 {
		out = append(out[:10], fmt.Sprintf("  ... %d more", len(out)-10))
	}
	return strings.Join(out, "\n")
}

func instances(r queryResult) []string {
	var out []string
	for _, s := range r.Series {
		out = append(out, s.Metric["instance"])
	}
	return out
}

func parseExpr(expr string) (parser.Expr, error) {
	return parser.NewParser(parser.Options{}).ParseExpr(expr)
}

// restrictTo returns expr with every vector selector restricted to the
// target instance: the same query over a Prometheus that scrapes that
// target alone.
func restrictTo(expr, instance string) (string, error) {
	e, err := parseExpr(expr)
	if err != nil {
		return "", fmt.Errorf("parsing %s: %w", expr, err)
	}
	m, err := labels.NewMatcher(labels.MatchEqual, "instance", instance)
	if err != nil {
		return "", err
	}
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			vs.LabelMatchers = append(vs.LabelMatchers, m)
		}
		return nil
	})
	return e.String(), nil
}

// withoutThresholds returns expr with every filtering comparison (a > b,
// a == b, ..., not the bool kind) replaced by its vector side: the values
// a rule compares, for every series, rather than only those past the
// thresholds (in a healthy run most alert expressions are empty, and two
// empty answers would prove nothing).
func withoutThresholds(expr string) (string, bool, error) {
	e, err := parseExpr(expr)
	if err != nil {
		return "", false, fmt.Errorf("parsing %s: %w", expr, err)
	}
	changed := false
	var strip func(parser.Expr) parser.Expr
	strip = func(e parser.Expr) parser.Expr {
		switch n := e.(type) {
		case *parser.BinaryExpr:
			n.LHS, n.RHS = strip(n.LHS), strip(n.RHS)
			if n.Op.IsComparisonOperator() && !n.ReturnBool {
				changed = true
				if n.LHS.Type() == parser.ValueTypeScalar && n.RHS.Type() == parser.ValueTypeVector {
					return n.RHS
				}
				return n.LHS
			}
		case *parser.ParenExpr:
			n.Expr = strip(n.Expr)
		case *parser.AggregateExpr:
			n.Expr = strip(n.Expr)
		case *parser.Call:
			for i, a := range n.Args {
				n.Args[i] = strip(a)
			}
		case *parser.SubqueryExpr:
			n.Expr = strip(n.Expr)
		case *parser.UnaryExpr:
			n.Expr = strip(n.Expr)
		case *parser.StepInvariantExpr:
			n.Expr = strip(n.Expr)
		}
		return e
	}
	e = strip(e)
	return e.String(), changed, nil
}
