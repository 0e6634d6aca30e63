package config

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestEveryKeyIsDocumented: every key the file accepts (the kinds' keys
// too, and api_key, which it refuses with a message) is in
// docs/configuration.md.
func TestEveryKeyIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct {
			return
		}
		for f := range typ.Fields() {
			if f.Type == reflect.TypeFor[kindKeys]() {
				for _, s := range kindSettings {
					keys = append(keys, s.Key)
				}
				continue
			}
			if key, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); key != "" && key != "-" {
				keys = append(keys, key)
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeFor[fileConfig]())
	if len(keys) < 15 {
		t.Fatalf("found %d keys: %v", len(keys), keys)
	}
	for _, key := range keys {
		// A key is documented in a table row, a heading or the text, in code.
		if !strings.Contains(string(doc), "`"+key+"`") && !strings.Contains(string(doc), "`"+key+"[]`") &&
			!strings.Contains(string(doc), "`"+key+":`") && !strings.Contains(string(doc), "."+key+"`") {
			t.Errorf("docs/configuration.md does not document the key %s", key)
		}
	}
}
