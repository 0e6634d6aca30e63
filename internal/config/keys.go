package config

import (
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// unknownKeys reports every key of the file below n that the shape t
// (the file's structs) has no field for, in the file's words: the key,
// where it stands, and the known key it most likely meant. Decoding is
// not strict (KnownFields would stop at the first unknown key and hide
// every other problem): this walk finds them all.
func (b *builder) unknownKeys(n *yaml.Node, t reflect.Type, path string) {
	t, done := descend(n, t, path, b.unknownKeys)
	if done {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return
		}
		fields, inline := yamlFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			ft, ok := fields[key]
			switch {
			case ok:
				b.unknownKeys(n.Content[i+1], ft, joinKey(path, key))
			case !inline: // an inline map takes any key (a source's settings)
				b.problemAtLine(n.Content[i].Line, "unknown key %q%s%s", key, where(path), suggest(key, fields))
			}
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return
		}
		for i, c := range n.Content {
			b.unknownKeys(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			b.unknownKeys(n.Content[i+1], t.Elem(), joinKey(path, n.Content[i].Value))
		}
	}
}

// descend is what every walk of the file's nodes against its shape does
// first: it takes t's pointers off, walks a document's content with walk,
// and skips an alias (its anchor is walked where it stands); done: n was
// one of those.
func descend(n *yaml.Node, t reflect.Type, path string, walk func(*yaml.Node, reflect.Type, string)) (reflect.Type, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			walk(c, t, path)
		}
		return t, true
	case yaml.AliasNode:
		return t, true
	}
	return t, false
}

// yamlFields are the keys of a struct as the YAML library reads them,
// with their types; inline tells whether an inline map takes other keys.
func yamlFields(t reflect.Type) (fields map[string]reflect.Type, inline bool) {
	fields = map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case f.Type == reflect.TypeFor[kindKeys]():
			for _, s := range kindSettings {
				fields[s.Key] = s.valueType()
			}
		case strings.Contains(opts, "inline") && f.Type.Kind() == reflect.Map:
			inline = true
		case strings.Contains(opts, "inline"):
			sub, subInline := yamlFields(f.Type)
			for k, v := range sub {
				fields[k] = v
			}
			inline = inline || subInline
		default:
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			fields[name] = f.Type
		}
	}
	return fields, inline
}

func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func where(path string) string {
	if path == "" {
		return " at the top level"
	}
	return " in " + path
}

// suggest names the known key closest to key, when one is close enough
// to be a typo (at most a third of its letters differ).
func suggest(key string, fields map[string]reflect.Type) string {
	best, bestDist := "", len(key)/3+1
	for k := range fields {
		if d := editDistance(key, k); d < bestDist || (d == bestDist && best != "" && k < best) {
			best, bestDist = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

// editDistance is the Levenshtein distance of a and b (keys are short).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// sourcesEntry is a project's sources: a map of names to their settings,
// or, the short form, a list of names (each with its defaults).
type sourcesEntry map[string]*fileSource

// UnmarshalYAML reads either form.
func (s *sourcesEntry) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.SequenceNode {
		var names []string
		if err := n.Decode(&names); err != nil {
			return err
		}
		*s = sourcesEntry{}
		for _, name := range names {
			(*s)[name] = nil
		}
		return nil
	}
	var m map[string]*fileSource
	if err := n.Decode(&m); err != nil {
		return err
	}
	*s = m
	return nil
}
