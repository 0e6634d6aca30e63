package gateway

import (
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// Every HELP is one short sentence; the detail is in docs/.
func TestHelpTexts(t *testing.T) {
	testutil.CheckHelp(t, newRejected([]string{"p"}), newMessageRejected([]string{"p"}))
}
