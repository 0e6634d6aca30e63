package sources_test

import (
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

func TestFeedbackByPageEqualsTheAPI(t *testing.T) {
	t.Parallel()
	e := start(t, fakeapi.Options{Paths: 300}, nil)
	src := e.source(sources.NameFeedback)
	q := e.window(30)
	snap := e.walk(src, q)
	from, to := e.bounds(q)
	pages := e.fake.FeedbackByPage(project, from, to, fixedNow(), "", "")
	if len(pages) <= 100 {
		t.Fatalf("the fake has feedback on %d pages: the test needs more than 100", len(pages))
	}
	if snap.Meta().Requests != 1 || e.fake.Requests(fakeapi.FeedbackByPage) != 1 {
		t.Fatalf("%d requests, want 1", snap.Meta().Requests)
	}
	got := collect(t, src, snap, "30d")
	got.want(t, "mintlify_feedback_pages_truncated", 1, project, "30d")
	if n := len(got["mintlify_page_feedback_combined"]); n != 100 {
		t.Fatalf("%d pages exported, want the first 100", n)
	}
	for _, p := range pages[:100] {
		got.want(t, "mintlify_page_feedback", float64(p.ThumbsUp), project, "30d", p.Path, "thumbs_up")
		got.want(t, "mintlify_page_feedback", float64(p.ThumbsDown), project, "30d", p.Path, "thumbs_down")
		got.want(t, "mintlify_page_feedback", float64(p.Code), project, "30d", p.Path, "code_snippet")
		got.want(t, "mintlify_page_feedback_combined", float64(p.Total), project, "30d", p.Path)
	}

	// A short window of a small site fits: not truncated.
	small := start(t, fakeapi.Options{Paths: 5}, nil)
	got = collect(t, src, small.walk(small.source(sources.NameFeedback), small.window(1)), "1d")
	got.want(t, "mintlify_feedback_pages_truncated", 0, project, "1d")
}

func TestFeedbackItemsEqualTheAPI(t *testing.T) {
	t.Parallel()
	e := start(t, fakeapi.Options{Paths: 300}, nil)
	src := e.source(sources.NameFeedbackItems)
	q := e.window(30)
	snap := e.walk(src, q)
	from, to := e.bounds(q)
	items := e.fake.FeedbackItems(project, from, to, fixedNow())
	want := ceilDiv(len(items), apiclient.MaxFeedbackLimit)
	if want < 3 || snap.Meta().Requests != want || e.fake.Requests(fakeapi.Feedback) != int64(want) {
		t.Fatalf("%d items in %d requests (fake saw %d), want %d requests (and at least 3 pages)", len(items), snap.Meta().Requests, e.fake.Requests(fakeapi.Feedback), want)
	}
	counts := map[[2]string]float64{}
	oldest := fixedNow()
	for _, it := range items {
		counts[[2]string{it.Source, it.Status}]++
		if it.Status == "pending" && it.CreatedAt.Before(oldest) {
			oldest = it.CreatedAt
		}
	}
	got := collect(t, src, snap, "30d")
	if n := len(got["mintlify_feedback_items"]); n != 16 {
		t.Errorf("%d (source, status) series, want the 16 documented pairs", n)
	}
	for _, s := range apiclient.FeedbackSources {
		for _, st := range apiclient.FeedbackStatuses {
			got.want(t, "mintlify_feedback_items", counts[[2]string{s, st}], project, "30d", s, st)
		}
	}
	got.want(t, "mintlify_feedback_oldest_pending_age_seconds", fixedNow().Sub(oldest).Seconds(), project)
	if age := fixedNow().Sub(oldest).Hours() / 24; age < 14 {
		t.Errorf("oldest pending is %.1f days old: the fake should have an old backlog", age)
	}
}

// TestFeedbackItemsDuplicatesAndUnknownValues: an item repeated on the next
// page counts once; a source or status the API adds is exported as it came.
func TestFeedbackItemsDuplicatesAndUnknownValues(t *testing.T) {
	t.Parallel()
	e := start(t, fakeapi.Options{Paths: 300}, nil)
	src := e.source(sources.NameFeedbackItems)
	q := e.window(30)
	from, to := e.bounds(q)
	items := e.fake.FeedbackItems(project, from, to, fixedNow())

	e.fake.SetFault(fakeapi.Feedback, fakeapi.Fault{DuplicatePath: true})
	got := collect(t, src, e.walk(src, q), "30d")
	var sum float64
	for _, v := range got["mintlify_feedback_items"] {
		sum += v
	}
	if sum != float64(len(items)) {
		t.Errorf("duplicates counted: %v items exported, the API has %d", sum, len(items))
	}

	e.fake.SetFault(fakeapi.Feedback, fakeapi.Fault{UnknownEnum: true})
	snap := e.walk(src, q)
	got = collect(t, src, snap, "30d")
	pages := float64(snap.Meta().Requests)
	got.want(t, "mintlify_feedback_items", pages, project, "30d", fakeapi.UnknownEnumValue, fakeapi.UnknownEnumValue)
}

// The feedback source's families and whether its counts add up across days
// (TestFamiliesAsTheIssueNamesThem, TestRegistry).
var _ = pinSource(sources.NameFeedback, pin{additive: false, families: map[string][]string{
	"mintlify_page_feedback":            {"project", "window", "path", "kind"},
	"mintlify_page_feedback_combined":   {"project", "window", "path"},
	"mintlify_feedback_pages_truncated": {"project", "window"},
}})

// The feedback_items source's families and whether its counts add up across days
// (TestFamiliesAsTheIssueNamesThem, TestRegistry).
var _ = pinSource(sources.NameFeedbackItems, pin{additive: false, families: map[string][]string{
	"mintlify_feedback_items":                      {"project", "window", "source", "status"},
	"mintlify_feedback_oldest_pending_age_seconds": {"project"},
}})

// TestSkippedRowsReachTheSnapshot: a row the client skips (a null
// createdAt, a path-less row) is counted in the walk's Meta, which the
// status page shows, and the walk stands.
func TestSkippedRowsReachTheSnapshot(t *testing.T) {
	t.Parallel()
	e := start(t, fakeapi.Options{Paths: 20}, nil)
	q := e.window(7)
	e.fake.SetFault(fakeapi.Feedback, fakeapi.Fault{NullCreatedAt: true})
	snap := e.walk(e.source(sources.NameFeedbackItems), q)
	if m := snap.Meta(); m.Skipped != m.Requests || m.Skipped == 0 {
		t.Errorf("feedback items: %d rows skipped in %d requests, want one a page", m.Skipped, m.Requests)
	}
	if m := e.walk(e.source(sources.NameVisitors), q).Meta(); m.Skipped != 0 {
		t.Errorf("visitors: %d rows skipped without a fault", m.Skipped)
	}
}
