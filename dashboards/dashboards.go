// Package dashboards holds the Grafana dashboards shipped with mintlify_exporter (*.json in this
// directory, importable as they are) and the code that checks them: Lint enforces the conventions
// (stable uid, null id, a datasource variable that every query uses, job/instance/project variables,
// a unit and a description on every panel), and Queries/TemplateQueries/Expand give tests (this
// package's and the end-to-end test) every PromQL expression with its variables filled in.
package dashboards

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
)

// DatasourceUID is the datasource uid every panel and query must use: the dashboard's own
// "datasource" variable, so that the dashboards import into any Grafana without editing.
const DatasourceUID = "${datasource}"

// RequiredVariables are the template variables every dashboard must define, besides "datasource".
var RequiredVariables = []string{"job", "instance", "project"}

// Dir returns the directory of this package's source, where the dashboards live. It is meant for
// tests run from a checkout.
func Dir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "dashboards"
	}
	return filepath.Dir(file)
}

// Files returns the dashboard files (*.json) in dir, sorted.
func Files(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	return files, nil
}

// Dashboard is the part of a Grafana dashboard model these checks look at.
type Dashboard struct {
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []Variable `json:"list"`
	} `json:"templating"`
	Panels []Panel `json:"panels"`
}

// Variable is a template variable.
type Variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Datasource *Datasource     `json:"datasource"`
	Multi      bool            `json:"multi"`
	IncludeAll bool            `json:"includeAll"`
	// Current is the selected value as saved: the default of a custom variable.
	Current struct {
		Text  json.RawMessage `json:"text"`
		Value json.RawMessage `json:"value"`
	} `json:"current"`
	Options []Option `json:"options"`
}

// Option is one value of a custom variable.
type Option struct {
	Text  string `json:"text"`
	Value string `json:"value"`
}

// CurrentValue returns the variable's saved current value when it is a single string ("" otherwise).
func (v Variable) CurrentValue() string {
	var s string
	if json.Unmarshal(v.Current.Value, &s) == nil {
		return s
	}
	return ""
}

// QueryString returns the variable's query, whether stored as a string (older Grafana) or as an
// object with a "query" field (Grafana 10 and later).
func (v Variable) QueryString() string {
	var s string
	if json.Unmarshal(v.Query, &s) == nil {
		return s
	}
	var o struct {
		Query string `json:"query"`
	}
	if json.Unmarshal(v.Query, &o) == nil {
		return o.Query
	}
	return ""
}

// Datasource is a panel's or a target's datasource reference.
type Datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// Panel is a dashboard panel (rows hold nested panels when collapsed).
type Panel struct {
	ID          int         `json:"id"`
	Type        string      `json:"type"`
	Title       string      `json:"title"`
	Description string      `json:"description"`
	Datasource  *Datasource `json:"datasource"`
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Targets []Target `json:"targets"`
	Panels  []Panel  `json:"panels"`
}

// Target is a panel query.
type Target struct {
	RefID      string      `json:"refId"`
	Expr       string      `json:"expr"`
	Instant    bool        `json:"instant"`
	Datasource *Datasource `json:"datasource"`
}

// Query is one PromQL expression of a dashboard, as written (variables not yet expanded).
type Query struct {
	File      string // base name of the dashboard file
	Dashboard string // dashboard title
	UID       string // dashboard uid
	Panel     string // panel title, or "variable <name>" for a template variable's query
	RefID     string // target refId; empty for template variables
	Expr      string
	Instant   bool
}

func (q Query) String() string {
	if q.RefID == "" {
		return fmt.Sprintf("%s: %s: %s", q.File, q.Panel, q.Expr)
	}
	return fmt.Sprintf("%s: panel %q, query %s: %s", q.File, q.Panel, q.RefID, q.Expr)
}

// Parse decodes a dashboard.
func Parse(data []byte) (*Dashboard, error) {
	var d Dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// allPanels flattens rows.
func allPanels(ps []Panel) []Panel {
	var out []Panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

var (
	uidRe = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)
	// A reference to a template variable: $name, ${name}, ${name:format} or [[name]].
	varRefRe = regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]`)
	// The range of a range vector selector, e.g. [$__rate_interval].
	rangeRe = regexp.MustCompile(`\[([^\]\[]+)\]`)
)

// BuiltinVariables are Grafana's global variables that may appear in queries.
var BuiltinVariables = []string{"__rate_interval", "__interval", "__range", "__range_s", "__range_ms", "__interval_ms"}

// allowedRanges are the ranges a panel query may use: Grafana's, so that rates follow the scrape
// interval and the zoom, and totals over the dashboard's time range.
var allowedRanges = map[string]bool{"$__rate_interval": true, "$__range": true, "$__interval": true}

// DayOffsetVariable is the custom variable of the daily panels: the offset that makes a 1d step at
// UTC midnight read one local day (see visitors.json).
const DayOffsetVariable = "day_offset"

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

// varRefName is the variable a match of varRefRe refers to, whichever of its forms it uses.
func varRefName(m []string) string { return m[1] + m[2] + m[3] }

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

// Load reads and lints every dashboard in dir.
func Load(dir string) (map[string]*Dashboard, error) {
	files, err := Files(dir)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no dashboards (*.json) in %s", dir)
	}
	out := map[string]*Dashboard{}
	var errs []error
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, e := range Lint(data) {
			errs = append(errs, fmt.Errorf("%s: %w", filepath.Base(f), e))
		}
		d, err := Parse(data)
		if err != nil {
			continue // reported by Lint
		}
		out[filepath.Base(f)] = d
	}
	return out, errors.Join(errs...)
}

func sortedNames(m map[string]*Dashboard) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Queries returns every panel query of every dashboard in dir, in file and panel order. It fails if a
// dashboard breaks the conventions (see Lint).
func Queries(dir string) ([]Query, error) {
	ds, err := Load(dir)
	if err != nil {
		return nil, err
	}
	var out []Query
	for _, file := range sortedNames(ds) {
		d := ds[file]
		for _, p := range allPanels(d.Panels) {
			for _, t := range p.Targets {
				out = append(out, Query{File: file, Dashboard: d.Title, UID: d.UID, Panel: p.Title,
					RefID: t.RefID, Expr: t.Expr, Instant: t.Instant})
			}
		}
	}
	return out, nil
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
	for _, file := range sortedNames(ds) {
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

var labelValuesRe = regexp.MustCompile(`^\s*label_values\s*\(\s*(.*?)\s*\)\s*$`)

// LabelValues splits a Grafana label_values(expr, label) or label_values(label) variable query. ok is
// false when q is not a label_values query.
func LabelValues(q string) (expr, label string, ok bool) {
	m := labelValuesRe.FindStringSubmatch(q)
	if m == nil {
		return "", "", false
	}
	inner := m[1]
	i := strings.LastIndex(inner, ",")
	if i < 0 {
		return "", strings.TrimSpace(inner), true
	}
	return strings.TrimSpace(inner[:i]), strings.TrimSpace(inner[i+1:]), true
}

// Expand substitutes Grafana variables in expr: $name, ${name}, ${name:format} and [[name]] are
// replaced by vars[name]; variables missing from vars are left as they are.
func Expand(expr string, vars map[string]string) string {
	return varRefRe.ReplaceAllStringFunc(expr, func(ref string) string {
		m := varRefRe.FindStringSubmatch(ref)
		if v, ok := vars[varRefName(m)]; ok {
			return v
		}
		return ref
	})
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
