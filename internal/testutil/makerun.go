package testutil

import (
	"os"
	"strings"
	"testing"
)

// MakeRunArgs returns the exporter's arguments of the run target of
// makefile (its RUN_FLAGS), without a --web.listen-address: the tests of
// the quick start run what `make run` runs.
func MakeRunArgs(t testing.TB, makefile string) []string {
	t.Helper()
	data, err := os.ReadFile(makefile)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(data), "\\\n", " ")
	if !strings.Contains(text, "\nrun: build\n\t./$(BIN) $(RUN_FLAGS) ") {
		t.Fatalf("%s: the run target does not run ./$(BIN) $(RUN_FLAGS)", makefile)
	}
	_, flags, ok := strings.Cut(text, "\nRUN_FLAGS = ")
	if !ok {
		t.Fatalf("%s: no RUN_FLAGS", makefile)
	}
	flags, _, _ = strings.Cut(flags, "\n")
	var args []string
	for _, f := range strings.Fields(flags) {
		if !strings.HasPrefix(f, "--web.listen-address=") {
			args = append(args, f)
		}
	}
	return args
}
