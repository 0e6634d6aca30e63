package refresh

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// sandboxScheduler is the plan `make run` starts (--mintlify.sandbox:
// its projects, every source with its settings, windows 1d, 7d and 30d,
// the plan flags' defaults) under a budget of limit, against the sandbox's
// fake API with the real service's quota, on the bubble's clock. Call it in
// a synctest bubble; it runs until the test ends.
func sandboxScheduler(t *testing.T, limit int) (*Scheduler, *budget.Budget) {
	t.Helper()
	fake := fakeapi.New(fakeapi.Options{APIKey: simKey, AnalyticsBudget: fakeapi.AnalyticsLimit})
	b, err := budget.New(budget.Config{Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	client, err := apiclient.New(apiclient.Config{BaseURL: "http://fake.invalid", APIKey: simKey, AnalyticsBudget: b,
		HTTPClient: &http.Client{Transport: handlerTransport{fake}}})
	if err != nil {
		t.Fatal(err)
	}
	windows := parseWindows(t, "1d", "7d", "30d")
	var specs []sources.Spec
	for _, name := range fakeapi.SandboxSources() {
		spec := sources.Spec{Name: name, Settings: map[string]int{}}
		def, _ := sources.ByName(name)
		for _, st := range def.Settings {
			if v, ok := fakeapi.SandboxSettings[st.Flag]; ok && st.Flag != "" {
				spec.Settings[st.Key] = v
			}
		}
		specs = append(specs, spec)
	}
	cfg := planConfig{Projects: fakeapi.SandboxProjects, Windows: windows, Sources: specs, Config: Config{
		PageSize: apiclient.MaxPageSize, MinInterval: DefaultMinInterval, MaxStaleness: DefaultMaxStaleness,
		FinalDayDelay: DefaultFinalDayDelay, SiteInterval: DefaultSiteInterval, StateDir: t.TempDir()}}.build()
	s, err := New(client, b, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return s, b
}

// TestSandboxFirstRoundWithinAMinute: on the sandbox (issue 38, item 1),
// every demand, 30d windows and slow sources included, has data within a
// minute of start, without spending more than the sandbox's budget.
func TestSandboxFirstRoundWithinAMinute(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(15 * time.Hour) // the bubble starts at midnight: start at 15:00, with no final day to walk
		s, b := sandboxScheduler(t, fakeapi.SandboxBudget)
		time.Sleep(time.Minute)
		synctest.Wait()
		var missing []string
		views := s.Views()
		for _, v := range views {
			if v.Data == nil {
				missing = append(missing, fmt.Sprintf("%s/%s/%s/%s (next %s)", v.Project, v.Source, v.Window, v.Scope, time.Until(v.NextDue)))
			}
		}
		if len(views) != 2*len(sources.Names())*3+2*2 { // every source and window, and the site totals of visitors and views
			t.Errorf("%d demands, want %d", len(views), 2*len(sources.Names())*3+2*2)
		}
		if len(missing) > 0 {
			t.Errorf("a minute after start, %d of %d demands have no data: %s", len(missing), len(views), strings.Join(missing, ", "))
		}
		if spent := b.Spent(); spent > fakeapi.SandboxBudget {
			t.Errorf("spent %d, budget %d", spent, fakeapi.SandboxBudget)
		}
	})
}

// TestNextSaysWhenAWaitingWalkGoes: under the default budget the sandbox's
// first round does not fit an hour; the walks that wait for the budget's
// page share say when they will go (an hour on, as the first walks leave
// the window), not "now", and every walk that ran was a first walk until
// every demand had one (no repeat of today's window before a 30d window's
// first walk).
func TestNextSaysWhenAWaitingWalkGoes(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(15 * time.Hour)
		start := time.Now()
		s, _ := sandboxScheduler(t, 60)
		time.Sleep(15 * time.Minute)
		synctest.Wait()
		now := time.Now()
		waiting := 0
		for _, v := range s.Views() {
			if v.Attempted || v.Running {
				continue
			}
			waiting++
			if v.NextDue.Before(now.Add(30 * time.Minute)) {
				t.Errorf("%s/%s/%s waits for the budget, but says next %s (in %s)", v.Project, v.Source, v.Window, v.NextDue.Format(time.TimeOnly), v.NextDue.Sub(now))
			}
		}
		if waiting == 0 {
			t.Fatal("every demand ran within 15 minutes under a budget of 60: this test no longer tests a wait")
		}
		// Two hours on, every demand had its first walk.
		time.Sleep(2*time.Hour - time.Since(start))
		synctest.Wait()
		for _, v := range s.Views() {
			if v.Data == nil {
				t.Errorf("%s/%s/%s/%s has no data two hours after start (next %s)", v.Project, v.Source, v.Window, v.Scope, time.Until(v.NextDue))
			}
		}
	})
}
