package history

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// endpoint is the part of a request's path after the project:
// "views", "assistant/caller-stats".
func endpoint(t *testing.T, request string) (string, url.Values) {
	t.Helper()
	path, query, _ := strings.Cut(request, "?")
	parts := strings.SplitN(path, "/", 5)
	if len(parts) != 5 {
		t.Fatalf("request %s: not an analytics path", request)
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		t.Fatal(err)
	}
	return parts[4], q
}

// countBy counts requests by endpoint, and fails on one that is not for
// one of days alone (dateFrom a day, dateTo the next), or for a 7d
// window of visitors ending on one.
func countBy(t *testing.T, requests []string, days ...string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, r := range requests {
		ep, q := endpoint(t, r)
		out[ep]++
		from, to := q.Get("dateFrom"), q.Get("dateTo")
		ok := false
		for _, d := range days {
			next := analytics.AddDays(day(d), 1).Format(analytics.DateLayout)
			week := analytics.AddDays(day(d), -6).Format(analytics.DateLayout)
			ok = ok || to == next && (from == d || ep == "visitors" && from == week)
		}
		if !ok {
			t.Errorf("request %s: not for one of the days %v", r, days)
		}
	}
	return out
}

// TestBackfillSources: views, searches and the assistant are walked day by
// day beside visitors, through their sources: exactly the expected
// requests per day and source, each for its day alone, feedback never;
// each day's numbers equal the API's for that day, stamped at its local
// midnight as window="yesterday". A resumed run sends nothing for
// finished days, and one more day costs exactly that day's requests.
func TestBackfillSources(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, fakeapi.Options{Paths: 300, Location: berlin}, 1000, 0)
	w7, _ := analytics.ParseWindow("7d")
	all := []string{sources.NameVisitors, sources.NameViews, sources.NameFeedback, sources.NameFeedbackItems, sources.NameSearches, sources.NameAssistant}
	state := filepath.Join(t.TempDir(), "days")
	cfg := Config{Projects: withSources(berlin, []analytics.Window{w7}, all, "docs"), From: day("2026-03-07"), To: day("2026-03-09"), StateDir: state}
	out, progress, err := r.run(t, context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	days := []string{"2026-03-07", "2026-03-08", "2026-03-09"}
	// Per day: visitors 1d and 7d, 2 pages each; views 2 pages; searches'
	// total 1; the day's conversations (fewer than a page of 1,000) and
	// its caller stats, 1 each.
	perDay := map[string]int{"visitors": 4, "views": 2, "searches": 1, "assistant": 1, "assistant/caller-stats": 1}
	got := countBy(t, r.sent(), days...)
	for ep, n := range perDay {
		if got[ep] != 3*n {
			t.Errorf("%d requests to %s, want %d (3 days × %d)", got[ep], ep, 3*n, n)
		}
	}
	if len(got) != len(perDay) {
		t.Errorf("requests to %v, want only %v (feedback is not backfilled)", got, perDay)
	}
	for _, want := range []string{
		"backfill: 15 walks (1 projects × 3 days; visitors 1d,7d, views 1d, searches 1d, assistant 1d): 0 kept in " + state,
		"27 requests (visitors 12, views 6, searches 3, assistant 6)",
	} {
		if !strings.Contains(progress, want) {
			t.Errorf("progress lacks %q:\n%s", want, progress)
		}
	}

	values := map[string]float64{}
	pageViews := map[int64]int{}
	for _, s := range parse(t, out) {
		if s.name == "mintlify_page_views_combined" {
			pageViews[s.ts]++
		}
		if strings.Contains(s.name, "feedback") || strings.HasPrefix(s.name, "mintlify_search_query") {
			t.Fatalf("%s backfilled", s.name)
		}
		if !strings.HasPrefix(s.name, "mintlify_site_unique") && !strings.HasPrefix(s.name, "mintlify_page_unique") && !strings.Contains(s.labels, `window="yesterday"`) {
			t.Errorf("%s{%s}: an additive source's window is the sum of its days, not backfilled", s.name, s.labels)
		}
		// Sums over the family's own label, by family and time.
		values[fmt.Sprintf("%s@%d", s.name, s.ts)] += s.value
		values[fmt.Sprintf("%s{%s}@%d", s.name, s.labels, s.ts)] = s.value
	}
	for _, d := range days {
		at := SampleTime(day(d), day1, berlin).Unix()
		views := r.fake.DayViews("docs", day(d), today)
		conversations := float64(r.fake.DayConversations("docs", day(d), today))
		yesterday := `project="docs",window="yesterday"`
		for key, want := range map[string]float64{
			fmt.Sprintf("mintlify_site_page_views_combined{%s}@%d", yesterday, at):        float64(views.Total),
			fmt.Sprintf(`mintlify_site_page_views{%s,traffic="human"}@%d`, yesterday, at): float64(views.Human),
			fmt.Sprintf(`mintlify_site_page_views{%s,traffic="ai"}@%d`, yesterday, at):    float64(views.AI),
			fmt.Sprintf("mintlify_searches{%s}@%d", yesterday, at):                        float64(r.fake.DaySearches("docs", day(d), today)),
			fmt.Sprintf("mintlify_assistant_turns_combined{%s}@%d", yesterday, at):        conversations,
			fmt.Sprintf("mintlify_assistant_turns_by_caller@%d", at):                      conversations,
			fmt.Sprintf("mintlify_assistant_turns_by_resolution@%d", at):                  conversations,
			fmt.Sprintf("mintlify_assistant_turns_by_response_type@%d", at):               conversations,
		} {
			if v, ok := values[key]; !ok || v != want {
				t.Errorf("%s %s: %v (present %v), the API's %v", d, key, v, ok, want)
			}
		}
		categories := values[fmt.Sprintf("mintlify_assistant_turns_by_category@%d", at)] +
			values[fmt.Sprintf("mintlify_assistant_turns_other_categories@%d", at)]
		if categories != conversations {
			t.Errorf("%s: %v conversations by category, the API's %v", d, categories, conversations)
		}
		if _, ok := values[fmt.Sprintf("mintlify_site_unique_visitors_deduplicated{%s}@%d", yesterday, at)]; !ok {
			t.Errorf("%s: no visitors beside the other sources", d)
		}
		if conversations == 0 {
			t.Errorf("%s: the fake has no conversations: the test proves nothing", d)
		}
		if pageViews[at] != 300 {
			t.Errorf("%s: %d pages' views, want 300", d, pageViews[at])
		}
	}
	checkBlocks(t, out)

	// Resumed: nothing sent again, the same output.
	before := len(r.sent())
	again, progress, err := r.run(t, context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(r.sent()) - before; n != 0 || !strings.Contains(progress, "all 15 walks already fetched") {
		t.Errorf("resumed run: %d requests, progress:\n%s", n, progress)
	}
	if again != out {
		t.Error("the resumed run's output differs")
	}
	// One more day: exactly its requests, for it alone.
	cfg.To = day("2026-03-10")
	if _, _, err := r.run(t, context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	got = countBy(t, r.sent()[before:], "2026-03-10")
	for ep, n := range perDay {
		if got[ep] != n {
			t.Errorf("one more day: %d requests to %s, want %d", got[ep], ep, n)
		}
	}
}

// TestBackfillSourceFlag: --backfill.source narrows the sources walked; a
// source configured for no project, or one whose days cannot be
// backfilled, is refused naming the flag, before any request.
func TestBackfillSourceFlag(t *testing.T) {
	t.Parallel()
	r := newRig(t, fakeapi.Options{Paths: 300}, 1000, 0)
	projects := withSources(nil, nil, []string{sources.NameVisitors, sources.NameViews, sources.NameSearches}, "docs")
	cfg := Config{Projects: projects, From: day("2026-03-01"), To: day("2026-03-02"), Sources: []string{sources.NameSearches}}
	out, _, err := r.run(t, context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := countBy(t, r.sent(), "2026-03-01", "2026-03-02"); len(got) != 1 || got["searches"] != 2 {
		t.Errorf("requests %v, want 2 to searches alone", got)
	}
	for _, s := range parse(t, out) {
		if s.name != "mintlify_searches" {
			t.Fatalf("%s written with --backfill.source=searches", s.name)
		}
	}
	cfg.Sources = []string{sources.NameAssistant}
	if _, _, err := r.run(t, context.Background(), cfg); err == nil || !strings.HasPrefix(err.Error(), "--backfill.source: assistant is not a source of any project") {
		t.Errorf("a source of no project: %v", err)
	}
	if n := len(r.sent()); n != 2 {
		t.Errorf("%d requests after the refused run, want the 2 of the first", n)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--backfill.source=feedback"}, `--backfill.source: "feedback" cannot be backfilled`},
		{[]string{"--backfill.source=nope"}, `--backfill.source: "nope" cannot be backfilled`},
		{[]string{"--backfill.source=views", "--backfill.source=assistant"}, ""},
	} {
		app := kingpin.New("test", "")
		f := RegisterFlags(app)
		if _, err := app.Parse(append([]string{"--from=2026-01-01", "--to=2026-01-02"}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		err := f.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestBackfillProjectsInTheirZones: projects in different time zones in one
// run, each day stamped at its own project's local midnight.
func TestBackfillProjectsInTheirZones(t *testing.T) {
	t.Parallel()
	r := newRig(t, fakeapi.Options{Paths: 3}, 1000, 0)
	ny, _ := time.LoadLocation("America/New_York")
	tokyo, _ := time.LoadLocation("Asia/Tokyo")
	projects := append(withSources(ny, nil, []string{sources.NameViews}, "east"), withSources(tokyo, nil, []string{sources.NameViews}, "west")...)
	out, _, err := r.run(t, context.Background(), Config{Projects: projects, From: day("2026-03-01"), To: day("2026-03-01"), TotalsOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{
		`project="east",window="yesterday"`: time.Date(2026, 3, 2, 0, 0, 0, 0, ny).Unix(),
		`project="west",window="yesterday"`: time.Date(2026, 3, 2, 0, 0, 0, 0, tokyo).Unix(),
	}
	n := 0
	for _, s := range parse(t, out) {
		if s.name == "mintlify_site_page_views_combined" {
			n++
			if s.ts != want[s.labels] {
				t.Errorf("%s{%s} at %d, want %d", s.name, s.labels, s.ts, want[s.labels])
			}
		}
	}
	if n != 2 {
		t.Errorf("%d site totals, want one per project", n)
	}
}
