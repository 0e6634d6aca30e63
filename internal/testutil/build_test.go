package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The shared binary is keyed by what go build reads: a change of an
// embedded file (the status page's template) must give another binary.
func TestSourceFilesAreWhatTheBuildReads(t *testing.T) {
	root := ModuleRoot()
	files, err := sourceFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	rel := make([]string, 0, len(files))
	for _, f := range files {
		r, err := filepath.Rel(root, f)
		if err != nil {
			t.Fatal(err)
		}
		rel = append(rel, filepath.ToSlash(r))
		if strings.HasSuffix(f, "_test.go") {
			t.Errorf("%s: a test file changes no binary", r)
		}
	}
	for _, want := range []string{"main.go", "go.mod", "go.sum", "internal/status/page.html.tmpl", "internal/exporter/exporter.go"} {
		if !slices.Contains(rel, want) {
			t.Errorf("%s is not hashed; hashed: %v", want, rel)
		}
	}
}

func TestExporterBinaryIsBuiltOnceAndRuns(t *testing.T) {
	a, err := ExporterBinary()
	if err != nil {
		t.Fatal(err)
	}
	b, err := ExporterBinary()
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatalf("two paths for one build: %s, %s", a, b)
	}
	key, err := sourceHash(ModuleRoot())
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv(BinEnv) == "" && filepath.Base(filepath.Dir(a)) != key[:16] {
		t.Errorf("binary %s is not keyed by the sources' hash %s", a, key[:16])
	}
	out, err := CombinedOutput(exec.Command(a, "--version"))
	if err != nil || !strings.Contains(string(out), "mintlify_exporter") {
		t.Fatalf("%s --version: %v\n%s", a, err, out)
	}
}
