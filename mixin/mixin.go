// Package mixin evaluates the monitoring mixin in this directory (mixin.libsonnet, jsonnet) with
// go-jsonnet and renders what it defines as the files shipped in the repository: the Prometheus rule
// file alerts/mintlify.rules.yml and the Grafana dashboards dashboards/*.json. The program in gen/
// (make mixin) writes them; mixin_test.go fails when the committed files differ from the mixin.
//
// The exporter does not import this package: go-jsonnet stays out of its binary.
package mixin

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/google/go-jsonnet"
	"go.yaml.in/yaml/v2"
)

// RulesPath and DashboardsDir are where the generated files go, relative to the output directory
// (the repository root for the shipped files).
const (
	RulesPath     = "alerts/mintlify.rules.yml"
	DashboardsDir = "dashboards"
)

// Dir returns the directory of this package's source, where mixin.libsonnet lives.
func Dir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "mixin"
	}
	return filepath.Dir(file)
}

// Entry is the mixin's entry point in Dir().
func Entry() string { return filepath.Join(Dir(), "mixin.libsonnet") }

// RuleFile is a Prometheus rule file as the mixin defines it.
type RuleFile struct {
	Groups []RuleGroup `json:"groups" yaml:"groups"`
}

// RuleGroup is a rule group.
type RuleGroup struct {
	Name     string `json:"name" yaml:"name"`
	Interval string `json:"interval,omitempty" yaml:"interval,omitempty"`
	Rules    []Rule `json:"rules" yaml:"rules"`
}

// Rule is a recording rule (Record set) or an alerting rule (Alert set). Comment, the rule's hidden
// `comment::` field in the mixin, is written as a YAML comment above it.
type Rule struct {
	Record        string            `json:"record,omitempty" yaml:"record,omitempty"`
	Alert         string            `json:"alert,omitempty" yaml:"alert,omitempty"`
	Expr          string            `json:"expr" yaml:"expr"`
	For           string            `json:"for,omitempty" yaml:"for,omitempty"`
	KeepFiringFor string            `json:"keep_firing_for,omitempty" yaml:"keep_firing_for,omitempty"`
	Labels        map[string]string `json:"labels,omitempty" yaml:"labels,omitempty"`
	Annotations   map[string]string `json:"annotations,omitempty" yaml:"annotations,omitempty"`
	Comment       string            `json:"comment,omitempty" yaml:"-"`
}

// Output is what the mixin defines.
type Output struct {
	Header     string                     `json:"header"`
	Rules      RuleFile                   `json:"rules"`
	Dashboards map[string]json.RawMessage `json:"dashboards"`
}

// Options of an evaluation.
type Options struct {
	// Entry is the jsonnet file to evaluate: Entry() for the shipped files, or a file of your own
	// that imports mixin.libsonnet and overrides _config.
	Entry string
	// JPath are more import directories; Dir() and the entry's directory are always searched.
	JPath []string
	// NoDashboards skips the dashboards (faster when only the rules matter).
	NoDashboards bool
	// ExtCode is jsonnet code added to the mixin (e.g. `{_config+:: {...}}`), for tests.
	ExtCode string
}

const snippet = `
local m = (import %s) + (%s);
{
  header: if std.objectHasAll(m, 'rulesFileHeader') then m.rulesFileHeader else '',
  rules: m.prometheusAlerts {
    groups: [
      g { rules: [
        r { comment::: if std.objectHasAll(r, 'comment') then r.comment else '' }
        for r in g.rules
      ] }
      for g in m.prometheusAlerts.groups
    ],
  },
  dashboards: if %t then {} else m.grafanaDashboards,
}
`

// Evaluate evaluates the mixin.
func Evaluate(o Options) (*Output, error) {
	entry := o.Entry
	if entry == "" {
		entry = Entry()
	}
	abs, err := filepath.Abs(entry)
	if err != nil {
		return nil, err
	}
	ext := o.ExtCode
	if ext == "" {
		ext = "{}"
	}
	vm := jsonnet.MakeVM()
	vm.Importer(&jsonnet.FileImporter{JPaths: append([]string{filepath.Dir(abs), Dir()}, o.JPath...)})
	src := fmt.Sprintf(snippet, strconv.Quote(abs), ext, o.NoDashboards)
	js, err := vm.EvaluateAnonymousSnippet("mixin-gen.jsonnet", src)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(strings.NewReader(js))
	dec.DisallowUnknownFields()
	var out Output
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("%s: %w", entry, err)
	}
	return &out, nil
}

