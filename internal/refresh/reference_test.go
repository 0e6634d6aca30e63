package refresh

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// referenceProjects is the reference configuration: two projects
// (2,500 and 600 paths), visitors and views at 1d, 7d and 30d, feedback,
// feedback_items, searches (top 20) and assistant at 1d and 7d.
func referenceProjects(t *testing.T) []Project {
	t.Helper()
	win := func(specs ...string) []analytics.Window {
		var out []analytics.Window
		for _, s := range specs {
			w, err := analytics.ParseWindow(s)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, w)
		}
		return out
	}
	long, short := win("1d", "7d", "30d"), win("1d", "7d")
	specs := []sources.Spec{
		{Name: sources.NameVisitors, Windows: long}, {Name: sources.NameViews, Windows: long},
		{Name: sources.NameFeedback, Windows: short}, {Name: sources.NameFeedbackItems, Windows: short},
		{Name: sources.NameSearches, Windows: short, Settings: map[string]int{"top_queries": 20}}, {Name: sources.NameAssistant, Windows: short},
	}
	return []Project{
		{Project: analytics.Project{ID: "big", Windows: long, Paths: analytics.PathPolicy{MaxPaths: 1000}}, Sources: specs},
		{Project: analytics.Project{ID: "small", Windows: long, Paths: analytics.PathPolicy{MaxPaths: 1000}}, Sources: specs},
	}
}

