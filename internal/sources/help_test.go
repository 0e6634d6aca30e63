package sources_test

import (
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
	tu "github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// Every family's HELP is one short sentence; the detail is in docs/.
func TestHelpTexts(t *testing.T) {
	n := 0
	for _, def := range sources.All() {
		for _, f := range def.Families {
			if p := tu.HelpProblem(f.Help); p != "" {
				t.Errorf("%s: %s: %q", f.Name, p, f.Help)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("no family: nothing was checked")
	}
}
