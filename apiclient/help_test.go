package apiclient_test

import (
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	tu "github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// Every HELP is one short sentence; the detail is in docs/.
func TestHelpTexts(t *testing.T) {
	reg := &tu.Registered{}
	apiclient.NewMetrics(reg)
	tu.CheckHelp(t, reg.Collectors...)
}
