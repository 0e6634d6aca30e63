// Package dashboards holds the Grafana dashboards shipped with mintlify_exporter (*.json in this
// directory, importable as they are) and what the tests read of them: Queries and Expand give the
// tests (this package's and the end-to-end test) every PromQL expression with its variables filled
// in. This package's tests check the conventions (lint_test.go: stable uid, null id, a datasource
// variable that every query uses, job/instance/project variables, a unit and a description on
// every panel).
package dashboards

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
)

// Dir returns the directory of this package's source, where the dashboards live. It is meant for
// tests run from a checkout.
func Dir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "dashboards"
	}
	return filepath.Dir(file)
}

// Files returns the dashboard files (*.json) in dir, sorted (as Glob sorts them).
func Files(dir string) ([]string, error) { return filepath.Glob(filepath.Join(dir, "*.json")) }

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

// A reference to a template variable: $name, ${name}, ${name:format} or [[name]].
var varRefRe = regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\$(\w+)|\[\[(\w+)\]\]`)

// varRefName is the variable a match of varRefRe refers to, whichever of its forms it uses.
func varRefName(m []string) string { return m[1] + m[2] + m[3] }

// DayOffsetVariable is the custom variable of the daily panels: the offset that makes a 1d step at
// UTC midnight read one local day (see visitors.json).
const DayOffsetVariable = "day_offset"

// Load reads every dashboard in dir, by file name.
func Load(dir string) (map[string]*Dashboard, error) {
	files, err := Files(dir)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no dashboards (*.json) in %s", dir)
	}
	out := map[string]*Dashboard{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if out[filepath.Base(f)], err = Parse(data); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Base(f), err)
		}
	}
	return out, nil
}

// Queries returns every panel query of every dashboard in dir, in file and panel order.
func Queries(dir string) ([]Query, error) {
	ds, err := Load(dir)
	if err != nil {
		return nil, err
	}
	var out []Query
	for _, file := range slices.Sorted(maps.Keys(ds)) {
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
