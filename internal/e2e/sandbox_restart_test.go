package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// TestSandboxStartsAfreshEveryRun: the simulated API starts with every
// key's quota unspent, so the sandbox's analytics ledger must too. Two
// sandbox runs sharing a state file (its directory is where a real key's
// ledger lives): the first spends its whole (small) budget, the second
// still shows visitor series at once and leaves no ledger beside the
// state file. Before, the second run found the first one's spending in
// the ledger and showed nothing for the rest of the hour.
func TestSandboxStartsAfreshEveryRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"--mintlify.sandbox", "--mintlify.analytics-budget=4", "--analytics.window=7d",
		"--agent.state-file=" + filepath.Join(dir, "agent.db")}
	spent := regexp.MustCompile(`(?m)^mintlify_api_budget_spent_requests\{organization="default"\} (\d+)$`)
	visitors := func(body string) bool { return strings.Contains(body, "\nmintlify_page_unique_visitors{") }
	for run := 1; run <= 2; run++ {
		p := startExporter(t, nil, args...)
		// The first run waits until its budget is spent as well.
		body := testutil.WaitHTTP(t, p.Base+"/metrics", 45*time.Second, func(b string) bool {
			m := spent.FindStringSubmatch(b)
			return visitors(b) && (run > 1 || m != nil && m[1] == "4")
		})
		if m := spent.FindStringSubmatch(body); m == nil {
			t.Fatalf("run %d: no mintlify_api_budget_spent_requests", run)
		}
		p.Stop(t)
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "analytics-ledger-") {
				t.Errorf("run %d left %s beside the state file: the sandbox's spending would outlive the run", run, e.Name())
			}
		}
	}
}
