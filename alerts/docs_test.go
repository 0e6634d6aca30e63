package alerts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryRecordingRuleIsDocumented: docs/dashboards-alerts.md names
// every recording rule of the rule file (issue 38, item 6: it listed 8 of
// the 9).
func TestEveryRecordingRuleIsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(Dir(), "..", "docs", "dashboards-alerts.md"))
	if err != nil {
		t.Fatal(err)
	}
	names := load(t).RecordingRules()
	if len(names) == 0 {
		t.Fatal("no recording rule in the rule file")
	}
	for _, name := range names {
		if !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("docs/dashboards-alerts.md does not name the recording rule `%s`", name)
		}
	}
}
