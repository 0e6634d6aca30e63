package testutil

import (
	"os"
	"strings"
	"testing"
)

// MakeRunArgs returns the exporter's arguments in the run target of
// makefile, without its --web.listen-address: the tests of the quick start
// run what `make run` runs.
func MakeRunArgs(t testing.TB, makefile string) []string {
	t.Helper()
	data, err := os.ReadFile(makefile)
	if err != nil {
		t.Fatal(err)
	}
	_, recipe, ok := strings.Cut(string(data), "\nrun: build\n")
	if !ok {
		t.Fatalf("%s: no run target", makefile)
	}
	recipe = strings.ReplaceAll(recipe, "\\\n", " ")
	recipe, _, _ = strings.Cut(recipe, "\n")
	fields := strings.Fields(recipe)
	if len(fields) < 2 || fields[0] != "./$(BIN)" {
		t.Fatalf("%s: run target %q does not run ./$(BIN)", makefile, recipe)
	}
	var args []string
	for _, f := range fields[1:] {
		if !strings.HasPrefix(f, "--web.listen-address=") {
			args = append(args, f)
		}
	}
	return args
}
