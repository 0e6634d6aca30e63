//go:build e2e

package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/dashboards"
)

// Grafana's own variables as the test fills them in. With a 1s scrape
// interval, 1m holds plenty of samples for rate(); Grafana would compute
// $__rate_interval as max(4 × the data source's scrape interval, $__interval +
// scrape interval), at least 1m with its default 15s.
var builtinVars = map[string]string{
	"__rate_interval": "1m",
	"__interval":      "5s",
	"__interval_ms":   "5000",
	"__range":         "5m",
	"__range_s":       "300",
	"__range_ms":      "300000",
}

const panelStep = 5 * time.Second // matches $__interval

// preferred picks, among a variable's real values, the one the test made
// interesting (the project with jobs, the 1d window, the home page).
var preferred = map[string]string{"project": jobProject, "window": "1d", "path": "/"}

// noDataAllowed lists dashboard queries that legitimately return nothing
// from a Prometheus that has run for a couple of minutes, keyed by
// "file: panel title: refId", each with the reason. Keep it empty unless a
// panel cannot have data in a fresh Prometheus; an entry that does return
// data fails the test, so the list cannot go stale.
var noDataAllowed = map[string]string{
	"visitors.json: Daily unique visitors, human and AI: A":  dailyNoData,
	"visitors.json: Daily unique visitors, deduplicated: A":  dailyNoData,
	"visitors.json: Daily visitors, week over week: A":       dailyNoData,
	"visitors.json: Daily visitors, 4 weeks over 4 weeks: A": dailyNoData,
	"visitors.json: Top pages by visitor-days: A":            dailyNoData + "; the table's [$__range:1d] holds a UTC midnight only when the run spans one",
}

// notExercised lists the dashboards the run gives no series at all, keyed by
// file, each with the reason: their variables resolve to nothing, so their
// queries are left out. A listed dashboard whose variables do resolve fails
// the test, so the list cannot go stale.
var notExercised = map[string]string{}

// dailyNoData: TestDailyHistory checks the Daily row against backfilled days.
const dailyNoData = "a daily step at T reads T+1h to T+25h (offset $day_offset = -25h): the future for every step of a run of a few minutes; TestDailyHistory checks these panels over backfilled history"

