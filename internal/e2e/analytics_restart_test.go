package e2e

import (
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/snapstore"
	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil/blackbox"
)

// TestAnalyticsSurviveKill9 walks 3 projects x 3 windows x 2 sources with
// the built exporter, kills it with SIGKILL and starts it again on the
// same state directory (issue 37): the first scrape after /-/ready (and so
// within a second of it on a machine that is not overloaded) has every
// analytics series back with the same values and refresh timestamps,
// each demand's next walk is where the killed process had planned it, and
// the API sees no analytics request but those the plan had due in the
// first minute anyway (computed from the killed process's plan: none, on
// these hour-long intervals). Without the state directory's snapshots
// every demand is due at the start and walked at once.
func TestAnalyticsSurviveKill9(t *testing.T) {
	t.Parallel()
	api := blackbox.NewRecordingAPI(t, fakeapi.Options{Paths: 20, APIKey: "mint_test"})
	dir := t.TempDir()
	file := filepath.Join(dir, "mintlify.yml")
	zone := blackbox.NoonZone()
	var projects strings.Builder
	for _, p := range []string{"docs", "api", "blog"} {
		fmt.Fprintf(&projects, "  - id: %s\n    windows: [1d, 7d, 30d]\n    timezone: %s\n    sources: {visitors: {}, searches: {}}\n", p, zone)
	}
	blackbox.WriteFile(t, file, `organizations:
  - name: acme
    api_key_file: `+blackbox.KeyFile(t, dir, "key", "mint_test")+`
    analytics_budget: 100
projects:
`+projects.String())
	state := filepath.Join(dir, "state", "agent.db")
	args := blackbox.ConfigArgs(api.URL, file, "--agent.state-file="+state)

	x := startExporter(t, nil, args...)
	var before status.Report
	blackbox.Eventually(t, 30*time.Second, "every demand walked once", func() bool {
		var err error
		if before, err = blackbox.TryStatusReport(x.Base); err != nil {
			return false
		}
		return len(before.Demands) == 18 && !slices.ContainsFunc(before.Demands, func(d status.Demand) bool {
			return d.Running || d.LastSuccessAt.IsZero()
		})
	})
	// /metrics serves a walk's end within its encoding interval (500ms):
	// the series are taken once two scrapes in a row agree and show every
	// walk's success.
	var series map[string]float64
	blackbox.Eventually(t, 10*time.Second, "every demand's walk on /metrics", func() bool {
		m, err := blackbox.TryScrape(t.Context(), x.Base)
		if err != nil {
			return false
		}
		last := series
		series = analyticsSeries(m)
		ok := 0
		for k, v := range series {
			if strings.HasPrefix(k, "mintlify_analytics_refresh_success{") && v == 1 {
				ok++
			}
		}
		return ok == 18 && maps.Equal(last, series)
	})
	x.Kill(t)
	killedAt := time.Now()
	sentBefore := len(api.Analytics(""))
	if n := len(series); n < 18*3 {
		t.Fatalf("%d analytics series before the kill: the walks exported too little to prove a restore", n)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "state", snapstore.DirName, "acme", "*.snap")); len(files) != 18 {
		t.Fatalf("%d snapshot files in the state directory, want one per demand, 18", len(files))
	}
	// What the killed process had due within a minute of its restart.
	restartBy := killedAt.Add(time.Minute)
	wantDue := 0
	for _, d := range before.Demands {
		if !d.NextRefreshAt.After(restartBy) {
			wantDue += d.Cost
		}
	}

	x = startExporter(t, nil, args...)
	var ready time.Time
	if !testutil.WaitUntil(testutil.Patience, func() bool {
		_, code, err := testutil.Get(t.Context(), x.Base+"/-/ready")
		ready = time.Now()
		return err == nil && code == http.StatusOK
	}) {
		t.Fatalf("the restarted exporter never got ready:\n%s", x.Stderr)
	}
	// The series must be in the first scrape after ready: the restore is
	// done before the exporter reports ready, so this is not a race won
	// by a quick scrape. How long that scrape took is logged, not judged:
	// on a quiet machine a few ms, under make test-loaded seconds.
	after := analyticsSeries(blackbox.Scrape(t, x.Base))
	t.Logf("every series served %s after /-/ready answered", time.Since(ready).Round(time.Millisecond))
	var diff []string
	for k, v := range series {
		if got, ok := after[k]; !ok || got != v {
			diff = append(diff, fmt.Sprintf("%s: %v before the kill, %v (present %v) at the first scrape after ready", k, v, got, ok))
		}
	}
	for k := range after {
		if _, ok := series[k]; !ok {
			diff = append(diff, k+": new after the restart")
		}
	}
	slices.Sort(diff)
	if len(diff) > 0 {
		t.Errorf("%d of %d series differ after the restart:\n%s", len(diff), len(series), strings.Join(diff, "\n"))
	}

	// The plan resumed where it stood: every demand's next walk is the one
	// the killed process had planned. A round of the scheduler that found
	// one due would have started it by now; settle gives it its rounds.
	settle(t, x.Base)
	now := demandsByKey(blackbox.StatusReport(t, x.Base))
	for k, d := range demandsByKey(before) {
		if got := now[k]; !got.NextRefreshAt.Equal(d.NextRefreshAt) || !got.LastSuccessAt.Equal(d.LastSuccessAt) {
			t.Errorf("%s: next walk %s, last success %s after the restart; %s and %s before the kill", k,
				got.NextRefreshAt, got.LastSuccessAt, d.NextRefreshAt, d.LastSuccessAt)
		}
	}
	if n := len(api.Analytics("")) - sentBefore; n != wantDue {
		t.Errorf("the restarted exporter sent %d analytics requests, want the %d its plan had due within a minute", n, wantDue)
	}
	x.Stop(t)
}

// analyticsSeries are the series of the analytics data and of its plan's
// status: every series labelled with a project, but the API client's
// request counters (a new process counts from 0).
func analyticsSeries(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if strings.Contains(k, "project=") && !strings.HasPrefix(k, "mintlify_api_") {
			out[k] = v
		}
	}
	return out
}

// demandsByKey indexes the status page's demands by
// "project/source/window".
func demandsByKey(r status.Report) map[string]status.Demand {
	out := map[string]status.Demand{}
	for _, d := range r.Demands {
		out[d.Project+"/"+d.Source+"/"+d.Window] = d
	}
	return out
}
