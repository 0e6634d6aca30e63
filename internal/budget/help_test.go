package budget

import (
	"testing"

	tu "github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// Every HELP is one short sentence; the detail is in docs/.
func TestHelpTexts(t *testing.T) {
	b, err := New(Config{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	tu.CheckHelp(t, b)
}
