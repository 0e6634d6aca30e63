package sources

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
)

// Def describes a source before it is made: everything the plan, the
// configuration, the backfill and Describe need to know of it. Each source
// file declares its Def and registers it (register); nothing outside that
// file names the source.
type Def struct {
	Name string
	// Order places the source in the registry: the order of the
	// configuration's sources, the exposition and the status page.
	Order int
	// Endpoints are the apiclient endpoints the source reads, the one
	// its walk pages first.
	Endpoints []string
	// Paging is how the first endpoint pages.
	Paging Paging
	// DefaultOn: enabled when the configuration does not say.
	DefaultOn bool
	// TotalsOnly: a TotalsOnly query costs one request (see Source).
	TotalsOnly bool
	// Weight stretches the plan's interval of the source's walks against
	// page traffic's (1): sources that move slowly are walked less often,
	// so that the budget goes where the data changes.
	Weight float64
	// BackfillWindows: the backfill walks every window of each past day
	// (the source's counts do not add up across days, so no window can be
	// derived from days). Other sources are backfilled when their counts
	// add up (Source.Additive), one walk per past day.
	BackfillWindows bool
	// Settings are the source's own keys in a project's sources: entry
	// (and their flags), beside windows.
	Settings []Setting
	// Families are the source's data families.
	Families []*Family

	make func(def *Def, cfg Config) (Source, error)
}

// Paging is how an endpoint pages (the API has four ways).
type Paging int

// The ways of paging.
const (
	// PagingOffset: offset and limit, until a short page.
	PagingOffset Paging = iota + 1
	// PagingCursor: an opaque cursor and hasMore.
	PagingCursor
	// PagingCursorToNull: a cursor without hasMore; a null cursor ends.
	PagingCursorToNull
	// PagingOnePage: one page, no second.
	PagingOnePage
)

// Cursor reports whether the endpoint pages by cursor.
func (p Paging) Cursor() bool { return p == PagingCursor || p == PagingCursorToNull }

// Setting returns the source's setting of that key.
func (d *Def) Setting(key string) (Setting, bool) {
	i := slices.IndexFunc(d.Settings, func(s Setting) bool { return s.Key == key })
	if i < 0 {
		return Setting{}, false
	}
	return d.Settings[i], true
}

// BackfillSettings are the settings of settings the backfill reads the
// source with (Setting.Backfill).
func (d *Def) BackfillSettings(settings map[string]int) map[string]int {
	out := map[string]int{}
	for _, s := range d.Settings {
		if v, ok := settings[s.Key]; ok && s.Backfill {
			out[s.Key] = v
		}
	}
	return out
}

// PlanWeight is Weight, 1 when not set.
func (d *Def) PlanWeight() float64 { return cmp.Or(d.Weight, 1) }

// New makes the source from cfg, after checking that its settings in cfg
// are within their ranges (other sources' settings are not its business).
func (d *Def) New(cfg Config) (Source, error) {
	for _, s := range d.Settings {
		if err := s.Check(cfg.Settings[s.Key]); err != nil {
			return nil, fmt.Errorf("%s: %s %w", d.Name, s.Key, err)
		}
	}
	return d.make(d, cfg)
}

// All lists every source, in a stable order.
//
// Defaults, by cost per refresh and value (README, Analytics sources), are
// each source's DefaultOn: the sources cheap per refresh whatever the size
// of the site, that answer what a docs team asks first, are on; those
// whose every refresh grows with the volume of the data (or that need a
// state directory to stay cheap) are off.
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

// Names lists every source name, in registry order (the order register
// declares them to analytics in).
func Names() []string { return analytics.SourceNames(false) }

// registry is every source, by Order.
var registry []*Def

// register adds a source's Def to the registry, in its Order, and declares
// its name and settings to the configuration; a name or order given twice
// is a programming error.
func register(d *Def) *Def {
	// It panics on a name or order given twice.
	analytics.RegisterSource(analytics.SourceInfo{Name: d.Name, Order: d.Order, DefaultOn: d.DefaultOn, Settings: d.Settings})
	i, _ := slices.BinarySearchFunc(registry, d, func(a, b *Def) int { return cmp.Compare(a.Order, b.Order) })
	registry = slices.Insert(registry, i, d)
	return d
}

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