// TestReferencePlan runs the reference configuration for 24 simulated
// hours (across a midnight) on a fake clock against the fake API, which
// enforces the organization's 100 an hour, with a budget of 60, and checks:
// never more than the budget in any rolling hour and no 429; every demand
// walked again on its plan; today's site totals of visitors and views never
// older than 15 minutes; and, as the demands cannot all run at their
// shortest interval, at least 85% of the plannable budget planned. The
// plan is logged, and is the table of docs/analytics-budget.md (and
// BENCHMARKS.md).
func TestReferencePlan(t *testing.T) {
	const step = 30 * time.Second
	start := time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC)
	clock := testutil.NewClock(start)
	fake := fakeapi.New(fakeapi.Options{APIKey: simKey, PathsByProject: map[string]int{"big": 2500, "small": 600},
		Now: clock.Now, AnalyticsBudget: fakeapi.AnalyticsLimit})
	log := &sendLog{}
	b, err := budget.New(budget.Config{Limit: budget.DefaultLimit, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	client, err := apiclient.New(apiclient.Config{BaseURL: "http://fake.invalid", APIKey: simKey,
		HTTPClient: &http.Client{Transport: handlerTransport{log.wrap(clock.Now, fake)}}, AnalyticsBudget: b})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(client, b, Config{Projects: referenceProjects(t), PageSize: apiclient.MaxPageSize, MinInterval: 5 * time.Minute,
		MaxStaleness: time.Hour, FinalDayDelay: 10 * time.Minute, StateDir: t.TempDir(), Now: clock.Now}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	type key struct{ project, source, window, scope string }
	last, first := map[key]time.Time{}, map[key]time.Time{}
	plan := map[key]View{}
	midnight := time.Date(2026, 3, 11, 0, 0, 0, 0, time.UTC)
	var minPlanned float64 = 1e9
	// The 15-minute floor holds for every 1d site total of visitors and
	// views: each must exist, be walked, and be served.
	type siteKey struct{ project, source string }
	var siteTotals []siteKey
	for _, p := range []string{"big", "small"} {
		for _, src := range []string{sources.NameVisitors, sources.NameViews} {
			siteTotals = append(siteTotals, siteKey{p, src})
		}
	}
	var oldestSite time.Duration
	for now := start; now.Before(start.Add(24 * time.Hour)); now = now.Add(step) {
		clock.Set(now)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		s.RefreshDue(ctx)
		cancel()
		if now.Sub(start) > 2*time.Hour { // costs learned
			minPlanned = min(minPlanned, s.Planned())
		}
		views := s.Views()
		if now.Sub(start) > 10*time.Minute {
			for _, sk := range siteTotals {
				i := slices.IndexFunc(views, func(v View) bool {
					return v.Project == sk.project && v.Source == sk.source && v.Window == "1d" && v.Scope == ScopeSite
				})
				if i < 0 {
					t.Fatalf("no 1d site totals demand of %s/%s", sk.project, sk.source)
				}
				v := views[i]
				age := now.Sub(v.LastSuccess)
				oldestSite = max(oldestSite, age)
				// After midnight yesterday's totals are not served: today's
				// must be walked within the same 15 minutes.
				afterMidnight := !now.Before(midnight) && now.Before(midnight.Add(15*time.Minute))
				if v.LastSuccess.IsZero() || age > 15*time.Minute || (v.Data == nil && !afterMidnight) {
					t.Errorf("%s/%s 1d site totals at %s: last walked %s (%s old), served %v; want at most 15 minutes old",
						sk.project, sk.source, now.Format(time.DateTime), v.LastSuccess.Format(time.DateTime), age, v.Data != nil)
				}
			}
		}
		for _, v := range views {
			k := key{v.Project, v.Source, v.Window, v.Scope}
			if v.Window != FinalDayWindow {
				plan[k] = v
			}
			if v.LastSuccess.IsZero() {
				continue
			}
			if prev, ok := last[k]; ok && v.LastSuccess != prev && v.Window != FinalDayWindow {
				// Walks more often than hourly must be on time; rarer ones
				// are planned on average and may wait up to an hour; after
				// midnight today's windows all fall due at once.
				late := 2 * step
				if v.Interval >= time.Hour {
					late += 2 * time.Hour
				}
				if !prev.Before(midnight.Add(-2*time.Hour)) && prev.Before(midnight.Add(2*time.Hour)) {
					late += 2 * time.Hour
				}
				if gap := v.LastSuccess.Sub(prev); gap > v.Interval+late {
					t.Errorf("%s/%s/%s/%s walked %s after the previous walk at %s, planned every %s",
						v.Project, v.Source, v.Window, v.Scope, gap, prev.Format(time.TimeOnly), v.Interval)
				}
			}
			if _, ok := first[k]; !ok {
				first[k] = v.LastSuccess
			}
			last[k] = v.LastSuccess
		}
	}
	log.mu.Lock()
	times := slices.Clone(log.times)
	log.mu.Unlock()
	if n, at := maxInWindow(times, time.Hour); n > budget.DefaultLimit {
		t.Errorf("%d analytics requests in the hour up to %s, budget %d", n, at.Format(time.DateTime), budget.DefaultLimit)
	}
	if r := fake.AnalyticsRejections(); r != 0 {
		t.Errorf("the fake API answered 429 %d times", r)
	}
	for k, v := range plan {
		if _, ok := last[k]; !ok && v.Interval <= 12*time.Hour {
			t.Errorf("%v never walked (planned every %s)", k, v.Interval)
		}
	}
	// Today's windows first: every source's 1d is walked before any
	// longer window.
	var last1d time.Time
	for k, at := range first {
		if k.window == "1d" && at.After(last1d) {
			last1d = at
		}
	}
	for k, at := range first {
		if k.window != "1d" && k.window != FinalDayWindow && at.Before(last1d) {
			t.Errorf("%v first walked at %s, before every 1d window (the last at %s)", k, at.Format(time.TimeOnly), last1d.Format(time.TimeOnly))
		}
	}
	plannable := Plannable(budget.DefaultLimit)
	// The 85% floor applies when the demands cannot all run at their
	// shortest interval: check that this configuration is such a case.
	var atShortest float64
	for k, v := range plan {
		shortest := 5 * time.Minute
		if k.scope == ScopeSite {
			shortest = DefaultSiteInterval
		}
		atShortest += float64(v.Cost) * float64(time.Hour) / float64(shortest)
	}
	if atShortest <= plannable {
		t.Fatalf("every demand at its shortest interval costs %.0f requests an hour, within the %.0f plannable: not the case the 85%% floor is about", atShortest, plannable)
	}
	if minPlanned < 0.85*plannable {
		t.Errorf("planned %.1f requests per hour, below 85%% of the %.0f plannable", minPlanned, plannable)
	}
	// The plan is carried out: after the first round (costs learned) the
	// floor holds for what was sent too.
	var sent int
	for _, at := range times {
		if at.Sub(start) >= 2*time.Hour {
			sent++
		}
	}
	perHour := float64(sent) / 22
	if perHour < 0.85*plannable {
		t.Errorf("sent %.1f requests per hour after the first two hours, below 85%% of the %.0f plannable: the plan is not carried out", perHour, plannable)
	}
	t.Logf("1d site totals at most %s old; %.0f requests an hour at the shortest intervals; %.1f sent per hour after the first two hours", oldestSite, atShortest, perHour)
	var rows []string
	for k, v := range plan {
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | %d | %s | %.2f |", k.project, k.source, k.window, k.scope, v.Cost,
			v.Interval.Round(time.Second), float64(v.Cost)*float64(time.Hour)/float64(v.Interval)))
	}
	sort.Strings(rows)
	if doc := documentedPlan(t, "../../docs/analytics-budget.md", "\n## Reference plan\n"); !slices.Equal(doc, rows) {
		t.Errorf("the table of docs/analytics-budget.md (Reference plan) is not this plan: replace it (and BENCHMARKS.md's) with the one logged below")
	}
	if doc := documentedPlan(t, "../../BENCHMARKS.md", "\n## The reference plan"); !slices.Equal(doc, rows) {
		t.Errorf("the table of BENCHMARKS.md (The reference plan) is not this plan: replace it with the one logged below")
	}
	t.Logf("reference plan (budget %d/h, %.0f plannable, %.1f planned in the worst hour; %d requests in 24 h, at most %d in a rolling hour):\n| project | source | window | scope | requests per walk | interval | requests per hour |\n|---|---|---|---|---|---|---|\n%s",
		budget.DefaultLimit, plannable, minPlanned, len(times), func() int { n, _ := maxInWindow(times, time.Hour); return n }(), strings.Join(rows, "\n"))
}

// documentedPlan returns the rows of the plan table in the section of
// file that starts with heading.
func documentedPlan(t *testing.T, file, heading string) []string {
	t.Helper()
	doc, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), heading)
	if !ok {
		t.Fatalf("%s has no section %q", file, strings.TrimSpace(heading))
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var rows []string
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "| ") && !strings.HasPrefix(line, "| project ") {
			rows = append(rows, line)
		}
	}
	return rows
}
