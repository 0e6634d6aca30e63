package dashboards

// The conventions every dashboard follows (Lint) and what the tests read of
// the dashboards besides the panels' queries: test code, kept out of the
// package the end-to-end test imports.

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// DatasourceUID is the datasource uid every panel and query must use: the dashboard's own
// "datasource" variable, so that the dashboards import into any Grafana without editing.
const DatasourceUID = "${datasource}"

// RequiredVariables are the template variables every dashboard must define, besides "datasource".
var RequiredVariables = []string{"job", "instance", "project"}

func (q Query) String() string {
	if q.RefID == "" {
		return fmt.Sprintf("%s: %s: %s", q.File, q.Panel, q.Expr)
	}
	return fmt.Sprintf("%s: panel %q, query %s: %s", q.File, q.Panel, q.RefID, q.Expr)
}

var (
	uidRe = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)
	// The range of a range vector selector, e.g. [$__rate_interval].
	rangeRe = regexp.MustCompile(`\[([^\]\[]+)\]`)
)

// BuiltinVariables are Grafana's global variables that may appear in queries.
var BuiltinVariables = []string{"__rate_interval", "__interval", "__range", "__range_s", "__range_ms", "__interval_ms"}

// allowedRanges are the ranges a panel query may use: Grafana's, so that rates follow the scrape
// interval and the zoom, and totals over the dashboard's time range.
var allowedRanges = map[string]bool{"$__rate_interval": true, "$__range": true, "$__interval": true}

// dailyRanges are the ranges a daily query (one that uses $day_offset) may use besides allowedRanges:
// a calendar day, whatever the zoom, subqueries stepping one day (aligned to UTC midnights, like
// the panels' 1d steps), and the end of a day (its last hour, or seconds in summer time, and the next
// day's first: whether the day is over).
var dailyRanges = map[string]bool{"1d": true, "1h:1d": true, "$__range:1d": true, "2h2s": true}

// Lint checks a dashboard against the conventions and returns every violation found.
func Lint(data []byte) []error {
	l := &linter{}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return []error{fmt.Errorf("not a JSON object: %w", err)}
	}
	l.checkNoInputs(raw, data)
	d, err := Parse(data)
	if err != nil {
		return append(l.errs, err)
	}
	l.checkIdentity(raw, d)
	vars := l.checkVariables(d.Templating.List)
	l.known = knownVariables(vars)
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			l.checkRefs(fmt.Sprintf("variable %q", v.Name), v.QueryString())
		}
	}
	l.checkPanels(allPanels(d.Panels))
	return l.errs
}

// linter collects the violations of one dashboard.
type linter struct {
	errs []error
	// known are the variables a query may refer to: the dashboard's own and Grafana's built-in ones.
	known map[string]bool
}

func (l *linter) add(format string, a ...any) { l.errs = append(l.errs, fmt.Errorf(format, a...)) }

// isOurDatasource reports whether ds is the Prometheus datasource of the "datasource" variable.
func isOurDatasource(ds *Datasource) bool {
	return ds != nil && ds.UID == DatasourceUID && ds.Type == "prometheus"
}

// checkNoInputs rejects the placeholders of Grafana's "export for sharing externally", which break
// file provisioning.
func (l *linter) checkNoInputs(raw map[string]json.RawMessage, data []byte) {
	if _, ok := raw["__inputs"]; ok {
		l.add("has __inputs: export for sharing externally is off; use the datasource variable instead")
	}
	if strings.Contains(string(data), "${DS_") {
		l.add("refers to a ${DS_...} input placeholder; use ${datasource}")
	}
}

// checkIdentity checks the null id, the stable uid and the title.
func (l *linter) checkIdentity(raw map[string]json.RawMessage, d *Dashboard) {
	if id, ok := raw["id"]; !ok || strings.TrimSpace(string(id)) != "null" {
		l.add(`"id" must be present and null, so that importing never overwrites another dashboard`)
	}
	if !uidRe.MatchString(d.UID) {
		l.add("uid %q: want a stable, non-empty uid of lower-case letters, digits and dashes (at most 40)", d.UID)
	}
	if strings.TrimSpace(d.Title) == "" {
		l.add("no title")
	}
}

// checkVariables checks each template variable and that the required ones are there, and returns
// the variables by name.
func (l *linter) checkVariables(list []Variable) map[string]Variable {
	vars := map[string]Variable{}
	for _, v := range list {
		if _, dup := vars[v.Name]; dup {
			l.add("variable %q defined twice", v.Name)
		}
		vars[v.Name] = v
		switch v.Type {
		case "custom":
			l.checkCustomVariable(v)
		case "query":
			l.checkQueryVariable(v)
		}
	}
	if ds, ok := vars["datasource"]; !ok || ds.Type != "datasource" || ds.QueryString() != "prometheus" {
		l.add(`no "datasource" variable of type datasource with query prometheus`)
	}
	for _, name := range RequiredVariables {
		if v, ok := vars[name]; !ok || v.Type != "query" {
			l.add("no %q query variable", name)
		}
	}
	return vars
}

func (l *linter) checkCustomVariable(v Variable) {
	if strings.TrimSpace(v.QueryString()) == "" || len(v.Options) == 0 {
		l.add("variable %q: a custom variable needs its values (query and options)", v.Name)
	}
	if cur := v.CurrentValue(); cur == "" || !slices.ContainsFunc(v.Options, func(o Option) bool { return o.Value == cur }) {
		l.add("variable %q: the current (default) value %q is not one of its options", v.Name, cur)
	}
}

