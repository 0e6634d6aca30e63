package kinds_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
)

// kindFiles are, per kind, the words that name it beside its
// declaration's (its name, its configuration key, its route prefix, its
// package's import path), and its files outside its package: its
// client's in apiclient, its handler in the fake API.
var kindFiles = map[string]struct {
	// metrics is the prefix of its metric families; ident a word (any
	// case) of the identifiers that name it ("" for agent jobs: "job" is
	// the API's word everywhere; their types are reached through the
	// package, which the import path names).
	metrics, ident string
	// plain: its name is also another word ("job" is Prometheus's label
	// and a log key), not checked as a string.
	plain           bool
	apiclient, fake string
	// elsewhere are the files outside those that may name it, each with
	// its reason (at most 2: issue 43).
	elsewhere map[string]string
}{
	"job": {metrics: "mintlify_agent_job", plain: true, apiclient: "apiclient/jobs.go", fake: "internal/fakeapi/jobs.go",
		elsewhere: map[string]string{"internal/ops/kinds/automation/automation.go": "an automation's run is an agent job, handed to the agent jobs"}},
	"deployment": {metrics: "mintlify_deployment", ident: "deployment", apiclient: "apiclient/deployments.go", fake: "internal/fakeapi/deployments.go",
		elsewhere: map[string]string{"internal/fakeapi/fakeapi.go": "the fake's options, state and routes",
			"internal/fakeapi/assistant.go": "an assistant category of the fake's analytics: another word"}},
	"static_export": {metrics: "mintlify_static_export", ident: "staticexport", apiclient: "apiclient/staticexport.go", fake: "internal/fakeapi/staticexport.go",
		elsewhere: map[string]string{"internal/fakeapi/fakeapi.go": "the fake's options, state and routes"}},
	"automation": {metrics: "mintlify_automation", ident: "automation", apiclient: "apiclient/automations.go", fake: "internal/fakeapi/automations.go",
		elsewhere: map[string]string{"internal/fakeapi/fakeapi.go": "the fake's options, state and routes",
			"internal/fakeapi/jobs.go": "the fake's automation runs are agent jobs"}},
}

// TestNoKindNamedOutsideItsFiles: a kind of operation is its package, its
// line in the registry (kinds.go), its client's file and its fake
// handler. The engine, the gateway, the status page, the configuration,
// the wiring and orgs loop over the registry: no other non-test Go file
// names a kind (its name or configuration key as a string, its route
// prefix, its metric prefix, its package, an identifier with its word)
// beside the few kindFiles lists. Test harnesses (internal/testutil,
// testdata) drive every kind and are left out.
func TestNoKindNamedOutsideItsFiles(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..", "..")
	type kindWords struct {
		name, dir        string
		exact, substring []string
		ident            string
		own              []string
	}
	var kinds []kindWords
	for _, k := range engine.Kinds() {
		d := k.Declare()
		f, ok := kindFiles[d.Name]
		if !ok {
			t.Errorf("kind %s has no row in kindFiles", d.Name)
			continue
		}
		pkg := reflect.TypeOf(k).Elem().PkgPath()
		dir := pkg[strings.Index(pkg, "/internal/")+1:]
		w := kindWords{name: d.Name, dir: dir, exact: []string{d.Setting.Key}, substring: []string{d.Routes.Prefix, f.metrics, "/" + dir},
			ident: f.ident, own: []string{dir + "/", f.apiclient, f.fake, "internal/ops/kinds/kinds.go"}}
		if !f.plain {
			w.exact = append(w.exact, d.Name)
		}
		if len(f.elsewhere) > 2 {
			t.Errorf("kind %s may be named in %d files beside its own: at most 2", d.Name, len(f.elsewhere))
		}
		for file := range f.elsewhere {
			w.own = append(w.own, file)
		}
		kinds = append(kinds, w)
	}
	own := func(rel string, k kindWords) bool {
		return slices.ContainsFunc(k.own, func(o string) bool { return rel == o || strings.HasSuffix(o, "/") && strings.HasPrefix(rel, o) })
	}
	named := func(n ast.Node, tags map[*ast.BasicLit]bool, k kindWords) string {
		switch n := n.(type) {
		case *ast.BasicLit:
			s, err := strconv.Unquote(n.Value)
			if n.Kind != token.STRING || tags[n] || err != nil {
				return ""
			}
			if slices.Contains(k.exact, s) {
				return strconv.Quote(s)
			}
			for _, w := range k.substring {
				if strings.Contains(s, w) {
					return w
				}
			}
		case *ast.Ident:
			if k.ident != "" && strings.Contains(strings.ToLower(n.Name), k.ident) {
				return n.Name
			}
		}
		return ""
	}
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || rel == "internal/testutil") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		tags := map[*ast.BasicLit]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			if field, ok := n.(*ast.Field); ok && field.Tag != nil {
				// A struct tag (json:"deployments") is a wire word.
				tags[field.Tag] = true
			}
			for _, k := range kinds {
				if w := named(n, tags, k); w != "" && !own(rel, k) {
					t.Errorf("%s names kind %s (%s): loop over the registry instead (docs/development.md, Adding a kind)", rel, k.name, w)
				}
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
