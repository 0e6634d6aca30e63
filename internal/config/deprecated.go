package config

import (
	"fmt"
	"strings"

	"github.com/alecthomas/kingpin/v2"
)

// Renames are the deprecated names of flags: each old name still works,
// hidden from --help, and its use is told once (Notice).
type Renames struct {
	old  []string
	to   map[string]string
	used map[string]*bool
}

// renamable is a value of this package, which names its flag in errors:
// the old name's copy names the old flag.
type renamable interface {
	named(name string) kingpin.Value
}

func (v *durationValue) named(name string) kingpin.Value { return &durationValue{name: name, d: v.d} }
func (v *intValue) named(name string) kingpin.Value      { return &intValue{name: name, n: v.n} }
func (v *bytesValue) named(name string) kingpin.Value    { return &bytesValue{name: name, n: v.n} }
func (v *enumValue) named(name string) kingpin.Value {
	return &enumValue{name: name, s: v.s, options: v.options}
}

// Add registers old as a hidden, deprecated name of the flag to, already
// on app, writing the same value: kingpin sets defaults before the values
// given, so a value given under the old name is kept. A cumulative flag
// (given several times) cannot share its value this way: give it its own
// and read Used.
func (r *Renames) Add(app Flagger, old, to string) {
	clause := app.(interface {
		GetFlag(string) *kingpin.FlagClause
	}).GetFlag(to)
	if clause == nil {
		panic("config: no flag --" + to + " to rename from --" + old)
	}
	value := clause.Model().Value
	if v, ok := value.(renamable); ok {
		value = v.named(old)
	}
	r.add(old, to)
	app.Flag(old, "Deprecated name of --"+to+".").Hidden().IsSetByUser(r.used[old]).SetValue(value)
}

// AddOwn records old as a deprecated name of to for a flag the caller
// registered with its own value (a cumulative one), and returns where
// kingpin records its use.
func (r *Renames) AddOwn(old, to string) *bool {
	r.add(old, to)
	return r.used[old]
}

func (r *Renames) add(old, to string) {
	if r.to == nil {
		r.to, r.used = map[string]string{}, map[string]*bool{}
	}
	r.old = append(r.old, old)
	r.to[old], r.used[old] = to, new(bool)
}

// Used reports whether the old name was given.
func (r *Renames) Used(old string) bool {
	u := r.used[old]
	return u != nil && *u
}

// Given lists the old names that were given, with "--".
func (r *Renames) Given() []string {
	var out []string
	for _, old := range r.old {
		if r.Used(old) {
			out = append(out, "--"+old)
		}
	}
	return out
}

// Name is the name of flag to the user gave: its deprecated name when
// that was used, else to itself (with "--").
func (r *Renames) Name(to string) string {
	for _, old := range r.old {
		if r.to[old] == to && r.Used(old) {
			return "--" + old
		}
	}
	return "--" + to
}

// Notice tells which deprecated names were used and their new names, ""
// when none was.
func (r *Renames) Notice() string {
	var parts []string
	for _, old := range r.old {
		if r.Used(old) {
			parts = append(parts, fmt.Sprintf("--%s is deprecated: use --%s", old, r.to[old]))
		}
	}
	return strings.Join(parts, "; ")
}
