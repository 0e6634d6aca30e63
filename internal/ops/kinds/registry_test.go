package kinds_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
)

// TestConfigTestdataIsTheKindsKeys: the keys the configuration's tests
// register (it does not import the kinds) are the ones the kinds declare.
func TestConfigTestdataIsTheKindsKeys(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../config/testdata/kinds.json")
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.MarshalIndent(config.KindSettings(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != string(want)+"\n" {
		t.Errorf("internal/config/testdata/kinds.json is not the kinds' keys; write these:\n%s", want)
	}
}

// TestStatusJSONIsDocumented: scripts read each kind's rows of the status
// page's JSON (jobs.<key>[]) by the names the "Status page" section of
// docs/operations.md lists: every kind's key and every field of its rows
// is there.
func TestStatusJSONIsDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Status page\n")
	if !ok {
		t.Fatal(`docs/operations.md has no "## Status page" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	e := newEnv(t, fakeapi.Options{})
	trk := e.open(e.config())
	sections := trk.Status().Sections
	if len(sections) != len(engine.Kinds()) {
		t.Fatalf("%d sections for %d kinds", len(sections), len(engine.Kinds()))
	}
	for _, s := range sections {
		if !strings.Contains(section, "`"+s.Key+"[]`") {
			t.Errorf("docs/operations.md's Status page does not document jobs.%s[]", s.Key)
		}
		typ := reflect.TypeOf(s.JSON)
		for typ.Kind() == reflect.Slice || typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		for _, f := range reflect.VisibleFields(typ) {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.Anonymous && !strings.Contains(section, "`"+name+"`") {
				t.Errorf("docs/operations.md's Status page does not document jobs.%s[].%s", s.Key, name)
			}
		}
	}
}

// TestKindsArePlainDataAndInterfaces: a kind declares itself as plain data
// (no func-typed field in engine.Decl, at any depth) behind the named
// methods of engine.Kind, and no type or function of the engine has more
// than two type parameters (its generic code is compiled once, not once
// per kind's struct).
func TestKindsArePlainDataAndInterfaces(t *testing.T) {
	t.Parallel()
	var walk func(reflect.Type, string)
	walk = func(typ reflect.Type, at string) {
		switch typ.Kind() {
		case reflect.Func:
			t.Errorf("engine.Decl%s is a func: declare data, and methods on the kind", at)
		case reflect.Pointer, reflect.Slice, reflect.Map:
			walk(typ.Elem(), at)
		case reflect.Struct:
			for f := range typ.Fields() {
				walk(f.Type, at+"."+f.Name)
			}
		}
	}
	walk(reflect.TypeFor[engine.Decl](), "")
	fset := token.NewFileSet()
	files, err := filepath.Glob("../engine/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("the engine's files: %v %v", files, err)
	}
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var params *ast.FieldList
			switch n := n.(type) {
			case *ast.TypeSpec:
				params = n.TypeParams
			case *ast.FuncType:
				params = n.TypeParams
			}
			if params != nil && params.NumFields() > 2 {
				t.Errorf("%s: %d type parameters, at most 2", fset.Position(n.Pos()), params.NumFields())
			}
			return true
		})
	}
}