// Generate evaluates the mixin and renders its files, keyed by path relative to the output
// directory (RulesPath, DashboardsDir/<name>).
func Generate(o Options) (map[string][]byte, error) {
	out, err := Evaluate(o)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	rules, err := RenderRules(out.Header, out.Rules)
	if err != nil {
		return nil, err
	}
	files[RulesPath] = rules
	for name, raw := range out.Dashboards {
		if !dashboardName.MatchString(name) {
			return nil, fmt.Errorf("dashboard %q: want a file name like visitors.json", name)
		}
		data, err := RenderJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("dashboard %s: %w", name, err)
		}
		files[DashboardsDir+"/"+name] = data
	}
	return files, nil
}

var dashboardName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*\.json$`)

// RenderJSON formats a JSON document stably: keys sorted, two-space indentation, integers as
// written and fractions in their shortest form (jsonnet writes a threshold of 0.3 as
// 0.29999999999999999), no HTML escaping, and a final newline.
func RenderJSON(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	v = shortestNumbers(v)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// shortestNumbers rewrites every non-integer number in v in the shortest form that reads back as
// the same float64.
func shortestNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = shortestNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = shortestNumbers(e)
		}
	case json.Number:
		if !strings.ContainsAny(string(x), ".eE") {
			return x
		}
		if f, err := x.Float64(); err == nil {
			return json.Number(strconv.FormatFloat(f, 'g', -1, 64))
		}
	}
	return v
}

// width is the column at which descriptions are folded.
const width = 100

// RenderRules writes a rule file: the header as a comment, then the groups, each rule preceded by
// its comment, with expressions as literal blocks and long annotations folded. It fails when the
// YAML it wrote does not read back as rf.
func RenderRules(header string, rf RuleFile) ([]byte, error) {
	var b strings.Builder
	comment(&b, "", header)
	if header != "" {
		b.WriteString("\n")
	}
	b.WriteString("groups:\n")
	for _, g := range rf.Groups {
		fmt.Fprintf(&b, "  - name:%s\n", scalar(g.Name, 4, "name"))
		if g.Interval != "" {
			fmt.Fprintf(&b, "    interval:%s\n", scalar(g.Interval, 4, "interval"))
		}
		b.WriteString("    rules:\n")
		for i, r := range g.Rules {
			if i > 0 {
				b.WriteString("\n")
			}
			comment(&b, "      ", r.Comment)
			first := true
			field := func(key, value string) {
				if value == "" {
					return
				}
				prefix := "        "
				if first {
					prefix, first = "      - ", false
				}
				fmt.Fprintf(&b, "%s%s:%s\n", prefix, key, scalar(value, 8, key))
			}
			field("record", r.Record)
			field("alert", r.Alert)
			field("expr", r.Expr)
			field("for", r.For)
			field("keep_firing_for", r.KeepFiringFor)
			for _, m := range []struct {
				key    string
				values map[string]string
			}{{"labels", r.Labels}, {"annotations", r.Annotations}} {
				if len(m.values) == 0 {
					continue
				}
				fmt.Fprintf(&b, "        %s:\n", m.key)
				for _, k := range orderedKeys(m.values) {
					fmt.Fprintf(&b, "          %s:%s\n", key(k), scalar(m.values[k], 10, k))
				}
			}
		}
	}
	out := []byte(b.String())
	var back RuleFile
	if err := yaml.UnmarshalStrict(out, &back); err != nil {
		return nil, fmt.Errorf("rendered rules do not parse: %w", err)
	}
	want := rf
	want.Groups = append([]RuleGroup(nil), rf.Groups...)
	for i := range want.Groups {
		want.Groups[i].Rules = append([]Rule(nil), rf.Groups[i].Rules...)
		for j := range want.Groups[i].Rules {
			want.Groups[i].Rules[j].Comment = ""
		}
	}
	if !reflect.DeepEqual(normalize(back), normalize(want)) {
		return nil, fmt.Errorf("rendered rules do not read back as the mixin's rules")
	}
	return out, nil
}

// normalize makes empty maps nil, as YAML reads them.
func normalize(rf RuleFile) RuleFile {
	for _, g := range rf.Groups {
		for j := range g.Rules {
			if len(g.Rules[j].Labels) == 0 {
				g.Rules[j].Labels = nil
			}
			if len(g.Rules[j].Annotations) == 0 {
				g.Rules[j].Annotations = nil
			}
		}
	}
	return rf
}

// orderedKeys returns summary, description and runbook_url first, then the other keys sorted.
func orderedKeys(m map[string]string) []string {
	rank := func(k string) int {
		if r := slices.Index([]string{"summary", "description", "runbook_url"}, k); r >= 0 {
			return r
		}
		return 3
	}
	return slices.SortedFunc(maps.Keys(m), func(a, b string) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), strings.Compare(a, b))
	})
}

func comment(b *strings.Builder, indent, text string) {
	text = strings.TrimRight(text, "\n")
	if text == "" {
		return
	}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, " \t")
		if line == "" {
			b.WriteString(indent + "#\n")
		} else {
			b.WriteString(indent + "# " + line + "\n")
		}
	}
}

var simpleKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func key(k string) string {
	if simpleKey.MatchString(k) && isPlain(k) {
		return k
	}
	return strconv.Quote(k)
}

// isPlain reports whether s reads back as the string s when written as a plain YAML scalar.
func isPlain(s string) bool {
	if s == "" || strings.ContainsAny(s, "\n\t\r\"\\") || strings.TrimSpace(s) != s ||
		strings.Contains(s, ": ") || strings.Contains(s, " #") || strings.HasSuffix(s, ":") ||
		strings.ContainsAny(s[:1], "!&*-?:,[]{}#|>@`'%") {
		return false
	}
	var v map[string]any
	if err := yaml.Unmarshal([]byte("k: "+s+"\n"), &v); err != nil {
		return false
	}
	got, ok := v["k"].(string)
	return ok && got == s
}

