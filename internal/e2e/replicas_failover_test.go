//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil/blackbox"
)

// TestReplicasFollowASentinelFailover runs three replicas of the built
// binary, the agent job gateway on, on a Redis primary with one replica
// and three Redis Sentinels: ten clients submit jobs (with an
// Idempotency-Key) to any replica while the Redis primary is killed with
// SIGKILL. The sentinels promote the replica and the exporters follow it:
// every acknowledged job is tracked and ends (0 lost: each record was on
// the replica before its acknowledgement, WAIT), none is created twice
// upstream, and the organization's budget is spent once cluster-wide.
// It logs the takeover time that docs/operations.md quotes.
//
// In the e2e build (make e2e), not in make test: a failover waits on the
// sentinels' judgement (down-after 1 s, an election) and on jobs of
// seconds, 30-40 s of wall clock, and three exporters, five Redis
// processes and the clients would take a large share of make test's 60 s
// on two cores. internal/ops/store's TestSentinelFailoverIsFollowed checks
// the client's part of it in make test, with a failover the sentinels
// start at once.
func TestReplicasFollowASentinelFailover(t *testing.T) {
	t.Parallel()
	const (
		lease     = 3 * time.Second
		downAfter = time.Second
		budget    = 5
	)
	setup := testutil.NewSentinelSetup(t, "mintlify", downAfter)
	api := blackbox.NewRecordingAPI(t, fakeapi.Options{Projects: []string{"p1", "p2"}, Paths: 20, APIKey: "mint_test", JobDuration: 2 * time.Second})
	dir := t.TempDir()
	zone := blackbox.NoonZone()
	// Each replica alone wants 2 projects x 4 windows = 8 first walks,
	// more than the budget of 5.
	config := `organizations:
  - name: acme
    api_key_file: ` + blackbox.KeyFile(t, dir, "key", "mint_test") + `
    analytics_budget: ` + fmt.Sprint(budget) + `
projects:
  - id: p1
    windows: [1d, 7d, 30d, 90d]
    timezone: ` + zone + `
    sources: {visitors: {}}
    agent_jobs: true
  - id: p2
    windows: [1d, 7d, 30d, 90d]
    timezone: ` + zone + `
    sources: {visitors: {}}
cluster:
  sentinel:
    master_name: mintlify
    addresses: [` + strings.Join(setup.Sentinels, ", ") + `]
  key_prefix: "failover:"
  timeout: 500ms
  lease_duration: ` + lease.String() + `
  wait_timeout: 500ms
  forward_secret_file: ` + blackbox.KeyFile(t, dir, "forward-secret", "a secret the replicas share") + `
`
	var replicas []*testutil.Exporter
	var baseURLs []string
	for _, name := range []string{"a", "b", "c"} {
		// Each replica's own advertise_url: the default, this host's
		// first non-loopback address, is not where a test's exporter
		// listens.
		addr := testutil.FreeAddr(t)
		file := filepath.Join(dir, name+".yml")
		blackbox.WriteFile(t, file, config+"  advertise_url: http://"+addr+"\n")
		x := testutil.StartExporterAt(t, exporterBin, addr, nil, blackbox.ConfigArgs(api.URL, file, "--web.enable-agent-api", "--agent.poll-interval=200ms",
			"--agent.state-file="+filepath.Join(dir, name, "agent.db"))...)
		testutil.WaitHTTP(t, x.Base+"/-/ready", 15*time.Second, nil)
		replicas, baseURLs = append(replicas, x), append(baseURLs, x.Base)
	}
	bases := func() []string { return baseURLs } // none is killed here
	waitSpent(t, replicas[0].Base, "acme", budget)

	tally := &jobTally{acked: map[string]string{}, unanswered: map[string]bool{}}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range 10 {
		c := jobClient{id: i, withKey: true}
		wg.Go(func() { c.run(ctx, tally, bases) })
	}
	acked := func() int {
		tally.mu.Lock()
		defer tally.mu.Unlock()
		return len(tally.acked)
	}
	burstOn := func(n int, what string) {
		t.Helper()
		from := acked()
		blackbox.Eventually(t, 0, fmt.Sprintf("%d more acknowledged jobs %s", n, what), func() bool { return acked() >= from+n })
	}

	burstOn(8, "before the Redis primary is killed")
	before := acked()
	killedAt := time.Now()
	setup.Primary.Stop() // SIGKILL
	t.Logf("Redis primary killed after %d acknowledged jobs", before)
	blackbox.Eventually(t, 0, "the sentinels promoting the replica", func() bool {
		return setup.MasterAddr(setup.Sentinels[0]) == setup.Replica.Addr
	})
	promoted := time.Since(killedAt)
	blackbox.Eventually(t, 0, "a job acknowledged after the failover", func() bool { return acked() > before })
	takeover := time.Since(killedAt)
	burstOn(5, "after the failover")
	stop()
	wg.Wait()
	t.Logf("Redis primary killed: the sentinels promoted the replica after %s, the first job was acknowledged again after %s",
		promoted.Round(10*time.Millisecond), takeover.Round(10*time.Millisecond))

	var tracked map[string]bool
	blackbox.Eventually(t, 60*time.Second, "every tracked job terminal", func() bool {
		jobs, err := listJobs(bases()[0])
		if err != nil {
			return false
		}
		tracked = map[string]bool{}
		for _, v := range jobs {
			if v.Status != "completed" && v.Status != "failed" {
				return false
			}
			tracked[v.ID] = true
		}
		return true
	})
	tally.mu.Lock()
	defer tally.mu.Unlock()
	lost := 0
	for id := range tally.acked {
		if !tracked[id] {
			lost++
			t.Errorf("acknowledged job %s is not tracked after the failover", id)
		}
	}
	twice := 0
	for prompt, n := range api.Fake.Prompts("p1") {
		if n > 1 {
			twice++
			t.Errorf("prompt %q created %d times upstream", prompt, n)
		}
	}
	unknown := unknownCreates(t, bases())
	if up := api.Fake.JobCount(); up < len(tracked) || up > len(tracked)+unknown {
		t.Errorf("%d jobs upstream, %d tracked and %d creates of unknown outcome", up, len(tracked), unknown)
	}
	// The budget: spent once across the replicas and the failover (the
	// promoted replica held the ledger; the hour is spent).
	waitSpent(t, bases()[0], "acme", budget)
	if n := len(api.Analytics("")); n != budget {
		t.Errorf("%d analytics requests from three replicas through a failover, want the budget of %d", n, budget)
	}
	t.Logf("acknowledged %d, tracked %d, created upstream %d, unknown outcome %d, keyed retries %d; lost %d, twice %d",
		len(tally.acked), len(tracked), api.Fake.JobCount(), unknown, tally.retries, lost, twice)
}
