package fakeapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

const visitorsPath = "/v1/analytics/docs/visitors"

func TestVisitorsQueryValidation(t *testing.T) {
	t.Parallel()
	e := start(t, fakeapi.Options{Paths: 10})
	for query, want := range map[string]int{
		"":                                       200,
		"?limit=1":                               200,
		"?limit=250":                             200,
		"?limit=0":                               400,
		"?limit=251":                             400,
		"?limit=-1":                              400,
		"?limit=ten":                             400,
		"?offset=0":                              200,
		"?offset=10000":                          200,
		"?offset=-1":                             400,
		"?offset=1.5":                            400,
		"?dateFrom=2025-03-01&dateTo=2025-03-02": 200,
		"?dateFrom=2025-03-01T00:00:00Z&dateTo=2025-03-01T06:00:00Z": 200,
		"?dateFrom=2025-03-01T00:00:00%2B01:00&dateTo=2025-03-02":    200,
		"?dateFrom=2025-03-02&dateTo=2025-03-02":                     400, // empty range: dateTo is exclusive
		"?dateFrom=2025-03-03&dateTo=2025-03-02":                     400,
		"?dateFrom=2025-13-01&dateTo=2025-12-02":                     400,
		"?dateFrom=03/01/2025&dateTo=2025-03-02":                     400,
		"?dateFrom=2025-03-01":                                       200, // each bound is optional (the reference)
		"?dateTo=2025-03-01":                                         200,
	} {
		r := e.get(visitorsPath + query)
		if want == 200 {
			var p page
			e.decode(r, &p)
			continue
		}
		e.wantError(r, want, query)
	}
	if got := len(e.fake.VisitorsQueries()); got != 20 {
		t.Errorf("VisitorsQueries has %d entries, want 20 (every request that passed auth)", got)
	}
}

func TestVisitorsAuthAndProject(t *testing.T) {
	t.Parallel()
	e := start(t, fakeapi.Options{Paths: 10})
	e.wantError(e.do("GET", visitorsPath, "", map[string]string{"Authorization": ""}), 401, "no key")
	e.wantError(e.do("GET", visitorsPath, "", map[string]string{"Authorization": "Bearer mint_other"}), 401, "wrong key")
	e.wantError(e.do("GET", visitorsPath, "", map[string]string{"Authorization": key}), 401, "no Bearer")
	e.wantError(e.do("GET", visitorsPath, "", map[string]string{"Authorization": "Basic " + key}), 401, "Basic")
	e.wantError(e.get("/v1/analytics/other/visitors"), 404, "unknown project")
	e.wantError(e.do("POST", "/v2/agent/other/job", `{"prompt":"x"}`, nil), 404, "unknown project, create job")
	e.wantError(e.get("/v2/agent/other/job/job_000001"), 404, "unknown project, get job")
	if got := e.fake.Requests(fakeapi.Visitors); got != 5 {
		t.Errorf("Requests(visitors) = %d, want 5 (rejected ones count)", got)
	}

	// Without APIKey, any key with the documented prefix is accepted, and
	// without Projects any project exists.
	open := fakeapi.New(fakeapi.Options{Paths: 3, Now: fixedNow})
	srv := newServer(t, open)
	for auth, want := range map[string]int{"Bearer mint_anything": 200, "Bearer sk_live_x": 401, "Bearer ": 401} {
		req, _ := http.NewRequest("GET", srv+"/v1/analytics/whatever/visitors", nil)
		req.Header.Set("Authorization", auth)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("open fake, %q: status %d, want %d", auth, resp.StatusCode, want)
		}
	}
}

// walk reads every page with the given limit.
func walk(t *testing.T, e *env, project, dates string, limit int) ([]row, []counts, int) {
	t.Helper()
	var rows []row
	var totals []counts
	requests := 0
	for offset := 0; ; offset += limit {
		var p page
		e.decode(e.get(fmt.Sprintf("/v1/analytics/%s/visitors?limit=%d&offset=%d%s", project, limit, offset, dates)), &p)
		requests++
		if p.HasMore == nil || p.Visitors == nil {
			t.Fatalf("page at offset %d lacks hasMore or visitors", offset)
		}
		rows = append(rows, p.Visitors...)
		totals = append(totals, p.Totals)
		if !*p.HasMore {
			return rows, totals, requests
		}
		if requests > 100 {
			t.Fatal("hasMore never ends")
		}
	}
}

