//go:build e2e

package e2e

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/collector"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil/blackbox"
)

// TestReplicasShareTheBudget runs two replicas of the built binary with one
// configuration and one Redis against the fake API: together they never
// send more analytics requests than the organization's budget, restarts
// included, and with Redis away nothing is sent that the shared ledger has
// not paid for; it all resumes when Redis returns.
func TestReplicasShareTheBudget(t *testing.T) {
	t.Parallel()
	redis := testutil.NewRedis(t)
	api := blackbox.NewRecordingAPI(t, fakeapi.Options{Paths: 20, APIKey: "mint_test"})
	dir := t.TempDir()
	file := filepath.Join(dir, "mintlify.yml")
	zone := blackbox.NoonZone()
	// Each replica alone wants 2 projects × 4 windows = 8 first walks.
	blackbox.WriteFile(t, file, `organizations:
  - name: acme
    api_key_file: `+blackbox.KeyFile(t, dir, "key", "mint_test")+`
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
		return startExporter(t, nil, blackbox.ConfigArgs(api.URL, file, "--agent.state-file="+filepath.Join(dir, name, "agent.db"))...)
	}
	a, b := replica("a"), replica("b")
	waitSpent(t, a.Base, "acme", 5)
	waitSpent(t, b.Base, "acme", 5)
	settle(t, a.Base)
	settle(t, b.Base)
	if n := len(api.Analytics("")); n != 5 {
		t.Fatalf("%d analytics requests from two replicas, want the budget of 5", n)
	}

	// A replica killed and started again spends nothing more this hour.
	b.Kill(t)
	b = replica("b")
	waitSpent(t, b.Base, "acme", 5)
	settle(t, b.Base)

	// Redis away: nothing is paid, so nothing is sent; it comes back by
	// itself.
	redis.Stop()
	blackbox.WaitMetrics(t, a.Base, 20*time.Second, map[string]float64{"mintlify_exporter_cluster_up{}": 0})
	redis.Start()
	blackbox.WaitMetrics(t, a.Base, 20*time.Second, map[string]float64{"mintlify_exporter_cluster_up{}": 1})
	if n := len(api.Analytics("")); n != 5 {
		t.Errorf("%d analytics requests after a restart and a Redis outage, want still 5 (the hour is spent)", n)
	}
}

// waitSpent waits until the replica's status page shows org's shared
// ledger holding spent requests (the budget series are the primary's
// alone; every replica's status page reads the shared ledger).
func waitSpent(t *testing.T, base, org string, spent int) {
	t.Helper()
	blackbox.Eventually(t, 20*time.Second, fmt.Sprintf("%s spent %d", org, spent), func() bool {
		r, err := blackbox.TryStatusReport(base)
		if err != nil {
			return false
		}
		for _, o := range r.Organizations {
			if o.Name == org {
				return o.Spent == spent
			}
		}
		return false
	})
}

// haReplica is one replica of TestReplicasActAsOne.
type haReplica struct {
	name string
	x    *testutil.Exporter
}

// TestReplicasActAsOne runs three replicas of the built binary on one Redis
// against the fake API, which enforces the organization's budget: each
// demand is walked once per planned interval between them; the replicas
// hold the same snapshots (the same shared versions); only the primary
// exports the data, so a scrape of every replica counts each series once;
// when the primary is killed another takes over within the lease, serving
// the same values without a request; a replica started again serves the
// data before it sends anything; Redis stopped and started again crashes
// nothing and sends nothing unpaid.
func TestReplicasActAsOne(t *testing.T) {
	t.Parallel()
	const (
		interval = 8 * time.Second
		lease    = 3 * time.Second
		budget   = 3000
	)
	redis := testutil.NewRedis(t)
	api := blackbox.NewRecordingAPI(t, fakeapi.Options{Paths: 20, APIKey: "mint_test", AnalyticsBudget: budget})
	dir := t.TempDir()
	file := filepath.Join(dir, "mintlify.yml")
	blackbox.WriteFile(t, file, `organizations:
  - name: acme
    api_key_file: `+blackbox.KeyFile(t, dir, "key", "mint_test")+`
    analytics_budget: `+fmt.Sprint(budget)+`
projects:
  - id: docs
    windows: [1d, 7d]
    timezone: `+blackbox.NoonZone()+`
    sources: {visitors: {}, searches: {}, feedback: {}}
cluster:
  address: `+redis.Addr+`
  key_prefix: "ha:"
  timeout: 500ms
  lease_duration: `+lease.String()+`
`)
	start := func(name string) *haReplica {
		return &haReplica{name: name, x: startExporter(t, nil, "--config.file="+file, "--mintlify.api-url="+api.URL,
			"--analytics.min-interval="+interval.String(), "--mintlify.max-retries=0", "--analytics.site-totals-interval=0s",
			"--agent.state-file="+filepath.Join(dir, name, "agent.db"))}
	}
	replicas := []*haReplica{start("a"), start("b"), start("c")}
	const demandCount = 6 // 3 sources × 2 windows

	// versions reads each replica's shared versions by demand.
	versions := func(r *haReplica) (map[string]int64, *status.Cluster) {
		rep, err := blackbox.TryStatusReport(r.x.Base)
		if err != nil {
			return nil, nil
		}
		out := map[string]int64{}
		for _, d := range rep.Demands {
			if d.Exported {
				out[d.Source+"/"+d.Window] = d.SharedVersion
			}
		}
		return out, rep.Exporter.Cluster
	}
	// converged waits until every replica holds every demand at one
	// version, with exactly one primary, and returns the primary.
	converged := func(what string) *haReplica {
		t.Helper()
		var primary *haReplica
		blackbox.Eventually(t, 30*time.Second, what+": one primary, every replica at the same versions", func() bool {
			primary = nil
			var first map[string]int64
			for _, r := range replicas {
				v, c := versions(r)
				if c == nil || !c.RedisUp || len(v) != demandCount || slices.Contains(slices.Collect(maps.Values(v)), 0) {
					return false
				}
				if first == nil {
					first = v
				} else if !maps.Equal(first, v) {
					return false
				}
				if c.Primary {
					if primary != nil {
						return false
					}
					primary = r
				}
			}
			return primary != nil
		})
		return primary
	}
	// counted checks that the data series appear on the primary alone.
	counted := func(primary *haReplica) map[string]float64 {
		t.Helper()
		var data map[string]float64
		for _, r := range replicas {
			m := sourceSeries(blackbox.Scrape(t, r.x.Base))
			if r == primary {
				data = m
			} else if len(m) != 0 {
				t.Errorf("replica %s (not the primary) exports %d data series: a scrape of every replica would count them twice: %v", r.name, len(m), slices.Sorted(maps.Keys(m)))
			}
		}
		if len(data) == 0 {
			t.Fatalf("the primary %s exports no data", primary.name)
		}
		return data
	}

	primary := converged("start")
	counted(primary)

	// Let every demand be walked twice more, scraping every replica
	// throughout.
	startVersions, _ := versions(primary)
	blackbox.Eventually(t, 4*interval, "every demand walked twice more", func() bool {
		for _, r := range replicas {
			blackbox.Scrape(t, r.x.Base)
		}
		v, _ := versions(primary)
		for k, n := range startVersions {
			if v[k] < n+2 {
				return false
			}
		}
		return true
	})
	primary = converged("after two intervals")
	// /metrics serves snapshots encoded off the scrape path, up to
	// collector.DefaultEncodeInterval after they were published: the
	// primary's answer belongs to its versions once a scrape more than two
	// encode intervals after those versions were first seen (and none
	// since) reads the same as the scrape before it.
	var before map[string]float64
	var beforeVersions map[string]int64
	var seenAt time.Time
	blackbox.Eventually(t, 30*time.Second, "the primary's answer caught up with its snapshots", func() bool {
		v, _ := versions(primary)
		data := counted(primary)
		if !maps.Equal(v, beforeVersions) {
			before, beforeVersions, seenAt = data, v, time.Now()
			return false
		}
		stable := maps.Equal(data, before) && time.Since(seenAt) > 2*collector.DefaultEncodeInterval
		before = data
		return stable
	})

	// Kill -9 the primary: another takes over within the lease and serves
	// what the dead one served, without a request of its own.
	killedAt := time.Now()
	primary.x.Kill(t)
	alive := slices.DeleteFunc(slices.Clone(replicas), func(r *haReplica) bool { return r == primary })
	var next *haReplica
	blackbox.Eventually(t, 3*lease, "a new primary", func() bool {
		for _, r := range alive {
			if _, c := versions(r); c != nil && c.Primary {
				next = r
				return true
			}
		}
		return false
	})
	// The takeover runs on the replicas' wall clock, which a busy machine
	// stretches by as long as it deschedules them: the bound is the lease
	// and one renew period plus 5s of that, not a measurement.
	takeover := time.Since(killedAt)
	t.Logf("takeover of the primary after kill -9: %s (lease %s)", takeover.Round(10*time.Millisecond), lease)
	if takeover > lease+lease/3+5*time.Second {
		t.Errorf("takeover took %s, want within the lease %s and one renew period", takeover, lease)
	}
	v, _ := versions(next)
	after := sourceSeries(blackbox.Scrape(t, next.x.Base))
	switch v2, _ := versions(next); {
	case !maps.Equal(v, beforeVersions) || !maps.Equal(v2, beforeVersions):
		t.Logf("a walk ended during the takeover; values not compared")
	case !maps.Equal(after, before):
		t.Errorf("the new primary serves other values for the same snapshots:\n%s", diffSeries(before, after))
	}

	// The killed replica started again serves the data before it sends
	// a request of its own.
	restarted := start(primary.name)
	blackbox.Eventually(t, 10*time.Second, "restarted replica serves every demand", func() bool {
		v, _ := versions(restarted)
		return len(v) == demandCount
	})
	if n := sumPrefix(blackbox.Scrape(t, restarted.x.Base), "mintlify_api_requests_total{"); n != 0 {
		t.Errorf("the restarted replica sent %v requests before serving data, want 0", n)
	}
	replicas = append(alive, restarted)

	// Redis away for a while: no crash, nothing sent unpaid, the primary
	// keeps serving the last data; it all resumes by itself.
	redis.Stop()
	stoppedAt := time.Now()
	for _, r := range replicas {
		blackbox.WaitMetrics(t, r.x.Base, 10*time.Second, map[string]float64{"mintlify_exporter_cluster_up{}": 0})
	}
	time.Sleep(interval) // real time: Redis is away for a planned interval of the replicas' wall clock
	restartedAt := time.Now()
	redis.Start()
	for _, r := range replicas {
		blackbox.WaitMetrics(t, r.x.Base, 20*time.Second, map[string]float64{"mintlify_exporter_cluster_up{}": 1})
	}
	for _, s := range api.Analytics("") {
		if s.At.After(stoppedAt.Add(time.Second)) && s.At.Before(restartedAt) {
			t.Errorf("an analytics request at %s while Redis was away: nothing could have paid for it", s.At.Format(time.StampMilli))
		}
	}
	// The restarted Redis has no data (no persistence in the test): the
	// replicas walk again, once each, and converge.
	converged("after Redis came back")

	// One walk per demand per planned interval, cluster-wide, and nothing
	// the API refused.
	walks := map[string][]time.Time{}
	for _, s := range api.Analytics("") {
		walks[s.Endpoint+" "+s.Range] = append(walks[s.Endpoint+" "+s.Range], s.At)
	}
	for demand, times := range walks {
		for i := 1; i < len(times); i++ {
			if gap := times[i].Sub(times[i-1]); gap < interval/2 {
				t.Errorf("%s walked twice %s apart, want once per interval (%s)", demand, gap.Round(time.Millisecond), interval)
			}
		}
	}
	t.Logf("%d analytics requests over %d demands (dates), %d refused", len(api.Analytics("")), len(walks), api.Fake.AnalyticsRejections())
	if r := api.Fake.AnalyticsRejections(); r != 0 {
		t.Errorf("the API refused %d requests over its budget", r)
	}
	for _, r := range replicas {
		if strings.Contains(r.x.Stderr.String(), "panic") {
			t.Errorf("replica %s panicked:\n%s", r.name, r.x.Stderr.String())
		}
	}
}

// sourceSeries keeps the analytics data series of a scrape: the families of
// the sources, not the exporter's own or the plan's status.
func sourceSeries(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if strings.HasPrefix(k, "mintlify_") && !strings.HasPrefix(k, "mintlify_exporter_") && !strings.HasPrefix(k, "mintlify_analytics_") &&
			!strings.HasPrefix(k, "mintlify_api_") && !strings.HasPrefix(k, "mintlify_agent_") && !strings.HasPrefix(k, "mintlify_web_") {
			out[k] = v
		}
	}
	return out
}

func sumPrefix(m map[string]float64, prefix string) float64 {
	var n float64
	for k, v := range m {
		if strings.HasPrefix(k, prefix) {
			n += v
		}
	}
	return n
}

func diffSeries(a, b map[string]float64) string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			out = append(out, fmt.Sprintf("%s: %v -> %v", k, v, w))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, "new "+k)
		}
	}
	slices.Sort(out)
	if len(out) > 20 {
		out = append(out[:20], "...")
	}
	return strings.Join(out, "\n")
}