// scalar renders a value after "key:", at the given indentation of the key: plain when it fits on
// the line, a literal block for multi-line text, folded for a long line, double-quoted otherwise.
func scalar(s string, indent int, key string) string {
	pad := strings.Repeat(" ", indent+2)
	if isPlain(s) && (indent+len(key)+2+len(s) <= width || !strings.Contains(s, " ")) {
		return " " + s
	}
	if literal(s) {
		body := strings.TrimSuffix(s, "\n")
		ind := "|"
		if !strings.HasSuffix(s, "\n") {
			ind = "|-"
		}
		return " " + ind + "\n" + pad + strings.ReplaceAll(body, "\n", "\n"+pad)
	}
	if lines, ok := fold(s, width-len(pad)); ok {
		return " >-\n" + pad + strings.Join(lines, "\n"+pad)
	}
	if isPlain(s) {
		return " " + s
	}
	return " " + strconv.Quote(s)
}

// literal reports whether s can be a literal block scalar (| or |-) that reads back as s.
func literal(s string) bool {
	if !strings.Contains(strings.TrimSuffix(s, "\n"), "\n") && !strings.HasSuffix(s, "\n") {
		return false
	}
	if strings.HasSuffix(s, "\n\n") || strings.ContainsAny(s, "\r\t") || strings.HasPrefix(s, " ") || strings.HasPrefix(s, "\n") {
		return false
	}
	for _, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		if line == "" || strings.TrimRight(line, " ") != line {
			return false
		}
	}
	return true
}

// fold splits a one-line string at single spaces into lines of at most n characters (longer words
// stay whole), so that a folded block scalar (>-) reads back as s.
func fold(s string, n int) ([]string, bool) {
	if s == "" || strings.ContainsAny(s, "\n\r\t") || strings.TrimSpace(s) != s || strings.Contains(s, "  ") {
		return nil, false
	}
	var lines []string
	line := ""
	for _, w := range strings.Split(s, " ") {
		switch {
		case line == "":
			line = w
		case len(line)+1+len(w) <= n:
			line += " " + w
		default:
			lines = append(lines, line)
			line = w
		}
	}
	return append(lines, line), true
}
