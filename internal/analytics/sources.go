package analytics

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
)

// SourceInfo is what the configuration knows of an analytics source: its
// name, place and settings, as plain data. Each source's file in
// internal/sources declares it (RegisterSource), so that the configuration
// validates every source's keys without importing the sources, which run
// walks (the configuration is a leaf): a binary that links no source knows
// none.
type SourceInfo struct {
	Name string
	// Order places the source among the others: the order of a project's
	// sources (and of the exposition and the status page).
	Order int
	// DefaultOn: exported by a project that names no source.
	DefaultOn bool
	// Settings are the source's keys beside windows in a project's
	// sources: entry, and their flags.
	Settings []Setting
}

// Setting is an integer setting of one source. 0 (left out) is the
// source's default; any other value is within Min..Max.
type Setting struct {
	// Key is its key in the source's entry of a project's sources: map.
	Key string
	// Flag is its flag on the flag route, without "--" ("": none).
	Flag string
	// Help is the flag's help.
	Help string
	// Min and Max bound a value other than 0.
	Min, Max int
	// Backfill: the backfill reads the source with the setting (else with
	// its default, when the setting only shapes what the backfill does not
	// write).
	Backfill bool
}

// Check refuses a value outside the setting's range.
func (s Setting) Check(v int) error {
	if v != 0 && (v < s.Min || v > s.Max) {
		return fmt.Errorf("must be between %d and %d, got %d", s.Min, s.Max, v)
	}
	return nil
}

// CheckGiven refuses a value written in the file or on the command line:
// 0 is only given explicitly where the range holds it.
func (s Setting) CheckGiven(v int) error {
	if v == 0 && s.Min > 0 {
		return fmt.Errorf("must be between %d and %d, got %d", s.Min, s.Max, v)
	}
	return s.Check(v)
}

// Setting returns the source's setting of that key.
func (i SourceInfo) Setting(key string) (Setting, bool) {
	at := slices.IndexFunc(i.Settings, func(s Setting) bool { return s.Key == key })
	if at < 0 {
		return Setting{}, false
	}
	return i.Settings[at], true
}

// known are the registered sources, by Order.
var known []SourceInfo

// Sources lists the registered sources, in their order.
func Sources() []SourceInfo { return slices.Clone(known) }

// RegisterSource declares a source; a name or order given twice is a
// programming error. Sources register while their package initialises.
func RegisterSource(info SourceInfo) {
	for _, o := range known {
		if o.Name == info.Name || o.Order == info.Order {
			panic(fmt.Sprintf("analytics: source %s registered beside %s with the same name or order", info.Name, o.Name))
		}
	}
	at, _ := slices.BinarySearchFunc(known, info, func(a, b SourceInfo) int { return cmp.Compare(a.Order, b.Order) })
	known = slices.Insert(known, at, info)
}

// Source returns the registered source called name.
func Source(name string) (SourceInfo, bool) {
	at := slices.IndexFunc(known, func(i SourceInfo) bool { return i.Name == name })
	if at < 0 {
		return SourceInfo{}, false
	}
	return known[at], true
}

// SourceNames lists the registered sources' names, in their order; only
// those on by default when defaultOnly.
func SourceNames(defaultOnly bool) []string {
	var out []string
	for _, i := range known {
		if i.DefaultOn || !defaultOnly {
			out = append(out, i.Name)
		}
	}
	return out
}

// DefaultSources are the sources of a project that names none, each over
// the project's windows with its default settings.
func DefaultSources() []SourceSpec {
	var out []SourceSpec
	for _, name := range SourceNames(true) {
		out = append(out, SourceSpec{Name: name})
	}
	return out
}

// SourceSpec is one source as a project's configuration asks for it.
type SourceSpec struct {
	// Name is the source's name.
	Name string
	// Windows are the source's date windows (nil = the project's).
	Windows []Window
	// Settings are the source's own settings for this project, by key
	// (only those given, none 0).
	Settings map[string]int
}

// Equal reports whether two specs ask for the same walks.
func (s SourceSpec) Equal(o SourceSpec) bool {
	return s.Name == o.Name && slices.Equal(s.Windows, o.Windows) && maps.Equal(s.Settings, o.Settings)
}

// PlanProject is one project and its analytics sources, as the plan walks
// them and the backfill reads them.
type PlanProject struct {
	Project
	// Sources are the project's sources with their windows (nil = the
	// default sources over the project's windows).
	Sources []SourceSpec
}

// Specs are p's sources, each with its windows.
func (p *PlanProject) Specs() []SourceSpec {
	specs := p.Sources
	if len(specs) == 0 {
		specs = DefaultSources()
	}
	out := make([]SourceSpec, len(specs))
	for i, sp := range specs {
		if sp.Windows == nil {
			sp.Windows = p.Windows
		}
		out[i] = sp
	}
	return out
}
