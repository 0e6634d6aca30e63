package refresh

import (
	"context"
	"regexp"
	"testing"
	"time"

	kitlog "github.com/go-kit/log"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/visitors"
)

// TestPlanLoggedAtStartAndOnChange: the plan is logged before the first
// walk (one line per demand, costs estimated), again once the walks told
// their costs, not again while nothing changes, and when a reload changes
// it. At the reference configuration the first round of walks takes hours:
// waiting for it to log the plan left the operator without one that long.
func TestPlanLoggedAtStartAndOnChange(t *testing.T) {
	t.Parallel()
	clock := testutil.NewClock(time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC))
	fake := fakeapi.New(fakeapi.Options{APIKey: simKey, Paths: 600, Now: clock.Now})
	b, client := fakeBudgetClient(t, fake, budget.DefaultLimit, clock.Now)
	var windows []visitors.Window
	for _, w := range []string{"1d", "7d", "30d"} {
		win, _ := visitors.ParseWindow(w)
		windows = append(windows, win)
	}
	logs := &testutil.SyncBuffer{}
	cfg := planConfig{Projects: []string{"docs"}, Windows: windows,
		Config: Config{PageSize: apiclient.MaxPageSize, MinInterval: 5 * time.Minute, FinalDayDelay: -1, Now: clock.Now}}.build()
	s, err := New(client, b, cfg, kitlog.NewLogfmtLogger(logs))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	line := regexp.MustCompile(`msg="analytics refresh plan" project=docs source=visitors window=(\w+) scope=pages requests_per_walk=(\d+) cost_learned=(\w+) interval=\S+`)
	plan := func() [][]string { return line.FindAllStringSubmatch(logs.String(), -1) }

	start := plan()
	if len(start) != 3 {
		t.Fatalf("before any walk: %d plan lines, want one per window (3):\n%s", len(start), logs.String())
	}
	for _, l := range start {
		if l[3] != "false" {
			t.Errorf("window %s logged at start with cost_learned=%s, want false (estimated)", l[1], l[3])
		}
	}

	refresh := func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		s.RefreshDue(ctx)
	}
	refresh() // 600 paths: 3 requests per walk, 9 in all
	learned := plan()[3:]
	if len(learned) != 3 {
		t.Fatalf("after the first walks: %d new plan lines, want 3:\n%s", len(learned), logs.String())
	}
	for _, l := range learned {
		if l[2] != "3" || l[3] != "true" {
			t.Errorf("window %s: requests_per_walk=%s cost_learned=%s, want 3 and true", l[1], l[2], l[3])
		}
	}

	clock.Advance(time.Hour)
	refresh()
	if n := len(plan()); n != 6 {
		t.Errorf("a walk that changed nothing logged %d more plan lines", n-6)
	}

	// A reload adds a window: the plan changes once its cost is known.
	w14, _ := visitors.ParseWindow("14d")
	cfg.Projects[0].Windows = append(cfg.Projects[0].Windows, w14)
	if err := s.Update(cfg.Projects); err != nil {
		t.Fatal(err)
	}
	refresh()
	var added bool
	for _, l := range plan()[6:] {
		added = added || l[1] == "14d"
	}
	if !added {
		t.Errorf("the window added by a reload is not in a logged plan:\n%s", logs.String())
	}
}