func TestVisitorsData(t *testing.T) {
	t.Parallel()
	e := start(t, fakeapi.Options{Paths: 1234})
	const week = "&dateFrom=2025-03-08&dateTo=2025-03-15"
	rows, totals, requests := walk(t, e, "docs", week, 250)
	if requests != 5 || len(rows) != 1234 {
		t.Fatalf("%d requests, %d rows; want 5 and 1234", requests, len(rows))
	}
	seen := map[string]bool{}
	var sum counts
	aiAhead := 0
	for i, r := range rows {
		if r.AI > r.Human {
			aiAhead++
		}
		if seen[r.Path] {
			t.Errorf("path %s repeated", r.Path)
		}
		seen[r.Path] = true
		if r.Path == "" || r.Path[0] != '/' {
			t.Errorf("path %q", r.Path)
		}
		if i > 0 && r.Total > rows[i-1].Total {
			t.Fatalf("row %d (%s, total %d) above row %d (total %d): not ordered by total descending", i, r.Path, r.Total, i-1, rows[i-1].Total)
		}
		if r.Human < 0 || r.AI < 0 || r.Total < max(r.Human, r.AI) {
			t.Errorf("row %+v: total below a part", r)
		}
		if r.Human > 0 && r.AI > 0 && r.Total >= r.Human+r.AI {
			t.Errorf("row %+v: total is not deduplicated", r)
		}
		sum.Human += r.Human
		sum.AI += r.AI
	}
	// docs/metrics.md's "pages where AI outnumbers humans" must find some, but
	// not most.
	if aiAhead == 0 || aiAhead > len(rows)/2 {
		t.Errorf("%d of %d pages with more AI than human visitors, want some but not most", aiAhead, len(rows))
	}
	site := totals[0]
	for i, tt := range totals {
		if tt != site {
			t.Errorf("page %d totals %+v differ from page 0's %+v", i, tt, site)
		}
	}
	if site.Total >= site.Human+site.AI || site.Total < max(site.Human, site.AI) {
		t.Errorf("site totals %+v: total must be deduplicated, not the sum", site)
	}
	if site.Human >= sum.Human || site.AI >= sum.AI {
		t.Errorf("site totals %+v not below the sums over pages %+v (visitors see several pages)", site, sum)
	}
	if site.Human == 0 || site.AI == 0 {
		t.Errorf("site totals %+v: want both kinds of traffic", site)
	}

	// Longer windows have more visitors; a window of a few hours is not empty.
	_, day, _ := walk(t, e, "docs", "&dateFrom=2025-03-14&dateTo=2025-03-15", 250)
	if day[0].Total >= site.Total {
		t.Errorf("1 day total %d >= 7 day total %d", day[0].Total, site.Total)
	}
	_, hours, _ := walk(t, e, "docs", "&dateFrom=2025-03-14T00:00:00Z&dateTo=2025-03-14T06:00:00Z", 250)
	if hours[0].Total == 0 {
		t.Error("a range of 6 hours has no visitors")
	}

	// Deterministic for a fixed clock.
	a, b := e.get(visitorsPath+"?limit=7"+week), e.get(visitorsPath+"?limit=7"+week)
	if !bytes.Equal(a.body, b.body) {
		t.Error("same request, same clock, different answers")
	}
}

func TestVisitorsPaging(t *testing.T) {
	t.Parallel()
	e := start(t, fakeapi.Options{Paths: 500})
	var p page
	e.decode(e.get(visitorsPath), &p)
	if len(p.Visitors) != 50 || !*p.HasMore {
		t.Errorf("default page: %d rows, hasMore %v; want 50, true", len(p.Visitors), *p.HasMore)
	}
	for _, tc := range []struct {
		offset, rows int
		more         bool
	}{{0, 250, true}, {249, 250, true}, {250, 250, false}, {251, 249, false}, {500, 0, false}, {9999, 0, false}} {
		var p page
		r := e.get(fmt.Sprintf("%s?limit=250&offset=%d", visitorsPath, tc.offset))
		e.decode(r, &p)
		if len(p.Visitors) != tc.rows || *p.HasMore != tc.more {
			t.Errorf("offset %d: %d rows, hasMore %v; want %d, %v", tc.offset, len(p.Visitors), *p.HasMore, tc.rows, tc.more)
		}
		if tc.rows == 0 && !bytes.Contains(r.body, []byte(`"visitors":[]`)) {
			t.Errorf("offset %d: visitors not an empty array: %s", tc.offset, r.body)
		}
	}
	// Pages overlap exactly as offsets say.
	var a, b page
	e.decode(e.get(visitorsPath+"?limit=10&offset=0"), &a)
	e.decode(e.get(visitorsPath+"?limit=10&offset=5"), &b)
	for i := range 5 {
		if a.Visitors[5+i] != b.Visitors[i] {
			t.Errorf("row %d differs between overlapping pages", 5+i)
		}
	}
}

