package status

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestDocsDocumentEveryField: scripts read the JSON by the names the
// "Status page" section of docs/operations.md lists, so every field and
// result must be there.
func TestDocsDocumentEveryField(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Status page\n")
	if !ok {
		t.Fatal(`docs/operations.md has no "## Status page" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || typ.PkgPath() != reflect.TypeFor[Report]().PkgPath() || seen[typ] {
			return
		}
		seen[typ] = true
		for f := range typ.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue // the kinds' sections: internal/ops/kinds's TestStatusJSONIsDocumented
			}
			if !strings.Contains(section, "`"+name+"`") && !strings.Contains(section, "`"+name+"[]`") {
				t.Errorf("docs/operations.md's Status page does not document %s.%s (`%s`)", typ.Name(), f.Name, name)
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeFor[Report]())
	for r := range resultHelp {
		if !strings.Contains(section, "`"+r+"`") {
			t.Errorf("docs/operations.md's Status page does not list the result %q", r)
		}
	}
}
