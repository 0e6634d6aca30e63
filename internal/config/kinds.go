package config

import (
	"cmp"
	"fmt"
	"reflect"
	"regexp"
	"slices"

	"go.yaml.in/yaml/v3"
)

// KindSetting is a kind of operation's key in a project of the
// configuration file, as the kind declares it (internal/ops/engine
// registers it with the kind): the configuration validates every kind's
// key without importing the kinds, which run, as it does the analytics
// sources' settings.
type KindSetting struct {
	// Kind is the kind's name, Order its place among the kinds (both
	// set by engine.Register).
	Kind  string
	Order int
	// Key is its key in a project ("static_exports"); Noun what config
	// check calls the project's operations of the kind ("static exports").
	Key, Noun string
	// IDs, when not nil, makes the key a list of ids (the project takes
	// the kind when it lists any) rather than true or false.
	IDs *IDList
}

// IDList is a kind's key that lists ids, each one a label value.
type IDList struct {
	// What one id is ("automation id").
	What string
	// Max bounds the ids a project lists.
	Max int
	// Any, listed, allows any other id, counted under Other, which
	// cannot be listed itself.
	Any, Other string
}

// kindSettings are the registered kinds' keys, by Order.
var kindSettings []KindSetting

// RegisterKind declares a kind's key (engine.Register calls it while the
// kind's package initialises).
func RegisterKind(s KindSetting) {
	at, _ := slices.BinarySearchFunc(kindSettings, s, func(a, b KindSetting) int { return cmp.Compare(a.Order, b.Order) })
	kindSettings = slices.Insert(kindSettings, at, s)
}

// KindSettings are the registered kinds' keys, in their order.
func KindSettings() []KindSetting { return slices.Clone(kindSettings) }

// kindKeys are a project's keys of the kinds (KindSetting.Key), read as
// they are; yamlFields gives each its type, so that the walks of the file
// check them as every other key.
type kindKeys map[string]yaml.Node

// valueType is the key's type in the file: true or false, or a list.
func (s KindSetting) valueType() reflect.Type {
	if s.IDs != nil {
		return reflect.TypeFor[[]string]()
	}
	return reflect.TypeFor[bool]()
}

// flagValue is what a project of the flag route takes: every kind, with
// any id.
func (s KindSetting) flagValue() yaml.Node {
	if s.IDs != nil {
		return yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{{Kind: yaml.ScalarNode, Value: s.IDs.Any}}}
	}
	return yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"}
}

// kinds reads a project's keys of the kinds (at key): what each project
// takes, by kind name (present: it takes the kind).
func (b *builder) kinds(key string, raw kindKeys) map[string][]string {
	out := map[string][]string{}
	for _, s := range kindSettings {
		n, ok := raw[s.Key]
		if !ok {
			continue
		}
		at := key + "." + s.Key
		if s.IDs == nil {
			var on bool
			if n.Decode(&on) == nil && on {
				out[s.Kind] = []string{}
			}
			continue
		}
		var ids []string
		if n.Decode(&ids) != nil || len(ids) == 0 {
			continue
		}
		if b.ids(at, s.IDs, ids) {
			out[s.Kind] = ids
		}
	}
	return out
}

// idPattern is the shape of an id a kind's list takes (the API's ids are
// short tokens): 1 to 64 letters, digits, _ and -.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ids checks a kind's list of ids (at key): distinct, at most l.Max, each
// an id the API can have, or l.Any.
func (b *builder) ids(key string, l *IDList, ids []string) bool {
	if len(ids) > l.Max {
		b.problem(key, "at most %d per project (each is a label value), got %d; list %q to allow the others, counted as %q", l.Max, len(ids), l.Any, l.Other)
		return false
	}
	ok, seen := true, map[string]bool{}
	for i, id := range ids {
		at := fmt.Sprintf("%s[%d]", key, i)
		switch {
		case id == l.Any:
		case !idPattern.MatchString(id):
			b.problem(at, "%s %q: want 1 to 64 letters, digits, _ or -", l.What, id)
			ok = false
		case id == l.Other:
			b.problem(at, "%s %q is the label of those not named; it cannot be named", l.What, id)
			ok = false
		}
		if seen[id] {
			b.problem(at, "%s %q given twice", l.What, id)
			ok = false
		}
		seen[id] = true
	}
	return ok
}

// Takes reports whether the project takes kind's operations, and the
// values of its key (the ids it lists; none for a key that is true).
func (p *Project) Takes(kind string) ([]string, bool) {
	v, ok := p.Kinds[kind]
	return v, ok
}

// Taking are the ids of the projects that take kind's operations.
func (c *Config) Taking(kind string) []string {
	var out []string
	for _, p := range c.Projects {
		if _, ok := p.Kinds[kind]; ok {
			out = append(out, p.ID)
		}
	}
	return out
}
