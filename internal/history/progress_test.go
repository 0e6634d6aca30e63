package history

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// waitFor polls out until re matches, or fails after a while (the
// backfill's own goroutines need real time to run, not the clock).
func waitFor(t *testing.T, out *testutil.SyncBuffer, re *regexp.Regexp) string {
	t.Helper()
	var m string
	testutil.Eventually(t, 0, "a line matching "+re.String(), func() bool {
		m = re.FindString(out.String())
		return m != ""
	}, out.String)
	return m
}

// TestBackfillSaysWhatItWaitsFor: with a budget of 2 an hour on an
// injected clock, 5 walks of 1 request: the first two leave at once, then
// the backfill says every period that it waits for the budget, when the
// next request leaves, and an ETA that counts the hours of waiting; the
// clock moves an hour at a time and it finishes, its last line saying
// where the output is and what to run next.
func TestBackfillSaysWhatItWaitsFor(t *testing.T) {
	t.Parallel()
	clock := testutil.NewClock(today)
	r := newRig(t, fakeapi.Options{Paths: 250, Now: clock.Now}, 2, time.Hour)
	progress := &testutil.SyncBuffer{}
	out := filepath.Join(t.TempDir(), "history.om")
	cfg := Config{Projects: visitorsOnly(nil, nil, "docs"), From: day("2026-03-10"), To: day("2026-03-14"), Output: out,
		Now: clock.Now, ProgressEvery: time.Millisecond}
	done := make(chan error, 1)
	go func() { done <- Backfill(context.Background(), r.client, r.budget, cfg, progress) }()

	hold := time.Hour + time.Hour/100 // a request counts for the window and a hundredth
	next := today.Add(hold)
	// 3 requests to go after the first two: the 3rd leaves at next, the 5th
	// a window later.
	waiting := fmt.Sprintf(`backfill: 2/5 walks, 2/5 requests; waiting for the analytics budget \(2/h\): next request at %s \(in 1 h 1 min\); ETA 2 h 1 min\n`,
		regexp.QuoteMeta(next.Local().Format(time.TimeOnly)))
	waitFor(t, progress, regexp.MustCompile(waiting))
	// The plan is the first line: the first walk (1 request) made to learn
	// its cost left at once, no line came before it.
	first := strings.SplitN(progress.String(), "\n", 2)[0]
	if first != "backfill: 5 walks (1 projects × 5 days; visitors 1d): 0 kept in "+out+".days from an earlier run, 5 to fetch, "+
		"5 requests (visitors 5): 4 requests to go for 4 walks at 2/h (a walk costs what the first of its project, source and window did): ETA 2 h 1 min" {
		t.Errorf("first line %q", first)
	}

	clock.Advance(hold)
	r.budget.Wake()
	waitFor(t, progress, regexp.MustCompile(`backfill: 4/5 walks, 4/5 requests; waiting for the analytics budget \(2/h\): next request at \S+ \(in 1 h 1 min\); ETA 1 h 1 min\n`))
	clock.Advance(hold)
	r.budget.Wake()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(progress.String()), "\n")
	if got := lines[len(lines)-2]; got != "backfill: fetched 5/5 walks, 5 requests in 2h1m12s" {
		t.Errorf("second last line %q", got)
	}
	last := lines[len(lines)-1]
	for _, want := range []string{"backfill: done: ", " in " + out + "; next: promtool tsdb create-blocks-from openmetrics --max-block-duration=486h " + out + " ./blocks", "--storage.tsdb.retention.time=15d"} {
		if !strings.Contains(last, want) {
			t.Errorf("last line %q lacks %q", last, want)
		}
	}
	if _, err := os.Stat(out + ".days"); !os.IsNotExist(err) {
		t.Errorf("the default state directory is left behind: %v", err)
	}
	if n := r.fake.Requests(fakeapi.Visitors); n != 5 {
		t.Errorf("%d requests, want 5", n)
	}
}

// TestProgressBar: on a terminal the bar's description carries the wait
// and the ETA (the bar's own prediction is off: it would extrapolate the
// free burst).
func TestProgressBar(t *testing.T) {
	t.Parallel()
	clock := testutil.NewClock(today)
	r := newRig(t, fakeapi.Options{Now: clock.Now}, 3, time.Hour)
	for range 3 {
		if !r.budget.TryTake() {
			t.Fatal("budget")
		}
	}
	out := &testutil.SyncBuffer{}
	rep := newReporter(out, true, r.budget, clock.Now, 10)
	rep.plan(10, "backfill: the plan")
	rep.step(1)
	rep.show()
	for _, want := range []string{"1/10 walks, 1/10 requests; waiting for the analytics budget (3/h)", "(in 1 h 1 min); ETA 3 h 1 min", "walks"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("bar %q lacks %q", out.String(), want)
		}
	}
}

// TestBackfillRetentionWarning: a range longer than Prometheus' default
// retention is warned about with the flag and value to set; a short one
// is not.
func TestBackfillRetentionWarning(t *testing.T) {
	t.Parallel()
	r := newRig(t, fakeapi.Options{Paths: 3}, 1000, 0)
	_, progress, err := r.run(t, context.Background(), Config{Projects: visitorsOnly(nil, nil, "docs"), TotalsOnly: true, From: day("2026-01-19"), To: day("2026-01-20")})
	if err != nil {
		t.Fatal(err)
	}
	// today is 2026-03-20 15:00 UTC: 60 days and 15 hours after 2026-01-19.
	if !strings.Contains(progress, "backfill: warning: 2026-01-19 reaches back 61d, beyond the 15d Prometheus keeps by default: run it with --storage.tsdb.retention.time=61d or longer") {
		t.Errorf("no retention warning:\n%s", progress)
	}
	_, progress, err = r.run(t, context.Background(), Config{Projects: visitorsOnly(nil, nil, "docs"), TotalsOnly: true, From: day("2026-03-10"), To: day("2026-03-19")})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(progress, "warning") {
		t.Errorf("a warning for 10 days:\n%s", progress)
	}
}

// TestBackfillStdoutStateDir: with standard output the default state
// directory is ./mintlify-backfill.days, gone after success.
func TestBackfillStdoutStateDir(t *testing.T) {
	t.Chdir(t.TempDir())
	r := newRig(t, fakeapi.Options{Paths: 3}, 1000, 0)
	cfg := Config{Projects: visitorsOnly(nil, nil, "docs"), From: day("2026-03-18"), To: day("2026-03-19"), StateDir: ""}
	var out strings.Builder
	cfg.Stdout, cfg.Now = &out, r.now
	var progress strings.Builder
	if err := Backfill(context.Background(), r.client, r.budget, cfg, &progress); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(DefaultStateDir); !os.IsNotExist(err) {
		t.Errorf("%s left behind: %v", DefaultStateDir, err)
	}
	if !strings.HasSuffix(out.String(), "# EOF\n") || !strings.Contains(progress.String(), "written to standard output; next: promtool tsdb create-blocks-from openmetrics --max-block-duration=486h FILE ./blocks") {
		t.Errorf("output or last line:\n%s", progress.String())
	}
}
