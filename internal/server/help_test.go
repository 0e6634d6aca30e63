package server

import (
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// Every HELP is one short sentence; the detail is in docs/.
func TestHelpTexts(t *testing.T) {
	reg := &testutil.Registered{}
	f, err := NewAuthFront(AuthOptions{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	testutil.CheckHelp(t, reg.Collectors...)
}
