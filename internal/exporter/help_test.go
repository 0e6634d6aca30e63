package exporter_test

import (
	"testing"

	"github.com/go-kit/log"

	"github.com/mintlify-exporter/mintlify_exporter/internal/exporter"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// Every HELP is one short sentence; the detail is in docs/.
func TestHelpTexts(t *testing.T) {
	reg := &testutil.Registered{}
	exporter.NewReloader(reg, func() error { return nil }, log.NewNopLogger(), nil)
	testutil.CheckHelp(t, reg.Collectors...)
}
