package refresh

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	kitlog "github.com/go-kit/log"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// TestPlanLoggedAtStartAndOnChange: the plan is logged before the first
// walk (costs estimated), again once the walks told their costs, not again
// while nothing changes, and at once when a reload changes it (it was
// logged only once the reload's new windows had been walked). At info it
// is one line per organization (budget, planned spend, demands, the
// stalest interval); each demand's plan is at debug. At the reference
// configuration the first round of walks takes hours: waiting for it to
// log the plan left the operator without one that long.
func TestPlanLoggedAtStartAndOnChange(t *testing.T) {
	t.Parallel()
	clock := testutil.NewClock(time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC))
	fake := fakeapi.New(fakeapi.Options{APIKey: simKey, Paths: 600, Now: clock.Now})
	b, client := fakeBudgetClient(t, fake, budget.DefaultLimit, clock.Now)
	var windows []analytics.Window
	for _, w := range []string{"1d", "7d", "30d"} {
		win, _ := analytics.ParseWindow(w)
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
	line := regexp.MustCompile(`level=debug msg="analytics refresh plan of a demand" project=docs source=visitors window=(\w+) scope=pages requests_per_walk=(\d+) cost_learned=(\w+) interval=\S+`)
	plan := func() [][]string { return line.FindAllStringSubmatch(logs.String(), -1) }
	summary := regexp.MustCompile(`level=info msg="analytics refresh plan" budget_per_hour=60 planned_requests_per_hour=[\d.]+ demands=(\d+) costs_learned=(\w+) stalest_interval=\S+ stalest=docs/visitors/\w+`)
	summaries := func() [][]string { return summary.FindAllStringSubmatch(logs.String(), -1) }
	infoLines := func() int { return strings.Count(logs.String(), "level=info ") }

	start := plan()
	if len(start) != 3 {
		t.Fatalf("before any walk: %d plan lines of demands, want one per window (3) at debug:\n%s", len(start), logs.String())
	}
	for _, l := range start {
		if l[3] != "false" {
			t.Errorf("window %s logged at start with cost_learned=%s, want false (estimated)", l[1], l[3])
		}
	}
	if got := summaries(); len(got) != 1 || got[0][1] != "3" || got[0][2] != "false" || infoLines() != 1 {
		t.Fatalf("before any walk: want one info line, the organization's plan of 3 demands from estimates:\n%s", logs.String())
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
	if got := summaries(); len(got) != 2 || got[1][2] != "true" {
		t.Errorf("after the first walks: want a second organization line with learned costs:\n%s", logs.String())
	}

	clock.Advance(time.Hour)
	refresh()
	if n := len(plan()); n != 6 || len(summaries()) != 2 {
		t.Errorf("a walk that changed nothing logged %d more plan lines", n-6)
	}

	// A reload adds a window: the changed plan is logged at once.
	w14, _ := analytics.ParseWindow("14d")
	cfg.Projects[0].Windows = append(cfg.Projects[0].Windows, w14)
	if err := s.Update(cfg.Projects); err != nil {
		t.Fatal(err)
	}
	if got := summaries(); len(got) != 3 || got[2][1] != "4" {
		t.Errorf("a reload that added a window: want the plan of 4 demands logged at once:\n%s", logs.String())
	}
	var added bool
	for _, l := range plan()[6:] {
		added = added || l[1] == "14d"
	}
	if !added {
		t.Errorf("the window added by a reload is not in a logged plan:\n%s", logs.String())
	}
	// A reload that changes nothing logs nothing.
	n := len(logs.String())
	if err := s.Update(cfg.Projects); err != nil {
		t.Fatal(err)
	}
	if extra := logs.String()[n:]; extra != "" {
		t.Errorf("a reload that changed nothing logged:\n%s", extra)
	}
}

// TestStalenessNoticeSaysWhatToChange: when the budget plans windows less
// often than --analytics.max-staleness, one sentence says what to change:
// the budget it would take, and an interval of its own only for a late
// window that has none. A file whose 30d already had one (30d:6h) was
// advised to give it 30d:6h.
func TestStalenessNoticeSaysWhatToChange(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		windows []string
		own     bool // the notice may advise a 30d interval of its own
	}{
		{[]string{"1d", "7d", "30d"}, true},
		{[]string{"1d", "7d", "30d:2h"}, false},
	} {
		clock := testutil.NewClock(time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC))
		fake := fakeapi.New(fakeapi.Options{APIKey: simKey, Paths: 600, Now: clock.Now})
		b, client := fakeBudgetClient(t, fake, 12, clock.Now)
		var windows []analytics.Window
		for _, w := range tc.windows {
			win, err := analytics.ParseWindow(w)
			if err != nil {
				t.Fatal(err)
			}
			windows = append(windows, win)
		}
		logs := &testutil.SyncBuffer{}
		cfg := planConfig{Projects: []string{"docs", "api"}, Windows: windows,
			Config: Config{PageSize: apiclient.MaxPageSize, MinInterval: 5 * time.Minute, MaxStaleness: 10 * time.Minute, FinalDayDelay: -1, Now: clock.Now}}.build()
		s, err := New(client, b, cfg, kitlog.NewLogfmtLogger(logs))
		if err != nil {
			t.Fatal(err)
		}
		for range 8 { // until every demand was walked once
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			s.RefreshDue(ctx)
			cancel()
			clock.Advance(time.Hour)
		}
		s.Close()
		m := regexp.MustCompile(`level=info msg="([^"]*max-staleness[^"]*)"`).FindAllStringSubmatch(logs.String(), -1)
		if len(m) == 0 {
			t.Fatalf("%v: no staleness notice:\n%s", tc.windows, logs.String())
		}
		notice := m[0][1]
		if strings.Count(notice, ". ") > 0 || !strings.HasSuffix(notice, ".") {
			t.Errorf("%v: the notice is not one sentence: %q", tc.windows, notice)
		}
		if got := regexp.MustCompile(`to about (\d+) requests per hour`).FindStringSubmatch(notice); got == nil || len(got[1]) < 2 || got[1] <= "12" && len(got[1]) == 2 {
			t.Errorf("%v: the notice names no budget above today's 12: %q", tc.windows, notice)
		}
		if strings.Contains(notice, "30d:") != tc.own {
			t.Errorf("%v: the notice advises an interval of its own for 30d: %v, want %v: %q", tc.windows, !tc.own, tc.own, notice)
		}
		if s.StalenessNotice() != notice {
			t.Errorf("%v: StalenessNotice() = %q, want the logged %q", tc.windows, s.StalenessNotice(), notice)
		}
	}
}
