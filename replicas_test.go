package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// TestReplicasShareTheBudget runs two replicas of the built binary with one
// configuration and one Redis against the fake API: together they never
// send more analytics requests than the organization's budget, restarts
// included, and with Redis away nothing is sent that the shared ledger has
// not paid for; it all resumes when Redis returns.
func TestReplicasShareTheBudget(t *testing.T) {
	t.Parallel()
	redis := testutil.NewRedis(t)
	api := newRecordingAPI(t, fakeapi.Options{Paths: 20, APIKey: "mint_test"})
	dir := t.TempDir()
	file := filepath.Join(dir, "mintlify.yml")
	zone := noonZone()
	// Each replica alone wants 2 projects × 4 windows = 8 first walks.
	writeFile(t, file, `organizations:
  - name: acme
    api_key_file: `+keyFile(t, dir, "key", "mint_test")+`
    analytics_budget: 5
projects:
  - id: docs
    windows: [1d, 7d, 30d, 90d]
    timezone: `+zone+`
    sources: {visitors: {}}
  - id: api
    windows: [1d, 7d, 30d, 90d]
    timezone: `+zone+`
    sources: {visitors: {}}
cluster:
  address: `+redis.Addr+`
  key_prefix: "test:"
`)
	replica := func(name string) *testutil.Exporter {
		return startExporter(t, nil, configArgs(api.URL, file, "--agent.state-file="+filepath.Join(dir, name, "agent.db"))...)
	}
	a, b := replica("a"), replica("b")
	waitMetrics(t, a.Base, 20*time.Second, map[string]float64{spent("acme"): 5, "mintlify_exporter_cluster_up{}": 1})
	waitMetrics(t, b.Base, 20*time.Second, map[string]float64{spent("acme"): 5, "mintlify_exporter_cluster_up{}": 1})
	settle(t, a.Base)
	settle(t, b.Base)
	if n := len(api.analytics("")); n != 5 {
		t.Fatalf("%d analytics requests from two replicas, want the budget of 5", n)
	}

	// A replica killed and started again spends nothing more this hour.
	b.Kill(t)
	b = replica("b")
	waitMetrics(t, b.Base, 20*time.Second, map[string]float64{spent("acme"): 5})
	settle(t, b.Base)

	// Redis away: nothing is paid, so nothing is sent; it comes back by
	// itself.
	redis.Stop()
	waitMetrics(t, a.Base, 20*time.Second, map[string]float64{"mintlify_exporter_cluster_up{}": 0})
	redis.Start()
	waitMetrics(t, a.Base, 20*time.Second, map[string]float64{"mintlify_exporter_cluster_up{}": 1})
	if n := len(api.analytics("")); n != 5 {
		t.Errorf("%d analytics requests after a restart and a Redis outage, want still 5 (the hour is spent)", n)
	}
}