func TestVisitorsEmptyProject(t *testing.T) {
	t.Parallel()
	e := start(t, fakeapi.Options{Projects: []string{"docs", "new"}, PathsByProject: map[string]int{"new": 0}, Paths: 40})
	r := e.get("/v1/analytics/new/visitors?limit=250")
	var p page
	e.decode(r, &p)
	if len(p.Visitors) != 0 || p.Totals != (counts{}) || *p.HasMore {
		t.Errorf("empty project: %s", r.body)
	}
	if !bytes.Contains(r.body, []byte(`"visitors":[]`)) {
		t.Errorf("visitors must be [] not null: %s", r.body)
	}
	rows, _, _ := walk(t, e, "docs", "", 250)
	if len(rows) != 40 {
		t.Errorf("other project: %d rows, want Paths=40", len(rows))
	}
}

func TestVisitorsFaults(t *testing.T) {
	t.Parallel()
	e := start(t, fakeapi.Options{Paths: 30})

	e.fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Status: 429, RetryAfter: "7", Remaining: 2})
	for i := range 2 {
		r := e.get(visitorsPath)
		e.wantError(r, 429, "fault")
		if got := r.header.Get("Retry-After"); got != "7" {
			t.Errorf("request %d: Retry-After %q", i, got)
		}
	}
	e.decode(e.get(visitorsPath), &page{}) // Remaining used up

	// A status fault comes before auth, like a gateway's would.
	e.fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Status: 503})
	e.wantError(e.do("GET", visitorsPath, "", map[string]string{"Authorization": ""}), 503, "503 before auth")
	e.wantError(e.get(visitorsPath), 503, "persistent fault")
	// Faults are per endpoint.
	if r := e.do("POST", "/v2/agent/docs/job", `{"prompt":"x"}`, nil); r.status != http.StatusCreated {
		t.Errorf("create job under a visitors fault: %d %s", r.status, r.body)
	}
	e.fake.ClearFaults()
	e.decode(e.get(visitorsPath), &page{})

	e.fake.SetFault(fakeapi.Visitors, fakeapi.Fault{MalformedJSON: true, Remaining: 1})
	r := e.get(visitorsPath)
	if r.status != 200 || json.Valid(r.body) {
		t.Errorf("malformed JSON fault: %d %s", r.status, r.body)
	}
	e.fake.SetFault(fakeapi.Visitors, fakeapi.Fault{MalformedJSON: true})
	e.wantError(e.do("GET", visitorsPath, "", map[string]string{"Authorization": ""}), 401, "malformed JSON fault still checks auth")
	e.fake.ClearFaults()

	e.fake.SetFault(fakeapi.Visitors, fakeapi.Fault{EndlessHasMore: true})
	for _, offset := range []int{0, 20, 1000, 100000} {
		var p page
		e.decode(e.get(fmt.Sprintf("%s?limit=20&offset=%d", visitorsPath, offset)), &p)
		if !*p.HasMore || len(p.Visitors) != 20 {
			t.Errorf("endless at offset %d: hasMore %v, %d rows", offset, *p.HasMore, len(p.Visitors))
		}
	}
	e.fake.ClearFaults()

	var p1, p2, p3 page
	e.decode(e.get(visitorsPath+"?limit=10"), &p1)
	e.fake.SetFault(fakeapi.Visitors, fakeapi.Fault{DuplicatePath: true})
	e.decode(e.get(visitorsPath+"?limit=10&offset=10"), &p2)
	e.decode(e.get(visitorsPath+"?limit=10"), &p3)
	if len(p2.Visitors) != 11 || p2.Visitors[0].Path != p1.Visitors[0].Path || p2.Visitors[0] == p1.Visitors[0] {
		t.Errorf("duplicate fault: page 2 starts %+v, want a differing copy of %+v", p2.Visitors[0], p1.Visitors[0])
	}
	if len(p3.Visitors) != 10 {
		t.Errorf("duplicate fault changed the first page: %d rows", len(p3.Visitors))
	}
	e.fake.ClearFaults()

	e.fake.SetFault(fakeapi.Visitors, fakeapi.Fault{NegativeCounts: true})
	var pn page
	e.decode(e.get(visitorsPath), &pn)
	if pn.Visitors[0].Human >= 0 {
		t.Errorf("negative fault: first row %+v", pn.Visitors[0])
	}
	e.fake.ClearFaults()
}

func TestFaultLatency(t *testing.T) {
	t.Parallel()
	e := start(t, fakeapi.Options{Paths: 3})
	e.fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Latency: 300 * time.Millisecond, Remaining: 1})
	start := time.Now()
	e.decode(e.get(visitorsPath), &page{})
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("answered in %v, want >= the 300ms latency", d)
	}

	// The client giving up ends the wait (the server does not hold the
	// handler for the whole latency).
	e.fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Latency: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.url+visitorsPath, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Error("no timeout")
	}
	// httptest's Close (in Cleanup) waits for handlers: this test would hang
	// for an hour if the handler ignored the cancelled request.
}

func newServer(t *testing.T, h http.Handler) string {
	t.Helper()
	base, wait, err := h.(*fakeapi.Server).Serve(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := wait(); err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return base
}
