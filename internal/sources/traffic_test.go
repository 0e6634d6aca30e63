package sources_test

import (
	"fmt"
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

func TestViewsEqualTheAPI(t *testing.T) {
	t.Parallel()
	e := start(t, fakeapi.Options{Paths: 600}, nil)
	src := e.source(sources.NameViews)
	q := e.window(7)
	snap := e.walk(src, q)
	from, to := e.bounds(q)
	site, pages := e.fake.Views(project, from, to, fixedNow())
	wantRequests := ceilDiv(len(pages), apiclient.MaxPageSize)
	if m := snap.Meta(); m.Requests != wantRequests || e.fake.Requests(fakeapi.Views) != int64(wantRequests) || m.DateFrom != q.DateFrom || m.DateTo != q.DateTo || !m.At.Equal(fixedNow()) {
		t.Fatalf("meta %+v, fake saw %d requests; want %d", m, e.fake.Requests(fakeapi.Views), wantRequests)
	}
	got := collect(t, src, snap, "7d")
	got.want(t, "mintlify_site_page_views", float64(site.Human), project, "7d", "human")
	got.want(t, "mintlify_site_page_views", float64(site.AI), project, "7d", "ai")
	got.want(t, "mintlify_site_page_views_combined", float64(site.Total), project, "7d")
	if len(got["mintlify_page_views_combined"]) != len(pages) {
		t.Fatalf("%d pages exported, the API has %d", len(got["mintlify_page_views_combined"]), len(pages))
	}
	for _, p := range pages {
		got.want(t, "mintlify_page_views", float64(p.Human), project, "7d", p.Path, "human")
		got.want(t, "mintlify_page_views", float64(p.AI), project, "7d", p.Path, "ai")
		got.want(t, "mintlify_page_views_combined", float64(p.Total), project, "7d", p.Path)
	}
	if src.Estimate(q) != wantRequests {
		t.Errorf("estimate after a walk %d, want its cost %d", src.Estimate(q), wantRequests)
	}

	// Totals only: one request of limit 1, the same site numbers, no pages.
	q.TotalsOnly = true
	totals := e.walk(src, q)
	if m := totals.Meta(); m.Requests != 1 || !m.TotalsOnly || e.fake.Requests(fakeapi.Views) != int64(wantRequests+1) {
		t.Fatalf("totals only: meta %+v", m)
	}
	got = collect(t, src, totals, "7d")
	got.want(t, "mintlify_site_page_views_combined", float64(site.Total), project, "7d")
	if n := len(got["mintlify_page_views"]); n != 0 {
		t.Errorf("totals-only snapshot emits %d page series", n)
	}
}

// TestViewsAddUpOverDays: a window's views are the sum of its days, as a
// backfill will derive them.
func TestViewsAddUpOverDays(t *testing.T) {
	t.Parallel()
	e := start(t, fakeapi.Options{Paths: 40}, nil)
	src := e.source(sources.NameViews)
	if !src.Additive() {
		t.Fatal("views are events: additive")
	}
	week := collect(t, src, e.walk(src, sources.Query{Project: project, DateFrom: "2025-03-08", DateTo: "2025-03-15", TotalsOnly: true}), "7d")
	var sum float64
	for d := 8; d < 15; d++ {
		q := sources.Query{Project: project, DateFrom: fmt.Sprintf("2025-03-%02d", d), DateTo: fmt.Sprintf("2025-03-%02d", d+1), TotalsOnly: true}
		sum += collect(t, src, e.walk(src, q), "1d")["mintlify_site_page_views_combined"][project+"|1d"]
	}
	week.want(t, "mintlify_site_page_views_combined", sum, project, "7d")
}

func TestVisitorsWrapsTheVisitorsWalk(t *testing.T) {
	t.Parallel()
	e := start(t, fakeapi.Options{Paths: 300}, nil)
	src := e.source(sources.NameVisitors)
	if src.Additive() {
		t.Fatal("unique visitors are not additive")
	}
	q := e.window(1)
	snap := e.walk(src, q)
	day, _ := e.bounds(q)
	human, ai, total := e.fake.DayCounts(project, day, fixedNow())
	got := collect(t, src, snap, "1d")
	got.want(t, "mintlify_site_unique_visitors", float64(human), project, "1d", "human")
	got.want(t, "mintlify_site_unique_visitors", float64(ai), project, "1d", "ai")
	got.want(t, "mintlify_site_unique_visitors_deduplicated", float64(total), project, "1d")
	if n := len(got["mintlify_page_unique_visitors_deduplicated"]); n != 300 || snap.Meta().Requests != 2 || e.fake.Requests(fakeapi.Visitors) != 2 {
		t.Errorf("%d pages in %d requests (fake saw %d), want 300 in 2", n, snap.Meta().Requests, e.fake.Requests(fakeapi.Visitors))
	}
}

// TestViewsDuplicateRows: a path repeated on a later page keeps its first
// row, and the numbers still equal the API's.
func TestViewsDuplicateRows(t *testing.T) {
	t.Parallel()
	e := start(t, fakeapi.Options{Paths: 30}, func(c *sources.Config) { c.PageSize = 10 })
	e.fake.SetFault(fakeapi.Views, fakeapi.Fault{DuplicatePath: true})
	src := e.source(sources.NameViews)
	q := e.window(7)
	got := collect(t, src, e.walk(src, q), "7d")
	from, to := e.bounds(q)
	_, pages := e.fake.Views(project, from, to, fixedNow())
	if len(got["mintlify_page_views_combined"]) != len(pages) {
		t.Fatalf("%d pages, want %d", len(got["mintlify_page_views_combined"]), len(pages))
	}
	for _, p := range pages {
		got.want(t, "mintlify_page_views_combined", float64(p.Total), project, "7d", p.Path)
	}
}

// The visitors source's families and whether its counts add up across days
// (TestFamiliesAsTheIssueNamesThem, TestRegistry).
var _ = pinSource(sources.NameVisitors, pin{additive: false, families: map[string][]string{
	"mintlify_site_unique_visitors":              {"project", "window", "traffic"},
	"mintlify_site_unique_visitors_deduplicated": {"project", "window"},
	"mintlify_page_unique_visitors":              {"project", "window", "path", "traffic"},
	"mintlify_page_unique_visitors_deduplicated": {"project", "window", "path"},
}})

// The views source's families and whether its counts add up across days
// (TestFamiliesAsTheIssueNamesThem, TestRegistry).
var _ = pinSource(sources.NameViews, pin{additive: true, families: map[string][]string{
	"mintlify_site_page_views":          {"project", "window", "traffic"},
	"mintlify_site_page_views_combined": {"project", "window"},
	"mintlify_page_views":               {"project", "window", "path", "traffic"},
	"mintlify_page_views_combined":      {"project", "window", "path"},
}})
