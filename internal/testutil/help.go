package testutil

import (
	"regexp"
	"strconv"
	"testing"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

// MaxHelpLength bounds a HELP text: one short line, as node_exporter's.
// The detail goes into the README's metric tables.
const MaxHelpLength = 120

// sentenceBreak is a full stop, question or exclamation mark followed by
// more text: a second sentence.
var sentenceBreak = regexp.MustCompile(`[.!?]\s+\S`)

// HelpProblem says what is wrong with a HELP text ("" when nothing is):
// longer than MaxHelpLength characters, or more than one sentence.
func HelpProblem(help string) string {
	switch {
	case help == "":
		return "empty HELP"
	case utf8.RuneCountInString(help) > MaxHelpLength:
		return "HELP of " + strconv.Itoa(utf8.RuneCountInString(help)) + " characters, want at most " + strconv.Itoa(MaxHelpLength)
	case sentenceBreak.MatchString(help):
		return "HELP of more than one sentence"
	}
	return ""
}

// descPattern reads a Desc's name and help from its String form, the only
// place client_golang shows them.
var descPattern = regexp.MustCompile(`^Desc\{fqName: ("(?:[^"\\]|\\.)*"), help: ("(?:[^"\\]|\\.)*")`)

// CheckHelp fails t for every HELP of cs (all they describe, whether or
// not they have series yet) that HelpProblem finds fault with.
func CheckHelp(t testing.TB, cs ...prometheus.Collector) {
	t.Helper()
	ch := make(chan *prometheus.Desc)
	go func() {
		defer close(ch)
		for _, c := range cs {
			c.Describe(ch)
		}
	}()
	n := 0
	for d := range ch {
		m := descPattern.FindStringSubmatch(d.String())
		if m == nil {
			t.Errorf("cannot read name and help from %s", d)
			continue
		}
		name, _ := strconv.Unquote(m[1])
		help, _ := strconv.Unquote(m[2])
		if p := HelpProblem(help); p != "" {
			t.Errorf("%s: %s: %q", name, p, help)
		}
		n++
	}
	if n == 0 {
		t.Error("no metric described: nothing was checked")
	}
}

// Registered is a prometheus.Registerer that keeps what is registered on
// it, for CheckHelp on code that registers its own metrics.
type Registered struct{ Collectors []prometheus.Collector }

// Register keeps c.
func (r *Registered) Register(c prometheus.Collector) error {
	r.Collectors = append(r.Collectors, c)
	return nil
}

// MustRegister keeps cs.
func (r *Registered) MustRegister(cs ...prometheus.Collector) {
	r.Collectors = append(r.Collectors, cs...)
}

// Unregister forgets nothing: the collectors stay checked.
func (r *Registered) Unregister(prometheus.Collector) bool { return true }
