package sources_test

import (
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// TestAssistantDaysInTheProjectZone: conversations are counted per day of
// the project's time zone, not UTC's. In Asia/Kolkata (UTC+5:30) and
// America/New_York (UTC-4 in March, with the switch to summer time inside
// the window), a walk late in the local evening and an incremental one
// after local midnight read conversations on both sides of it; every day's
// count and the 1d and 7d windows derived from the days equal what the
// fake API (in the same zone) answers for the same range.
func TestAssistantDaysInTheProjectZone(t *testing.T) {
	t.Parallel()
	for _, zone := range []string{"Asia/Kolkata", "America/New_York"} {
		t.Run(zone, func(t *testing.T) {
			t.Parallel()
			loc, err := time.LoadLocation(zone)
			if err != nil {
				t.Fatal(err)
			}
			e := start(t, fakeapi.Options{Paths: 50, Location: loc}, func(c *sources.Config) { c.AssistantPageSize = 50 })
			src := e.source(sources.NameAssistant)
			// Day D is 2025-03-14 local; the first walk at 21:00 of it,
			// the second at 03:00 of D+1 (both after the clock's start).
			day := time.Date(2025, 3, 14, 0, 0, 0, 0, loc)
			first, midnight, second := day.Add(21*time.Hour), day.AddDate(0, 0, 1), day.AddDate(0, 0, 1).Add(3*time.Hour)
			if e.clock.Now().After(first) {
				t.Fatalf("the clock starts at %v, after the first walk's %v", e.clock.Now(), first)
			}
			before := len(e.fake.Conversations(project, first, midnight, second))
			after := len(e.fake.Conversations(project, midnight, second, second))
			if before == 0 || after == 0 {
				t.Fatalf("%d conversations between the walks before local midnight, %d after: the test wants both", before, after)
			}
			utcDay := time.Date(2025, 3, 14, 0, 0, 0, 0, time.UTC)
			if n := int64(len(e.fake.Conversations(project, utcDay, utcDay.AddDate(0, 0, 1), second))); n == e.fake.DayConversations(project, day, second) {
				t.Fatalf("the UTC day and the local day both hold %d conversations: counting by UTC day would pass", n)
			}

			e.clock.Set(first)
			week := localWindow(e, 7)
			checkAssistant(t, e, src, e.walk(src, week), week, "7d")
			today := localWindow(e, 1)
			checkAssistant(t, e, src, e.walk(src, today), today, "1d")

			e.clock.Set(second)
			week = localWindow(e, 7)
			if week.DateTo != "2025-03-16" {
				t.Fatalf("the 7d window at %v ends %s, want 2025-03-16 (local)", second, week.DateTo)
			}
			checkAssistant(t, e, src, e.walk(src, week), week, "7d")
			// Each day of the window, the new one among them (too young to
			// hold an unanswered conversation for checkAssistant): the
			// days' counts themselves.
			for d := mustParse(t, week.DateFrom); d.Format(time.DateOnly) < week.DateTo; d = d.AddDate(0, 0, 1) {
				q := sources.Query{Project: project, DateFrom: d.Format(time.DateOnly), DateTo: d.AddDate(0, 0, 1).Format(time.DateOnly)}
				got := collect(t, src, e.walk(src, q), "1d")
				want := e.fake.DayConversations(project, d, second)
				var resolved float64
				for _, r := range apiclient.Resolutions {
					resolved += got["mintlify_assistant_turns_by_resolution"][project+"|1d|"+r]
				}
				if resolved != float64(want) {
					t.Errorf("%s: %v conversations by resolution, the API has %d", q.DateFrom, resolved, want)
				}
				got.want(t, "mintlify_assistant_turns_combined", float64(want), project, "1d")
			}
		})
	}
}

// localWindow is the query of the last days days up to today in the
// project's zone (the env's Location) at the env's clock.
func localWindow(e *env, days int) sources.Query {
	now := e.clock.Now().In(e.cfg.Location)
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	return sources.Query{Project: project,
		DateFrom: today.AddDate(0, 0, 1-days).Format(time.DateOnly), DateTo: today.AddDate(0, 0, 1).Format(time.DateOnly)}
}

func mustParse(t *testing.T, date string) time.Time {
	t.Helper()
	d, err := time.Parse(time.DateOnly, date)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
