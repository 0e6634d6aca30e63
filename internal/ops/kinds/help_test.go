package kinds_test

import (
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// Every HELP is one short sentence; the detail is in docs/: those of the
// engine, of every kind and of every kind's routes.
func TestHelpTexts(t *testing.T) {
	t.Parallel()
	e := newDeployEnv(t, "d1")
	mfs, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) < 30 {
		t.Fatalf("%d families gathered: nothing much was checked", len(mfs))
	}
	for _, mf := range mfs {
		if p := testutil.HelpProblem(mf.GetHelp()); p != "" {
			t.Errorf("%s: %s: %q", mf.GetName(), p, mf.GetHelp())
		}
	}
}
