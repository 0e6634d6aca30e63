package apiclient_test

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

var week = apiclient.VisitorsQuery{DateFrom: "2025-03-08", DateTo: "2025-03-15"}

func offsetOf(t *testing.T, q url.Values) int {
	t.Helper()
	v := q.Get("offset")
	if v == "" {
		return 0 // the API's default
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("offset %q is not an integer", v)
	}
	return n
}

func TestAllVisitorsWalksEveryPage(t *testing.T) {
	t.Parallel()
	fake, _, srv := startFake(t, fakeapi.Options{Paths: 1234})
	c := newClient(t, srv.URL, nil)
	ctx := testCtx(t)

	v, err := c.AllVisitors(ctx, testProject, week, 250, 0)
	if err != nil {
		t.Fatalf("AllVisitors: %v", err)
	}
	const wantPages = (1234 + 249) / 250 // 5
	if got := fake.Requests(fakeapi.Visitors); got != wantPages {
		t.Errorf("fake saw %d visitors requests, want %d", got, wantPages)
	}
	if v.Requests != wantPages {
		t.Errorf("Visitors.Requests = %d, want %d", v.Requests, wantPages)
	}
	if len(v.Paths) != 1234 {
		t.Errorf("got %d paths, want 1234", len(v.Paths))
	}
	distinct := map[string]bool{}
	for _, p := range v.Paths {
		distinct[p.Path] = true
	}
	if len(distinct) != 1234 {
		t.Errorf("got %d distinct paths, want 1234", len(distinct))
	}
	if v.DuplicatePaths != 0 {
		t.Errorf("DuplicatePaths = %d, want 0", v.DuplicatePaths)
	}

	qs := fake.VisitorsQueries()
	if len(qs) != wantPages {
		t.Fatalf("fake recorded %d queries, want %d", len(qs), wantPages)
	}
	for i, q := range qs {
		if got := q.Get("limit"); got != "250" {
			t.Errorf("request %d: limit=%q, want 250", i, got)
		}
		if got := offsetOf(t, q); got != i*250 {
			t.Errorf("request %d: offset=%d, want %d", i, got, i*250)
		}
		if q.Get("dateFrom") != week.DateFrom || q.Get("dateTo") != week.DateTo {
			t.Errorf("request %d: dateFrom=%q dateTo=%q, want %q %q", i, q.Get("dateFrom"), q.Get("dateTo"), week.DateFrom, week.DateTo)
		}
	}

	// Totals are the API's own, not anything computed from the rows.
	first, err := c.VisitorsPage(ctx, testProject, apiclient.VisitorsQuery{DateFrom: week.DateFrom, DateTo: week.DateTo, Limit: 1})
	if err != nil {
		t.Fatalf("VisitorsPage: %v", err)
	}
	if v.Totals != first.Totals {
		t.Errorf("Totals = %+v, want the API's %+v", v.Totals, first.Totals)
	}
	if v.Totals.Total == v.Totals.Human+v.Totals.AI {
		t.Errorf("Totals.Total = Human+AI = %d: the fake dedupes, so the client must have summed", v.Totals.Total)
	}
	var sumHuman int64
	for _, p := range v.Paths {
		sumHuman += p.Human
	}
	if sumHuman == v.Totals.Human {
		t.Errorf("Totals.Human equals the sum over paths; want the site's own count")
	}
	// Order as read: the API's ranking.
	for i := 1; i < len(v.Paths); i++ {
		if v.Paths[i].Total > v.Paths[i-1].Total {
			t.Fatalf("Pages[%d].Total %d > Pages[%d].Total %d: not in the order read", i, v.Paths[i].Total, i-1, v.Paths[i-1].Total)
		}
	}
}

