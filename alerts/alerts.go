// Package alerts holds the Prometheus rules shipped with mintlify_exporter: mintlify.rules.yml
// (recording and alerting rules, generated from the monitoring mixin in ../mixin by make mixin), their
// promtool unit tests in tests/, and RUNBOOK.md. The Go code reads
// the rule file so that tests (this package's, the dashboards' and the end-to-end test) can check the
// rules against each other without a copy of their names.
package alerts

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"

	"go.yaml.in/yaml/v2"
)

// RulesFile is the name of the rule file in Dir().
const RulesFile = "mintlify.rules.yml"

// RunbookURL is the prefix of every alert's runbook_url; the anchor is the alert name in lower case.
const RunbookURL = "https://github.com/mintlify-exporter/mintlify_exporter/blob/main/alerts/RUNBOOK.md#"

// Dir returns the directory of this package's source, where the rule file, its tests and the runbook
// live. It is meant for tests run from a checkout.
func Dir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "alerts"
	}
	return filepath.Dir(file)
}

// RulesPath is the path of the rule file in a checkout.
func RulesPath() string { return filepath.Join(Dir(), RulesFile) }

// File is a Prometheus rule file.
type File struct {
	Groups []Group `yaml:"groups"`
}

// Group is a rule group.
type Group struct {
	Name     string `yaml:"name"`
	Interval string `yaml:"interval,omitempty"`
	Rules    []Rule `yaml:"rules"`
}

// Rule is a recording rule (Record set) or an alerting rule (Alert set).
type Rule struct {
	Record        string            `yaml:"record,omitempty"`
	Alert         string            `yaml:"alert,omitempty"`
	Expr          string            `yaml:"expr"`
	For           string            `yaml:"for,omitempty"`
	KeepFiringFor string            `yaml:"keep_firing_for,omitempty"`
	Labels        map[string]string `yaml:"labels,omitempty"`
	Annotations   map[string]string `yaml:"annotations,omitempty"`
}

// Load reads a rule file strictly: an unknown field is an error.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f File
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &f, nil
}

// RecordingRules returns the names recorded by the file's recording rules, in file order.
func (f *File) RecordingRules() []string {
	var names []string
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				names = append(names, r.Record)
			}
		}
	}
	return names
}

// Alerts returns the file's alerting rules, in file order.
func (f *File) Alerts() []Rule {
	var rules []Rule
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				rules = append(rules, r)
			}
		}
	}
	return rules
}

// Alert returns the alerting rule with the given name.
func (f *File) Alert(name string) (Rule, bool) {
	alerts := f.Alerts()
	i := slices.IndexFunc(alerts, func(r Rule) bool { return r.Alert == name })
	if i < 0 {
		return Rule{}, false
	}
	return alerts[i], true
}

// Threshold is one row of the THRESHOLDS table in the rule file's header comment (generated from the
// mixin's _config.thresholds and _config.thresholdDocs; the _config key is the first word of Meaning).
type Threshold struct {
	Alert   string // the alerting rule it belongs to
	Field   string // "expr" (the value appears in the expression) or "for"
	Value   string // as written in the rule, e.g. "0.5", "1800", "15m"
	Meaning string
}

var thresholdRow = regexp.MustCompile(`^#\s+(Mintlify\w+)\s*\|\s*(expr|for)\s*\|\s*(\S+)\s*\|\s*(.*)$`)

// Thresholds parses the THRESHOLDS table of the rule file's header comment.
func Thresholds(path string) ([]Threshold, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []Threshold
	for line := range strings.Lines(string(data)) {
		line = strings.TrimSuffix(line, "\n")
		if !strings.HasPrefix(line, "#") {
			break // the header ends at the first line that is not a comment
		}
		if m := thresholdRow.FindStringSubmatch(line); m != nil {
			out = append(out, Threshold{Alert: m[1], Field: m[2], Value: m[3], Meaning: strings.TrimSpace(m[4])})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no THRESHOLDS table in the header comment", path)
	}
	return out, nil
}
