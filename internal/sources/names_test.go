package sources_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// ownDirs are where a source's own files live: its file here, its
// endpoint's file in apiclient, its handler in the fake API. A file there
// is the source's when its name starts with the source's name or with one
// of its endpoints' (feedback_by_page.go is the feedback source's).
var ownDirs = []string{"internal/sources", "apiclient", "internal/fakeapi"}

// TestNoSourceNamedOutsideItsFiles: a source is one file. Registries, the
// plan, the configuration, the wire codec and the backfill iterate over the
// registry; no Go code outside a source's own files (tests aside) names it,
// neither by its name as a string nor by its Name constant.
func TestNoSourceNamedOutsideItsFiles(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	consts := nameConstants(t)
	type banned struct{ source, what string }
	literals, idents := map[string]banned{}, map[string]banned{}
	for _, def := range sources.All() {
		literals[def.Name] = banned{def.Name, strconv.Quote(def.Name)}
		ident, ok := consts[def.Name]
		if !ok {
			t.Errorf("source %s has no Name constant in the sources package", def.Name)
			continue
		}
		idents[ident] = banned{def.Name, ident}
	}
	own := func(rel, source string) bool {
		dir, base := filepath.Dir(rel), strings.TrimSuffix(filepath.Base(rel), ".go")
		def, _ := sources.ByName(source)
		for _, d := range ownDirs {
			if filepath.ToSlash(dir) != d {
				continue
			}
			for _, prefix := range append([]string{def.Name}, def.Endpoints...) {
				if strings.HasPrefix(base, prefix) {
					return true
				}
			}
		}
		return false
	}
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		tags := map[*ast.BasicLit]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			var b banned
			var found bool
			switch n := n.(type) {
			case *ast.Field:
				// A struct tag (json:"visitors") is the API's word, not a
				// source's name.
				tags[n.Tag] = true
			case *ast.BasicLit:
				if n.Kind == token.STRING && !tags[n] {
					if s, err := strconv.Unquote(n.Value); err == nil {
						b, found = literals[s]
					}
				}
			case *ast.Ident:
				b, found = idents[n.Name]
			}
			if found && !own(rel, b.source) {
				t.Errorf("%s names source %s (%s): iterate over the registry instead (docs/development.md, Adding a source)", rel, b.source, b.what)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d Go files under %s: the walk missed the module", files, root)
	}
}

// nameConstants maps each string constant of the sources package to its
// identifier (visitors -> NameVisitors).
func nameConstants(t *testing.T) map[string]string {
	t.Helper()
	pkgs, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, path := range pkgs {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, v := range vs.Values {
					if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING && strings.HasPrefix(vs.Names[i].Name, "Name") {
						s, _ := strconv.Unquote(lit.Value)
						out[s] = vs.Names[i].Name
					}
				}
			}
		}
	}
	return out
}

// TestSourceEndpointsAreAnalytics: every endpoint a source reads is one
// of the analytics endpoints whose metrics are pre-created.
func TestSourceEndpointsAreAnalytics(t *testing.T) {
	t.Parallel()
	for _, def := range sources.All() {
		if len(def.Endpoints) == 0 {
			t.Errorf("%s reads no endpoint", def.Name)
		}
		for _, e := range def.Endpoints {
			if !slices.Contains(apiclient.AnalyticsEndpoints, e) {
				t.Errorf("%s reads %s, not an analytics endpoint", def.Name, e)
			}
		}
	}
}