func TestAllVisitorsExactMultipleOfPageSize(t *testing.T) {
	t.Parallel()
	fake, _, srv := startFake(t, fakeapi.Options{Paths: 500})
	c := newClient(t, srv.URL, nil)
	v, err := c.AllVisitors(testCtx(t), testProject, week, 250, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := fake.Requests(fakeapi.Visitors); got != 2 {
		t.Errorf("%d requests for 500 paths at 250 a page, want 2", got)
	}
	if len(v.Paths) != 500 {
		t.Errorf("got %d paths, want 500", len(v.Paths))
	}
}

func TestAllVisitorsEmptySite(t *testing.T) {
	t.Parallel()
	fake, _, srv := startFake(t, fakeapi.Options{PathsByProject: map[string]int{testProject: 0}})
	c := newClient(t, srv.URL, nil)
	v, err := c.AllVisitors(testCtx(t), testProject, week, 250, 0)
	if err != nil {
		t.Fatalf("a site without traffic is data, not an error: %v", err)
	}
	if len(v.Paths) != 0 || v.Totals != (apiclient.VisitorCounts{}) || v.Requests != 1 {
		t.Errorf("got %+v, want no pages, zero totals, 1 request", v)
	}
	if got := fake.Requests(fakeapi.Visitors); got != 1 {
		t.Errorf("%d requests, want 1", got)
	}
}

func TestVisitorsDatesPassedThroughUnchanged(t *testing.T) {
	t.Parallel()
	for _, q := range []apiclient.VisitorsQuery{
		{DateFrom: "2024-02-28", DateTo: "2024-03-01"},
		{DateFrom: "2024-02-28T00:00:00+01:00", DateTo: "2024-03-01T00:00:00Z"},
	} {
		fake, rec, srv := startFake(t, fakeapi.Options{Paths: 600})
		c := newClient(t, srv.URL, nil)
		if _, err := c.AllVisitors(testCtx(t), testProject, q, 250, 0); err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		qs := fake.VisitorsQueries()
		if len(qs) != 3 {
			t.Fatalf("%d queries, want 3", len(qs))
		}
		for i, got := range qs {
			if got.Get("dateFrom") != q.DateFrom || got.Get("dateTo") != q.DateTo {
				t.Errorf("request %d (%s): dateFrom=%q dateTo=%q, want %q %q", i, rec.requests()[i].uri, got.Get("dateFrom"), got.Get("dateTo"), q.DateFrom, q.DateTo)
			}
		}
	}
	// Without dates the parameters are left out, not sent empty.
	fake, _, srv := startFake(t, fakeapi.Options{Paths: 10})
	c := newClient(t, srv.URL, nil)
	if _, err := c.AllVisitors(testCtx(t), testProject, apiclient.VisitorsQuery{}, 250, 0); err != nil {
		t.Fatal(err)
	}
	for _, q := range fake.VisitorsQueries() {
		if q.Has("dateFrom") || q.Has("dateTo") {
			t.Errorf("query %v has a date parameter, want none", q)
		}
	}
}

func TestAllVisitorsPageSizeValidated(t *testing.T) {
	t.Parallel()
	fake, _, srv := startFake(t, fakeapi.Options{})
	c := newClient(t, srv.URL, nil)
	for _, size := range []int{0, -1, 251} {
		if _, err := c.AllVisitors(testCtx(t), testProject, week, size, 0); err == nil {
			t.Errorf("page size %d accepted", size)
		}
	}
	if n := fake.Requests(fakeapi.Visitors); n != 0 {
		t.Errorf("%d requests sent for invalid page sizes", n)
	}
}

func TestAllVisitorsDuplicatePathFirstCopyWins(t *testing.T) {
	t.Parallel()
	fake, _, srv := startFake(t, fakeapi.Options{Paths: 600})
	c := newClient(t, srv.URL, nil)
	ctx := testCtx(t)

	// The rows as the first page has them, fetched before the fault.
	page1, err := c.VisitorsPage(ctx, testProject, apiclient.VisitorsQuery{DateFrom: week.DateFrom, DateTo: week.DateTo, Limit: 250})
	if err != nil {
		t.Fatal(err)
	}
	page2, err := c.VisitorsPage(ctx, testProject, apiclient.VisitorsQuery{DateFrom: week.DateFrom, DateTo: week.DateTo, Limit: 250, Offset: 250})
	if err != nil {
		t.Fatal(err)
	}
	firstSeen := map[string]apiclient.PathVisitors{}
	for _, p := range append(page1.Rows, page2.Rows...) {
		firstSeen[p.Path] = p
	}

	fake.SetFault(fakeapi.Visitors, fakeapi.Fault{DuplicatePath: true})
	v, err := c.AllVisitors(ctx, testProject, week, 250, 0)
	if err != nil {
		t.Fatalf("AllVisitors: %v", err)
	}
	if len(v.Paths) != 600 {
		t.Errorf("got %d entries, want 600 (one per path)", len(v.Paths))
	}
	if v.DuplicatePaths != 2 {
		t.Errorf("DuplicatePaths = %d, want 2 (pages 2 and 3 each repeat one path)", v.DuplicatePaths)
	}
	count := map[string]int{}
	for _, p := range v.Paths {
		count[p.Path]++
		if want, ok := firstSeen[p.Path]; ok && p != want {
			t.Errorf("%s: got %+v, want the first copy %+v", p.Path, p.VisitorCounts, want.VisitorCounts)
		}
	}
	for path, n := range count {
		if n != 1 {
			t.Errorf("path %s appears %d times", path, n)
		}
	}
	// The repeated rows carry other counts, so the check above has teeth.
	dup, err := c.VisitorsPage(ctx, testProject, apiclient.VisitorsQuery{DateFrom: week.DateFrom, DateTo: week.DateTo, Limit: 250, Offset: 250})
	if err != nil {
		t.Fatal(err)
	}
	if dup.Rows[0].Path != page1.Rows[0].Path || dup.Rows[0] == page1.Rows[0] {
		t.Fatalf("fake's duplicate row %+v is not a differing copy of %+v", dup.Rows[0], page1.Rows[0])
	}
}

func TestAllVisitorsEndlessHasMoreIsAnError(t *testing.T) {
	t.Parallel()
	fake, _, srv := startFake(t, fakeapi.Options{Paths: 20})
	fake.SetFault(fakeapi.Visitors, fakeapi.Fault{EndlessHasMore: true})
	c := newClient(t, srv.URL, nil)
	v, err := c.AllVisitors(testCtx(t), testProject, week, 10, 7)
	if !errors.Is(err, apiclient.ErrTooManyPages) {
		t.Fatalf("err = %v, want ErrTooManyPages", err)
	}
	if v != nil {
		t.Errorf("got a partial result %+v alongside the error", v)
	}
	if got := fake.Requests(fakeapi.Visitors); got != 7 {
		t.Errorf("%d requests, want exactly the cap of 7", got)
	}
}

func TestAllVisitorsLaterPageFailureGivesNoPartialResult(t *testing.T) {
	t.Parallel()
	fake, rec, srv := startFake(t, fakeapi.Options{Paths: 1000})
	rec.intercept = func(n int, w http.ResponseWriter, r *http.Request) bool {
		if n == 2 { // third page
			http.Error(w, "boom", http.StatusInternalServerError)
			return true
		}
		return false
	}
	c := newClient(t, srv.URL, func(cfg *apiclient.Config) { cfg.MaxRetries = 0 })
	v, err := c.AllVisitors(testCtx(t), testProject, week, 250, 0)
	if err == nil || v != nil {
		t.Fatalf("got %+v, %v; want an error and no result", v, err)
	}
	if apiclient.StatusCode(err) != 500 {
		t.Errorf("StatusCode(err) = %d, want 500 (err %v)", apiclient.StatusCode(err), err)
	}
	if !strings.Contains(err.Error(), "offset 500") {
		t.Errorf("error %q does not name the failing offset", err)
	}
	if got := fake.Requests(fakeapi.Visitors); got != 2 {
		t.Errorf("fake answered %d requests, want 2", got)
	}
}

func TestVisitorsPageEscapesProjectID(t *testing.T) {
	t.Parallel()
	fake, rec, srv := startFake(t, fakeapi.Options{Paths: 5, Projects: []string{"a/b", "team docs", "ü"}})
	c := newClient(t, srv.URL, nil)
	ctx := testCtx(t)
	for _, id := range []string{"a/b", "team docs", "ü"} {
		if _, err := c.VisitorsPage(ctx, id, apiclient.VisitorsQuery{}); err != nil {
			t.Errorf("project %q: %v (sent %s)", id, err, rec.requests()[len(rec.requests())-1].uri)
		}
	}
	// A literal percent sign is an id of its own, not an escape.
	_, err := c.VisitorsPage(ctx, "a%2Fb", apiclient.VisitorsQuery{})
	if apiclient.StatusCode(err) != http.StatusNotFound {
		t.Errorf("project %q: err = %v, want 404 from the fake", "a%2Fb", err)
	}
	if got := fake.Requests(fakeapi.Visitors); got != 4 {
		t.Errorf("fake's visitors handler saw %d requests, want 4", got)
	}
	for _, id := range []string{"", ".", ".."} {
		if _, err := c.VisitorsPage(ctx, id, apiclient.VisitorsQuery{}); err == nil {
			t.Errorf("project %q accepted", id)
		}
	}
	if got := len(rec.requests()); got != 4 {
		t.Errorf("%d requests reached the server, want 4 (invalid ids send nothing)", got)
	}
}
