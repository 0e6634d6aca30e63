package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"testing"
)

// TestInProcessHelpersAreE2ECopies: every declaration of the root
// package's copied helpers (inprocess_helpers_test.go, and
// soak_helpers_test.go of the soak build) is, word for word, the one of
// the same name in internal/e2e, where the black-box tests that share them
// live: a fix made there is made here too.
func TestInProcessHelpersAreE2ECopies(t *testing.T) {
	t.Parallel()
	e2e, err := filepath.Glob(filepath.Join("internal", "e2e", "*_test.go"))
	if err != nil || len(e2e) == 0 {
		t.Fatalf("no test files in internal/e2e: %v", err)
	}
	originals := map[string]string{}
	for _, f := range e2e {
		for name, src := range topLevelDecls(t, f) {
			originals[name] = src
		}
	}
	n := 0
	for _, f := range []string{"inprocess_helpers_test.go", "soak_helpers_test.go"} {
		for name, src := range topLevelDecls(t, f) {
			n++
			if orig, ok := originals[name]; !ok {
				t.Errorf("%s: %s is not in internal/e2e", f, name)
			} else if orig != src {
				t.Errorf("%s: %s differs from internal/e2e's: copy it again", f, name)
			}
		}
	}
	if n < 10 {
		t.Fatalf("read %d declarations from the copies", n)
	}
}

// topLevelDecls maps each top-level declaration of file but its imports,
// by name (a method's with its receiver's type: T.m), to its source text
// with its doc comment.
func topLevelDecls(t *testing.T, file string) map[string]string {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	decls := map[string]string{}
	for _, d := range f.Decls {
		var name string
		start := d.Pos()
		switch d := d.(type) {
		case *ast.FuncDecl:
			name = d.Name.Name
			if d.Recv != nil {
				name = recvType(d.Recv.List[0].Type) + "." + name
			}
			if d.Doc != nil {
				start = d.Doc.Pos()
			}
		case *ast.GenDecl:
			if d.Tok == token.IMPORT {
				continue
			}
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					name += s.Name.Name + " "
				case *ast.ValueSpec:
					for _, n := range s.Names {
						name += n.Name + " "
					}
				}
			}
			if d.Doc != nil {
				start = d.Doc.Pos()
			}
		}
		decls[name] = string(src[fset.Position(start).Offset:fset.Position(d.End()).Offset])
	}
	return decls
}

// recvType is the name of a receiver's type, T or *T.
func recvType(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		return "*" + recvType(s.X)
	}
	if i, ok := e.(*ast.Ident); ok {
		return i.Name
	}
	return "?"
}