func (l *linter) checkQueryVariable(v Variable) {
	if !isOurDatasource(v.Datasource) {
		l.add("variable %q: datasource must be {\"type\":\"prometheus\",\"uid\":%q}", v.Name, DatasourceUID)
	}
	if v.QueryString() == "" {
		l.add("variable %q: empty query", v.Name)
	}
}

// knownVariables are the names a query may refer to: the dashboard's variables and Grafana's.
func knownVariables(vars map[string]Variable) map[string]bool {
	known := map[string]bool{}
	for name := range vars {
		known[name] = true
	}
	for _, name := range BuiltinVariables {
		known[name] = true
	}
	return known
}

// checkRefs reports every variable s refers to that is not known.
func (l *linter) checkRefs(where, s string) {
	for _, m := range varRefRe.FindAllStringSubmatch(s, -1) {
		if name := varRefName(m); !l.known[name] {
			l.add("%s: uses undefined variable $%s", where, name)
		}
	}
}

// checkPanels checks the panels (rows flattened): unique ids, and each panel that is not a row.
func (l *linter) checkPanels(panels []Panel) {
	ids := map[int]bool{}
	if len(panels) == 0 {
		l.add("no panels")
	}
	for _, p := range panels {
		where := fmt.Sprintf("panel %q", p.Title)
		if ids[p.ID] {
			l.add("%s: duplicate panel id %d", where, p.ID)
		}
		ids[p.ID] = true
		if p.Type != "row" {
			l.checkPanel(where, p)
		}
	}
}

// checkPanel checks a panel's title, description, unit, datasource and queries.
func (l *linter) checkPanel(where string, p Panel) {
	if strings.TrimSpace(p.Title) == "" {
		l.add("panel %d has no title", p.ID)
	}
	if strings.TrimSpace(p.Description) == "" {
		l.add("%s: no description", where)
	}
	if p.FieldConfig.Defaults.Unit == "" {
		l.add("%s: no unit (fieldConfig.defaults.unit)", where)
	}
	if !isOurDatasource(p.Datasource) {
		l.add("%s: datasource must be {\"type\":\"prometheus\",\"uid\":%q}", where, DatasourceUID)
	}
	if len(p.Targets) == 0 {
		l.add("%s: no queries", where)
	}
	refIDs := map[string]bool{}
	for _, t := range p.Targets {
		tw := fmt.Sprintf("%s, query %s", where, t.RefID)
		if t.RefID == "" || refIDs[t.RefID] {
			l.add("%s: missing or duplicate refId", tw)
		}
		refIDs[t.RefID] = true
		l.checkTarget(tw, t)
	}
}

// checkTarget checks a query's datasource, expression, variables and ranges.
func (l *linter) checkTarget(where string, t Target) {
	if !isOurDatasource(t.Datasource) {
		l.add("%s: datasource must be {\"type\":\"prometheus\",\"uid\":%q}", where, DatasourceUID)
	}
	if strings.TrimSpace(t.Expr) == "" {
		l.add("%s: empty expression", where)
	}
	l.checkRefs(where, t.Expr)
	l.checkRanges(where, t.Expr)
}

// checkRanges allows Grafana's ranges only, and in a daily query (one that uses $day_offset) the
// calendar-day ranges too.
func (l *linter) checkRanges(where, expr string) {
	daily := slices.ContainsFunc(varRefRe.FindAllStringSubmatch(expr, -1), func(m []string) bool {
		return varRefName(m) == DayOffsetVariable
	})
	for _, m := range rangeRe.FindAllStringSubmatch(expr, -1) {
		r := strings.TrimSpace(m[1])
		if daily && dailyRanges[r] {
			continue
		}
		if !allowedRanges[r] {
			l.add("%s: range [%s]: use [$__rate_interval] (or [$__range] for totals over the time range)", where, m[1])
		}
	}
}

// TemplateQueries returns the PromQL expression of every query variable of every dashboard in dir:
// for label_values(expr, label) the inner expr. Variables without one (label_values(label)) are left
// out.
func TemplateQueries(dir string) ([]Query, error) {
	ds, err := Load(dir)
	if err != nil {
		return nil, err
	}
	var out []Query
	for _, file := range slices.Sorted(maps.Keys(ds)) {
		d := ds[file]
		for _, v := range d.Templating.List {
			if v.Type != "query" {
				continue
			}
			expr, _, ok := LabelValues(v.QueryString())
			if !ok {
				expr = v.QueryString()
			}
			if expr == "" {
				continue
			}
			out = append(out, Query{File: file, Dashboard: d.Title, UID: d.UID, Panel: "variable " + v.Name, Expr: expr})
		}
	}
	return out, nil
}

// DefaultVars are values that make every dashboard expression valid PromQL: Grafana's interval and
// range variables as durations, every label variable as ".*" (they are used in regex matchers, or in
// equality matchers where any string parses), and the custom variables as their defaults. The
// end-to-end test replaces the dashboard variables by real label values.
func DefaultVars() map[string]string {
	return map[string]string{
		"__rate_interval": "1m",
		"__interval":      "1m",
		"__range":         "1d",
		"__range_s":       "86400",
		"__range_ms":      "86400000",
		"__interval_ms":   "60000",
		"job":             ".*",
		"instance":        ".*",
		"project":         ".*",
		"window":          ".*",
		"path":            ".*",
		"source":          ".*",
		"kind":            ".*",
		DayOffsetVariable: "-25h",
		"min_votes":       "1",
	}
}
