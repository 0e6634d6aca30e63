package sources

import (
	"cmp"
	"slices"
)

// Source names.
const (
	NameVisitors      = "visitors"
	NameViews         = "views"
	NameFeedback      = "feedback"
	NameFeedbackItems = "feedback_items"
	NameSearches      = "searches"
	NameAssistant     = "assistant"
)

// Def describes a source before it is made: what configuration and
// Describe need.
type Def struct {
	Name string
	// Endpoints are the apiclient endpoints the source reads.
	Endpoints []string
	// DefaultOn: enabled when the configuration does not say.
	DefaultOn bool
	// TotalsOnly: a TotalsOnly query costs one request (see Source).
	TotalsOnly bool
	// Families are the source's data families.
	Families []*Family

	make func(def *Def, cfg Config) (Source, error)
}

// New makes the source from cfg.
func (d *Def) New(cfg Config) (Source, error) { return d.make(d, cfg) }

// All lists every source, in a stable order.
//
// Defaults, by cost per refresh and value (README, Analytics sources):
// visitors and views are on (the issue fixes it; ceil(paths/250) requests
// per walk, 1 for totals). feedback and searches are on: one request per
// refresh whatever the size of the site (searches exports totalSearches
// only until top queries are configured), and they answer what a docs team
// asks first (which pages readers thumb down, how much readers search).
// feedback_items is off: it walks every item of the window on each refresh
// (ceil(items/100) requests, growing with the feedback volume, since status
// changes carry no timestamp), worth it only for teams that triage in
// Mintlify. assistant is off: it needs a state directory to stay cheap
// across restarts, and its first walk reads every conversation of the
// window (ceil(conversations/1000) requests) before each refresh costs
// 1 + ceil(new/1000) plus 1 for caller stats.
func All() []*Def {
	return slices.Clone(registry)
}

// ByName returns the source called name.
func ByName(name string) (*Def, bool) {
	i := slices.IndexFunc(registry, func(d *Def) bool { return d.Name == name })
	if i < 0 {
		return nil, false
	}
	return registry[i], true
}

// Names lists every source name, in registry order.
func Names() []string {
	out := make([]string, len(registry))
	for i, d := range registry {
		out[i] = d.Name
	}
	return out
}

// Defaults lists the names of the sources on by default.
func Defaults() []string {
	var out []string
	for _, d := range registry {
		if d.DefaultOn {
			out = append(out, d.Name)
		}
	}
	return out
}

var registry = []*Def{visitorsDef, viewsDef, feedbackDef, feedbackItemsDef, searchesDef, assistantDef}

// labelCount is one sample of a count by a label.
type labelCount struct {
	label string
	value float64
}

// byLabel turns counts by label into samples sorted by label, with every
// known label present (0 when absent) so that alerts see the series before
// its first event, and unknown labels passed through label (masked and
// made valid: Config.label).
func byLabel(counts map[string]int64, known []string, label func(string) string) []labelCount {
	out := make([]labelCount, 0, len(counts)+len(known))
	at := make(map[string]int, len(counts)+len(known))
	for _, k := range known {
		at[k] = len(out)
		out = append(out, labelCount{k, 0})
	}
	for k, v := range counts {
		// Two values the API told apart may meet once made valid label
		// values: their counts are merged into one series.
		k = label(k)
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, labelCount{label: k})
		}
		out[i].value += float64(v)
	}
	slices.SortFunc(out, func(a, b labelCount) int { return cmp.Compare(a.label, b.label) })
	return out
}