// dashboardVars resolves every template variable of dashboard d the way
// Grafana would, from this Prometheus: in order, each label_values query
// expanded with the variables before it.
func dashboardVars(api promAPI, file string, d *dashboards.Dashboard) (map[string]string, error) {
	vars := map[string]string{}
	for k, v := range builtinVars {
		vars[k] = v
	}
	for _, v := range d.Templating.List {
		if v.Type == "custom" {
			vars[v.Name] = v.CurrentValue() // its default, e.g. day_offset
			continue
		}
		if v.Type != "query" {
			continue // the datasource variable
		}
		expr, label, ok := dashboards.LabelValues(v.QueryString())
		if !ok || expr == "" {
			return nil, fmt.Errorf("%s: variable %s: only label_values(expr, label) queries are supported by the e2e test, got %q", file, v.Name, v.QueryString())
		}
		expr = dashboards.Expand(expr, vars)
		values, err := api.labelValues(label, expr)
		if err != nil {
			return nil, fmt.Errorf("%s: variable %s: %w", file, v.Name, err)
		}
		if len(values) == 0 {
			return nil, fmt.Errorf("%s: variable %s: label_values(%s, %s) has no value", file, v.Name, expr, label)
		}
		value := values[0]
		if p, ok := preferred[v.Name]; ok && slices.Contains(values, p) {
			value = p
		}
		if v.Multi || v.IncludeAll {
			// Grafana regex-escapes the values of multi-value and "All"
			// variables, inside a PromQL string literal.
			value = strings.ReplaceAll(regexp.QuoteMeta(value), `\`, `\\`)
		}
		vars[v.Name] = value
	}
	return vars, nil
}

// checkDashboards runs every query of every dashboard panel against
// Prometheus, with the variables filled in, as Grafana would (a range query
// over the test's run, or an instant query for instant targets), until each
// returns at least one number or the deadline passes.
func checkDashboards(t *testing.T, api promAPI, since time.Time, procs []*proc) {
	t.Helper()
	checkDashboardFiles(t, api, since, procs, 60*time.Second, nil)
}

// checkDashboardFiles is checkDashboards for the dashboards named in files
// (nil: every one), within timeout. The variables must resolve at once.
func checkDashboardFiles(t *testing.T, api promAPI, since time.Time, procs []*proc, timeout time.Duration, files []string) {
	t.Helper()
	dir := dashboards.Dir()
	queries, err := dashboards.Queries(dir)
	if err != nil {
		t.Fatalf("dashboards: %v", err)
	}
	ds, err := dashboards.Load(dir)
	if err != nil {
		t.Fatalf("dashboards: %v", err)
	}
	if files != nil {
		queries = slices.DeleteFunc(queries, func(q dashboards.Query) bool { return !slices.Contains(files, q.File) })
		for file := range ds {
			if !slices.Contains(files, file) {
				delete(ds, file)
			}
		}
		if len(ds) != len(files) {
			t.Fatalf("dashboards: want %v, found %d of them", files, len(ds))
		}
	}
	for file, why := range notExercised {
		d, checked := ds[file]
		if !checked {
			continue
		}
		if _, err := dashboardVars(api, file, d); err == nil {
			t.Errorf("notExercised: the variables of %s resolve: remove it from the list (%s)", file, why)
		} else if !strings.Contains(err.Error(), "variable project: ") || !strings.Contains(err.Error(), "has no value") {
			t.Fatal(err) // only its own series may be missing, not the exporter's
		}
		t.Logf("not exercised: %s (%s)", file, why)
		delete(ds, file)
		queries = slices.DeleteFunc(queries, func(q dashboards.Query) bool { return q.File == file })
	}
	vars := map[string]map[string]string{}
	for file, d := range ds {
		if vars[file], err = dashboardVars(api, file, d); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: variables %v", file, vars[file])
	}

	key := func(q dashboards.Query) string { return fmt.Sprintf("%s: %s: %s", q.File, q.Panel, q.RefID) }
	for k := range noDataAllowed {
		file, _, _ := strings.Cut(k, ": ")
		if _, checked := ds[file]; checked && !slices.ContainsFunc(queries, func(q dashboards.Query) bool { return key(q) == k }) {
			t.Errorf("noDataAllowed: %q is no dashboard query", k)
		}
	}

	pending := map[string]string{} // key -> why it has no data yet
	eventuallyRunning(t, fmt.Sprintf("all %d dashboard queries return data", len(queries)), timeout, time.Second, procs, func() error {
		clear(pending)
		now := time.Now()
		for _, q := range queries {
			expr := dashboards.Expand(q.Expr, vars[q.File])
			var r queryResult
			var err error
			if q.Instant {
				r, err = api.query(expr, now)
			} else {
				r, err = api.queryRange(expr, since, now, panelStep)
			}
			if err != nil {
				pending[key(q)] = fmt.Sprintf("%s: %v", expr, err)
				continue
			}
			all, numbers := r.points()
			_, allowed := noDataAllowed[key(q)]
			switch {
			case numbers > 0 && allowed:
				pending[key(q)] = fmt.Sprintf("%s: returns data, so remove it from noDataAllowed", expr)
			case numbers == 0 && !allowed:
				pending[key(q)] = fmt.Sprintf("%s: %d series, %d samples, none a number", expr, len(r.Series), all)
			}
		}
		if len(pending) == 0 {
			return nil
		}
		var b strings.Builder
		for _, k := range sortedKeys(pending) {
			fmt.Fprintf(&b, "\n  %s\n    %s", k, pending[k])
		}
		return fmt.Errorf("%d of %d queries without data:%s", len(pending), len(queries), b.String())
	})
	for k, why := range noDataAllowed {
		t.Logf("allowed to have no data: %s (%s)", k, why)
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
