package reload_test

import (
	"testing"

	"github.com/go-kit/log"

	"github.com/mintlify-exporter/mintlify_exporter/internal/reload"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// Every HELP is one short sentence; the detail is in docs/.
func TestHelpTexts(t *testing.T) {
	reg := &testutil.Registered{}
	reload.New(reg, func() error { return nil }, log.NewNopLogger(), nil)
	testutil.CheckHelp(t, reg.Collectors...)
}
