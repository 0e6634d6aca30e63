package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil/blackbox"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

// TestLedgerSurvivesKill9 gives the built exporter a budget of 4 and
// walks that want 6 requests, kills it with SIGKILL once the API saw the
// 4, and restarts it on the same state directory: within the same hour the
// restarted exporter sends nothing, and its budget shows the 4 spent.
// Without the ledger on disk, a crash-looping exporter would spend its
// hour again at every start.
func TestLedgerSurvivesKill9(t *testing.T) {
	t.Parallel()
	const budget = 4
	api := blackbox.NewRecordingAPI(t, fakeapi.Options{Paths: 20, APIKey: "mint_test"})
	dir := t.TempDir()
	file := filepath.Join(dir, "mintlify.yml")
	zone := blackbox.NoonZone()
	blackbox.WriteFile(t, file, `organizations:
  - name: acme
    api_key_file: `+blackbox.KeyFile(t, dir, "key", "mint_test")+`
    analytics_budget: 4
projects:
  - id: docs
    windows: [1d, 7d, 30d, 90d]
    timezone: `+zone+`
    sources: {visitors: {}}
  - id: api
    windows: [1d, 7d]
    timezone: `+zone+`
    sources: {visitors: {}}
`)
	state := filepath.Join(dir, "state", "agent.db")
	args := blackbox.ConfigArgs(api.URL, file, "--agent.state-file="+state)
	x := startExporter(t, nil, args...)
	blackbox.Eventually(t, 20*time.Second, "the API to see the budget's 4 requests", func() bool { return len(api.Analytics("")) >= budget })
	x.Kill(t)
	killed := time.Now()
	if n := len(api.Analytics("")); n != budget {
		t.Fatalf("%d analytics requests before the kill, want the budget, %d", n, budget)
	}
	ledger := filepath.Join(dir, "state", "analytics-ledger-acme.log")
	data, err := os.ReadFile(ledger)
	if err != nil {
		t.Fatalf("no ledger beside the state file: %v", err)
	}
	if n := len(strings.Fields(string(data))); n != budget {
		t.Errorf("the ledger holds %d send times, want %d:\n%s", n, budget, data)
	}

	x = startExporter(t, nil, args...)
	blackbox.WaitMetrics(t, x.Base, 10*time.Second, map[string]float64{spent("acme"): budget})
	// The scheduler is free to run: every window not walked before the
	// kill is due (those walked are restored from the state directory),
	// only the budget holds it back. A few of its
	// rounds (each ends within 10ms of a walk's end or the next due
	// time) would have started a walk.
	blackbox.Eventually(t, 10*time.Second, "the plan of the restarted exporter", func() bool {
		return len(blackbox.StatusReport(t, x.Base).Demands) == 6
	})
	// A round of the scheduler that holds every due walk back for the
	// budget says when each will go (in about an hour, when the ledger's
	// requests leave the window), not "now": the round that would have
	// started a walk has run, with no guessed number of seconds.
	blackbox.Eventually(t, 0, "a scheduler round that holds every walk back for the budget", func() bool {
		for _, d := range blackbox.StatusReport(t, x.Base).Demands {
			if !d.NextRefreshAt.After(time.Now().Add(50 * time.Minute)) {
				return false
			}
		}
		return true
	})
	if n := len(api.Analytics("")); n != budget {
		t.Errorf("the restarted exporter sent %d analytics requests, want none: the ledger's %d count in this hour", n-budget, budget)
	}
	st := blackbox.StatusReport(t, x.Base)
	for _, d := range st.Demands {
		if d.Running || d.LastRefreshAt.After(killed) {
			t.Errorf("%s/%s walked after the restart: %+v", d.Project, d.Window, d)
		}
	}
	if len(st.Organizations) != 1 || st.Organizations[0].Spent != budget || !st.Organizations[0].NextRequestAt.After(time.Now().Add(50*time.Minute)) {
		t.Errorf("status after the restart: %+v, want %d spent and the next request in about an hour", st.Organizations, budget)
	}
	x.Stop(t)
}
