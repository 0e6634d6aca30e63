package alerts

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v2"

	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// promtool returns the path of promtool, skipping the test when it is missing outside CI and failing
// it under CI=true.
func promtool(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PROMTOOL"); p != "" {
		return p
	}
	p, err := exec.LookPath("promtool")
	if err != nil {
		msg := "promtool not found: install Debian's prometheus package " +
			"(apt-get install --no-install-recommends prometheus) or set PROMTOOL"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = Dir()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := testutil.Run(cmd); err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, out.String())
	}
}

func TestPromtoolCheckRules(t *testing.T) {
	run(t, promtool(t), "check", "rules", RulesFile)
}

func TestPromtoolTestRules(t *testing.T) {
	p := promtool(t)
	files, err := filepath.Glob(filepath.Join(Dir(), "tests", "*.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no unit tests in alerts/tests: %v", err)
	}
	rules := load(t)
	// One promtool per file, in parallel: the files are independent and the slowest ones (a week of
	// evaluations) would otherwise run one after another on one core.
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			dir := rulesFor(t, rules, f)
			run(t, p, "test", "rules", filepath.Join(dir, filepath.Base(f)))
		})
	}
}

// ruleRef is a name a test file or a rule's expression may use for a rule: an alert (also as
// ALERTS{alertname=...}) or a recorded series.
var ruleRef = regexp.MustCompile(`Mintlify[A-Za-z0-9]+|mintlify:[a-z0-9_]+:[a-z0-9_]+`)

// rulesFor writes, in a new directory, the unit test file testFile with its rule file replaced by
// the rules it names and the rules their expressions use (and so on), in file order, and returns the
// directory. promtool evaluates every rule of its rule files at every step of a test's range: with all
// 41 rules over the week that the visitor tests need, alerts/ took 43 s of CPU, 14 s this way. The
// results are the same: a rule's value depends only on the input series and the rules it uses.
// TestPromtoolCheckRules, TestEveryRuleIsUnitTested and the end-to-end test load the whole file.
func rulesFor(t *testing.T, rules *File, testFile string) string {
	t.Helper()
	text, err := os.ReadFile(testFile)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, name := range ruleRef.FindAllString(string(text), -1) {
		want[name] = true
	}
	name := func(r Rule) string { return r.Alert + r.Record }
	for grew := true; grew; {
		grew = false
		for _, g := range rules.Groups {
			for _, r := range g.Rules {
				if !want[name(r)] {
					continue
				}
				for _, used := range ruleRef.FindAllString(r.Expr, -1) {
					grew = grew || !want[used]
					want[used] = true
				}
			}
		}
	}
	var keep []Group
	for _, g := range rules.Groups {
		kept := slices.DeleteFunc(slices.Clone(g.Rules), func(r Rule) bool { return !want[name(r)] })
		if len(kept) > 0 {
			g.Rules = kept
			keep = append(keep, g)
		}
	}
	if len(keep) == 0 {
		t.Fatalf("%s names no rule of %s", testFile, RulesFile)
	}
	out, err := yaml.Marshal(File{Groups: keep})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, RulesFile), out, 0o600); err != nil {
		t.Fatal(err)
	}
	// rule_files names ../mintlify.rules.yml (TestEveryRuleIsUnitTested): the test file goes to a
	// directory below the one of the rules.
	sub := filepath.Join(dir, "tests")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, filepath.Base(testFile)), text, 0o600); err != nil {
		t.Fatal(err)
	}
	return sub
}

func load(t *testing.T) *File {
	t.Helper()
	f, err := Load(RulesPath())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

var (
	alertName  = regexp.MustCompile(`^Mintlify[A-Z][A-Za-z0-9]+$`)
	recordName = regexp.MustCompile(`^mintlify:[a-z0-9_]+:[a-z0-9_]+$`)
)

// TestRuleConventions checks what promtool does not: names, severities, annotations and runbook links.
func TestRuleConventions(t *testing.T) {
	f := load(t)
	runbook, err := os.ReadFile(filepath.Join(Dir(), "RUNBOOK.md"))
	if err != nil {
		t.Fatal(err)
	}
	headings := map[string]bool{}
	for _, line := range strings.Split(string(runbook), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			headings[githubAnchor(h)] = true
		}
	}
	if len(f.Alerts()) == 0 {
		t.Fatal("no alerting rules")
	}
	seen := map[string]bool{}
	for _, r := range f.Alerts() {
		if seen[r.Alert] {
			t.Errorf("%s: defined twice", r.Alert)
		}
		seen[r.Alert] = true
		if !alertName.MatchString(r.Alert) {
			t.Errorf("%s: alert names are CamelCase and start with Mintlify", r.Alert)
		}
		if r.For == "" {
			t.Errorf("%s: no for: (write for: 0m to fire at once, and say why)", r.Alert)
		}
		switch r.Labels["severity"] {
		case "critical", "warning", "info":
		default:
			t.Errorf("%s: severity %q, want critical, warning or info", r.Alert, r.Labels["severity"])
		}
		summary, desc, url := r.Annotations["summary"], r.Annotations["description"], r.Annotations["runbook_url"]
		if summary == "" || strings.Contains(summary, "{{") || !strings.HasSuffix(summary, ".") {
			t.Errorf("%s: summary %q: want one static sentence", r.Alert, summary)
		}
		if !strings.Contains(desc, "{{") {
			t.Errorf("%s: description %q: want a template naming the instance and what is affected", r.Alert, desc)
		}
		if want := RunbookURL + strings.ToLower(r.Alert); url != want {
			t.Errorf("%s: runbook_url %q, want %q", r.Alert, url, want)
		}
		if !headings[strings.ToLower(r.Alert)] {
			t.Errorf("%s: RUNBOOK.md has no section \"## %s\"", r.Alert, r.Alert)
		}
		for k := range r.Annotations {
			if k != "summary" && k != "description" && k != "runbook_url" {
				t.Errorf("%s: unexpected annotation %q", r.Alert, k)
			}
		}
	}
	for _, name := range f.RecordingRules() {
		if !recordName.MatchString(name) {
			t.Errorf("recording rule %s: want mintlify:<what>:<operation>", name)
		}
	}
}

