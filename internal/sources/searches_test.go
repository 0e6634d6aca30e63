package sources_test

import (
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

func TestSearchesTotalOnlyByDefault(t *testing.T) {
	t.Parallel()
	e := start(t, fakeapi.Options{Paths: 50}, nil)
	src := e.source(sources.NameSearches)
	q := e.window(7)
	snap := e.walk(src, q)
	from, to := e.bounds(q)
	total, _ := e.fake.Searches(project, from, to, fixedNow())
	var sumDays int64
	for d := from; d.Before(to); d = d.AddDate(0, 0, 1) {
		sumDays += e.fake.DaySearches(project, d, fixedNow())
	}
	if total != sumDays {
		t.Fatalf("fake: window %d, sum of days %d", total, sumDays)
	}
	got := collect(t, src, snap, "7d")
	got.want(t, "mintlify_searches", float64(total), project, "7d")
	if snap.Meta().Requests != 1 || e.fake.Requests(fakeapi.Searches) != 1 || len(got["mintlify_search_query_hits"]) != 0 {
		t.Errorf("%d requests, %d query series: want 1 and none (queries are opt-in)", snap.Meta().Requests, len(got["mintlify_search_query_hits"]))
	}
}

func TestSearchesTopQueries(t *testing.T) {
	t.Parallel()
	for _, top := range []int{20, 100, 150} {
		e := start(t, fakeapi.Options{Paths: 50}, func(c *sources.Config) { c.Settings = map[string]int{"top_queries": top} })
		src := e.source(sources.NameSearches)
		q := e.window(30)
		snap := e.walk(src, q)
		from, to := e.bounds(q)
		total, queries := e.fake.Searches(project, from, to, fixedNow())
		want := ceilDiv(top, 100)
		if snap.Meta().Requests != want || e.fake.Requests(fakeapi.Searches) != int64(want) || src.Estimate(q) != want {
			t.Errorf("top %d: %d requests, want %d", top, snap.Meta().Requests, want)
		}
		got := collect(t, src, snap, "30d")
		got.want(t, "mintlify_searches", float64(total), project, "30d")
		if n := len(got["mintlify_search_query_hits"]); n != min(top, len(queries)) {
			t.Errorf("top %d: %d queries exported", top, n)
		}
		low := 0
		for _, s := range queries[:min(top, len(queries))] {
			got.want(t, "mintlify_search_query_hits", float64(s.Hits), project, "30d", s.Query)
			got.want(t, "mintlify_search_query_click_through_ratio", s.CTR, project, "30d", s.Query)
			if s.CTR < 0.1 {
				low++
			}
		}
		if low == 0 {
			t.Errorf("top %d: no query with a low click-through", top)
		}
	}
}

// TestSearchesEndOfList: fewer queries than asked end at the null cursor.
func TestSearchesEndOfList(t *testing.T) {
	t.Parallel()
	e := start(t, fakeapi.Options{Paths: 50}, func(c *sources.Config) { c.Settings = map[string]int{"top_queries": 500} })
	src := e.source(sources.NameSearches)
	q := e.window(30)
	snap := e.walk(src, q)
	from, to := e.bounds(q)
	_, queries := e.fake.Searches(project, from, to, fixedNow())
	if got := len(collect(t, src, snap, "30d")["mintlify_search_query_hits"]); got != len(queries) || snap.Meta().Requests != ceilDiv(len(queries), 100) {
		t.Errorf("%d queries in %d requests, the API has %d", got, snap.Meta().Requests, len(queries))
	}
}

// The searches source's families and whether its counts add up across days
// (TestFamiliesAsTheIssueNamesThem, TestRegistry).
var _ = pinSource(sources.NameSearches, pin{additive: true, families: map[string][]string{
	"mintlify_searches":                         {"project", "window"},
	"mintlify_search_query_hits":                {"project", "window", "query"},
	"mintlify_search_query_click_through_ratio": {"project", "window", "query"},
}})
