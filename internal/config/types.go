package config

import (
	"fmt"
	"reflect"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
)

// typeProblems reports every value of the file below n that the shape t
// cannot hold, in the file's words: the key path, its line, what is wrong
// and what is expected ("expected a duration such as 30s or 2m"), where the
// YAML library would say "cannot unmarshal !!str into time.Duration" with
// no key. Keys with such a problem are remembered (b.badType), so that the
// zero value the library left there is not told as a second problem.
func (b *builder) typeProblems(n *yaml.Node, t reflect.Type, path string) {
	t, done := descend(n, t, path, b.typeProblems)
	if done || n.Tag == "!!null" { // null: left out, the key's default
		return
	}
	if t == reflect.TypeFor[sourcesEntry]() {
		b.sourcesTypes(n, path)
		return
	}
	if msg := scalarProblem(n, t); msg != "" {
		b.typeProblem(path, n.Line, msg)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		fields, _ := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			if ft, ok := fields[n.Content[i].Value]; ok {
				b.typeProblems(n.Content[i+1], ft, joinKey(path, n.Content[i].Value))
			}
		}
	case reflect.Slice:
		for i, c := range n.Content {
			b.typeProblems(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Map:
		for i := 0; i+1 < len(n.Content); i += 2 {
			b.typeProblems(n.Content[i+1], t.Elem(), joinKey(path, n.Content[i].Value))
		}
	}
}

// sourcesTypes checks a project's sources: a list of names, or a map of
// names to their entries, whose keys are windows and the source's settings
// (whole numbers). A key that is neither, and no other source's setting
// either, is unknown, with the key it most likely meant.
func (b *builder) sourcesTypes(n *yaml.Node, path string) {
	switch n.Kind {
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if c.Kind != yaml.ScalarNode {
				b.typeProblem(fmt.Sprintf("%s[%d]", path, i), c.Line, "is not a source name; expected a name such as visitors")
			}
		}
		return
	case yaml.MappingNode:
	default:
		b.typeProblem(path, n.Line, "expected a list of sources such as [visitors, views], or a map of sources to their settings")
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		name, entry := n.Content[i].Value, n.Content[i+1]
		key := joinKey(path, name)
		def, known := analytics.Source(name)
		if !known || entry.Tag == "!!null" {
			continue // an unknown source is the builder's problem
		}
		if entry.Kind != yaml.MappingNode {
			b.typeProblem(key, entry.Line, "expected a map of the source's settings such as {windows: [1d, 7d]}, or {} for its defaults")
			continue
		}
		b.sourceEntryTypes(def, entry, key)
	}
}

// sourceEntryTypes checks the keys of def's entry at key.
func (b *builder) sourceEntryTypes(def analytics.SourceInfo, entry *yaml.Node, key string) {
	known := map[string]reflect.Type{"windows": reflect.TypeFor[[]string]()}
	for _, s := range def.Settings {
		known[s.Key] = reflect.TypeFor[int]()
	}
	for j := 0; j+1 < len(entry.Content); j += 2 {
		field, value := entry.Content[j].Value, entry.Content[j+1]
		ft, ok := known[field]
		switch {
		case ok:
			b.typeProblems(value, ft, joinKey(key, field))
		case !anySourceSetting(field):
			b.problemAtLine(entry.Content[j].Line, "unknown key %q in %s%s", field, key, suggest(field, known))
			b.badType[joinKey(key, field)] = true
		}
	}
}

// anySourceSetting reports whether field is a setting of some source.
func anySourceSetting(field string) bool {
	for _, o := range analytics.Sources() {
		if _, ok := o.Setting(field); ok {
			return true
		}
	}
	return false
}

// typeProblem records a value of the wrong type at key and line.
func (b *builder) typeProblem(key string, line int, msg string) {
	b.problems = append(b.problems, Problem{File: b.file, Line: line, Key: key, Msg: msg})
	b.badType[key] = true
}

// scalarProblem is what is wrong with n as a value of t, and what is
// expected ("": nothing wrong, or t is a structure checked key by key).
func scalarProblem(n *yaml.Node, t reflect.Type) string {
	got := describe(n)
	switch {
	case t == reflect.TypeFor[time.Duration]():
		if n.Kind == yaml.ScalarNode {
			if _, err := time.ParseDuration(n.Value); err == nil {
				return ""
			}
		}
		return got + " is not a duration; expected a duration such as 30s or 2m (units ms, s, m, h)"
	case t.Kind() == reflect.Int:
		var v int
		if n.Kind == yaml.ScalarNode && n.Decode(&v) == nil {
			return ""
		}
		return got + " is not a whole number; expected a whole number such as 10"
	case t.Kind() == reflect.Bool:
		var v bool
		if n.Kind == yaml.ScalarNode && n.Decode(&v) == nil {
			return ""
		}
		return got + " is not true or false; expected true or false"
	case t.Kind() == reflect.String:
		if n.Kind == yaml.ScalarNode {
			return ""
		}
		return got + " is not a single value; expected a string"
	case t.Kind() == reflect.Slice:
		if n.Kind == yaml.SequenceNode {
			return ""
		}
		if t.Elem().Kind() == reflect.String && n.Kind == yaml.ScalarNode {
			return fmt.Sprintf("%s is one value, not a list; expected a list such as [%s]", got, n.Value)
		}
		return got + " is not a list; expected a list such as [a, b]"
	case t.Kind() == reflect.Struct || t.Kind() == reflect.Map:
		if n.Kind == yaml.MappingNode {
			return ""
		}
		return got + " is not a map of keys; expected keys indented below it, or {key: value}"
	}
	return ""
}

// describe names a node's value as the file holds it.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a map"
	}
	return fmt.Sprintf("%q", n.Value)
}