// githubAnchor is the anchor GitHub gives a Markdown heading (enough of it for our headings).
func githubAnchor(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	var b strings.Builder
	for _, r := range h {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// TestThresholdsTable checks that every threshold documented in the rule file's header is the one its
// rule uses, and that every alert with a for: other than 0m documents it. The table and the rules are
// both generated from the mixin (../mixin), whose own test checks that each threshold is wired to the
// alert its row names; this one checks the generated file as users read it.
func TestThresholdsTable(t *testing.T) {
	f := load(t)
	rows, err := Thresholds(RulesPath())
	if err != nil {
		t.Fatal(err)
	}
	documentedFor := map[string]bool{}
	for _, row := range rows {
		r, ok := f.Alert(row.Alert)
		if !ok {
			t.Errorf("threshold table names %s, which is not an alert", row.Alert)
			continue
		}
		switch row.Field {
		case "for":
			documentedFor[row.Alert] = true
			if r.For != row.Value {
				t.Errorf("%s: threshold table says for: %s, the rule has for: %s", row.Alert, row.Value, r.For)
			}
		case "expr":
			// The value must appear in the expression as a token of its own, on a line marked
			// "# threshold".
			re := regexp.MustCompile(`(^|[^\w.])` + regexp.QuoteMeta(row.Value) + `([^\w.]|$)`)
			found := false
			for _, line := range strings.Split(r.Expr, "\n") {
				if strings.Contains(line, "# threshold") && re.MatchString(strings.Split(line, "#")[0]) {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: threshold %s (%s) is not on a line marked \"# threshold\" of its expression:\n%s",
					row.Alert, row.Value, row.Meaning, r.Expr)
			}
		}
	}
	for _, r := range f.Alerts() {
		if r.For != "" && r.For != "0m" && r.For != "0s" && !documentedFor[r.Alert] {
			t.Errorf("%s: for: %s is not in the THRESHOLDS table", r.Alert, r.For)
		}
	}
}

// unitTestFile is the part of a promtool unit test file this test looks at.
type unitTestFile struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		AlertRuleTest []struct {
			EvalTime  string        `yaml:"eval_time"`
			AlertName string        `yaml:"alertname"`
			ExpAlerts []interface{} `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
		PromqlExprTest []struct {
			Expr string `yaml:"expr"`
		} `yaml:"promql_expr_test"`
	} `yaml:"tests"`
}

// TestEveryRuleIsUnitTested checks that alerts/tests has, for every alert, a case where it fires and a
// case where it does not, and a promql_expr_test for every recording rule.
func TestEveryRuleIsUnitTested(t *testing.T) {
	f := load(t)
	files, err := filepath.Glob(filepath.Join(Dir(), "tests", "*.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no unit tests in alerts/tests: %v", err)
	}
	firing, quiet, exprs := map[string]int{}, map[string]int{}, []string{}
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var u unitTestFile
		if err := yaml.Unmarshal(data, &u); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if !slices.Contains(u.RuleFiles, "../"+RulesFile) {
			t.Errorf("%s: rule_files does not load ../%s", path, RulesFile)
		}
		for _, tg := range u.Tests {
			for _, a := range tg.AlertRuleTest {
				if len(a.ExpAlerts) > 0 {
					firing[a.AlertName]++
				} else {
					quiet[a.AlertName]++
				}
			}
			for _, e := range tg.PromqlExprTest {
				exprs = append(exprs, e.Expr)
			}
		}
	}
	names := map[string]bool{}
	for _, r := range f.Alerts() {
		names[r.Alert] = true
		if firing[r.Alert] == 0 {
			t.Errorf("%s: no unit test where it fires", r.Alert)
		}
		if quiet[r.Alert] == 0 {
			t.Errorf("%s: no unit test where it does not fire", r.Alert)
		}
	}
	for name := range firing {
		if !names[name] {
			t.Errorf("unit tests expect alert %s, which the rules do not define", name)
		}
	}
	for _, rec := range f.RecordingRules() {
		if !slices.ContainsFunc(exprs, func(e string) bool { return strings.Contains(e, rec) }) {
			t.Errorf("recording rule %s: no promql_expr_test", rec)
		}
	}
}

func TestThresholdsParser(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.yml")
	content := "# header\n#   MintlifyX | expr | 0.5 | a ratio\n#   MintlifyX | for | 5m | long\ngroups: []\n# MintlifyY | for | 1m | not in the header\n"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Thresholds(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []Threshold{{"MintlifyX", "expr", "0.5", "a ratio"}, {"MintlifyX", "for", "5m", "long"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
