package tracker

import (
	"testing"
	"time"

	tu "github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// Every HELP is one short sentence; the detail is in docs/.
func TestHelpTexts(t *testing.T) {
	tu.CheckHelp(t, newMetrics([]string{"p"}, func() []projectJobs { return nil }, time.Now, time.Second))
}
