package apiclient_test

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
)

// Issue 44: one value no real answer can mean never fails a walk. Each
// endpoint answers rows and totals with a negative count, a count beyond
// 2^63, a ratio outside 0..1, a string where a number stands and keys the
// reference does not name, and ends its pages without a way on; the walk
// keeps exactly its good rows, and counts each skip by reason.

// impossibleAPI answers every analytics endpoint with such values.
func impossibleAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	rows := `{"path":"/a","human":2,"ai":1,"total":3},{"path":"/neg","human":-1,"ai":1,"total":1},` +
		`{"path":"/huge","human":1e19,"ai":1,"total":1},{"path":"/str","human":"5","ai":1,"total":1},` +
		`{"path":"/extra","human":1,"ai":1,"total":2,"undocumented":-5,"other":"x"}`
	page2 := r.URL.Query().Get("offset") != "" || r.URL.Query().Get("cursor") != ""
	switch p := r.URL.Path; {
	case strings.HasSuffix(p, "/visitors"), strings.HasSuffix(p, "/views"):
		key := p[strings.LastIndex(p, "/")+1:]
		if page2 { // an empty page that says hasMore: the end
			fmt.Fprintf(w, `{"totals":{"human":1,"ai":1,"total":1},%q:[],"hasMore":true}`, key)
			return
		}
		fmt.Fprintf(w, `{"totals":{"human":1,"ai":-1,"total":1},%q:[%s],"hasMore":true}`, key, rows)
	case strings.HasSuffix(p, "/feedback/by-page"):
		fmt.Fprint(w, `{"feedback":[{"path":"/a","thumbsUp":1,"thumbsDown":2,"code":0,"total":3},`+
			`{"path":"/b","thumbsUp":1,"thumbsDown":-2,"code":0,"total":3},{"path":"/c","thumbsUp":1,"thumbsDown":2,"code":0,"total":-0.6,"x":true}],"hasMore":false}`)
	case strings.HasSuffix(p, "/searches"):
		// The same cursor twice: the end.
		fmt.Fprint(w, `{"searches":[{"searchQuery":"a","hits":5,"ctr":0.5,"topClickedPage":null,"lastSearchedAt":"nonsense"},`+
			`{"searchQuery":"b","hits":4,"ctr":1.5,"topClickedPage":null,"lastSearchedAt":""},{"searchQuery":"c","hits":-4,"ctr":0.5,"topClickedPage":null,"lastSearchedAt":""},`+
			`{"searchQuery":"d","hits":"4","ctr":0.5,"topClickedPage":null,"lastSearchedAt":""}],"totalSearches":-3,"nextCursor":"c1"}`)
	case strings.HasSuffix(p, "/assistant/caller-stats"):
		fmt.Fprint(w, `{"web":5,"api":-1,"other":"x","total":1e19,"newcaller":3,"meta":"str","flag":true,"neg":-2,"nul":null}`)
	case strings.HasSuffix(p, "/assistant"):
		fmt.Fprint(w, `{"conversations":[{"id":"c1","timestamp":"2025-03-13T10:00:00Z"}],"nextCursor":null,"hasMore":true}`)
	case strings.HasSuffix(p, "/feedback"):
		fmt.Fprint(w, `{"feedback":[{"id":"f1","path":"/a","createdAt":"2025-03-13T10:00:00Z","source":"agent","status":"pending"}],"nextCursor":"","hasMore":true}`)
	default:
		http.NotFound(w, r)
	}
}

func TestImpossibleValuesAreSkippedAndCounted(t *testing.T) {
	t.Parallel()
	rec, srv := serve(t, impossibleAPI)
	reg := prometheus.NewPedanticRegistry()
	c := newClient(t, srv.URL, func(cfg *apiclient.Config) { cfg.Metrics = apiclient.NewMetrics(reg) })
	ctx := testCtx(t)
	week := apiclient.DateRange{DateFrom: "2025-03-08", DateTo: "2025-03-15"}
	traffic := apiclient.Skips{apiclient.SkipNegative: 2, apiclient.SkipMalformed: 2, apiclient.SkipNoNextPage: 1}
	wantPaths := []string{"/a", "/extra"}
	pathsOf := func(rows []apiclient.PathVisitors) (out []string) {
		for _, r := range rows {
			out = append(out, r.Path)
		}
		return out
	}

	v, err := c.AllVisitors(ctx, testProject, apiclient.VisitorsQuery{DateFrom: week.DateFrom, DateTo: week.DateTo}, 250, 0)
	if err != nil {
		t.Fatalf("visitors: %v", err)
	}
	if !reflect.DeepEqual(pathsOf(v.Paths), wantPaths) || v.Paths[0].VisitorCounts != (apiclient.VisitorCounts{Human: 2, AI: 1, Total: 3}) || v.Requests != 2 {
		t.Errorf("visitors: %+v in %d requests, want exactly %v", v.Paths, v.Requests, wantPaths)
	}
	if !reflect.DeepEqual(v.Skipped, traffic) {
		t.Errorf("visitors skipped %v, want %v (a row and the totals negative, two malformed, the end)", v.Skipped, traffic)
	}
	var rows []apiclient.PathVisitors
	vw, err := c.ViewsPages(ctx, testProject, week, 250, 0, func(p []apiclient.PathViews) {
		for _, r := range p {
			rows = append(rows, apiclient.PathVisitors{Path: r.Path, VisitorCounts: r.TrafficCounts})
		}
	})
	if err != nil || !vw.TotalsSkipped || vw.Totals != (apiclient.TrafficCounts{}) || !reflect.DeepEqual(vw.Skipped, traffic) || !reflect.DeepEqual(pathsOf(rows), wantPaths) {
		t.Errorf("views: %+v, %v, rows %v; want the totals skipped, %v skipped, rows %v", vw, err, pathsOf(rows), traffic, wantPaths)
	}
	tot, err := c.ViewsTotals(ctx, testProject, week)
	if err != nil || !tot.TotalsSkipped || !reflect.DeepEqual(tot.Skipped, apiclient.Skips{apiclient.SkipNegative: 1}) {
		t.Errorf("view totals alone: %+v, %v; want them skipped as negative", tot, err)
	}

	fb, err := c.FeedbackByPage(ctx, testProject, apiclient.FeedbackByPageQuery{DateRange: week, Limit: 100})
	if err != nil || len(fb.Pages) != 1 || fb.Pages[0].Path != "/a" || fb.Pages[0].Total != 3 ||
		!reflect.DeepEqual(fb.Skipped, apiclient.Skips{apiclient.SkipNegative: 2}) {
		t.Errorf("feedback by page: %+v, %v; want /a alone, two negative skipped (-0.6 is a count of -1)", fb, err)
	}

	s, err := c.TopSearches(ctx, testProject, week, 10, 0)
	wantSearch := apiclient.Skips{apiclient.SkipOutOfRange: 2, apiclient.SkipNegative: 3, apiclient.SkipMalformed: 2, apiclient.SkipNoNextPage: 1}
	if err != nil || len(s.Queries) != 1 || s.Queries[0].Query != "a" || s.Queries[0].CTR != 0.5 || !s.TotalSkipped || s.TotalSearches != 0 || s.Requests != 2 {
		t.Errorf("searches: %+v, %v; want query a alone, the total skipped, 2 requests", s, err)
	} else if !reflect.DeepEqual(s.Skipped, wantSearch) {
		t.Errorf("searches skipped %v, want %v (per page: ctr, hits, a string, the first page's total; then the repeated cursor)", s.Skipped, wantSearch)
	}

	cs, err := c.AssistantCallerStats(ctx, testProject, week)
	if err != nil || !reflect.DeepEqual(cs.ByCaller, map[string]int64{"web": 5, "newcaller": 3}) || !cs.TotalSkipped ||
		!reflect.DeepEqual(cs.Skipped, apiclient.Skips{apiclient.SkipNegative: 2, apiclient.SkipMalformed: 2}) {
		t.Errorf("caller stats: %+v, %v; want web and newcaller, the total skipped, api and neg negative, other and total malformed", cs, err)
	}

	turns, err := c.AllTurns(ctx, testProject, week, 100, 0)
	if err != nil || len(turns.Turns) != 1 || turns.Requests != 1 || !reflect.DeepEqual(turns.Skipped, apiclient.Skips{apiclient.SkipNoNextPage: 1}) {
		t.Errorf("assistant, hasMore without a cursor: %+v, %v; want its turn and the end counted", turns, err)
	}
	items, err := c.AllFeedback(ctx, testProject, week, 100, 0)
	if err != nil || len(items.Items) != 1 || !reflect.DeepEqual(items.Skipped, apiclient.Skips{apiclient.SkipNoNextPage: 1}) {
		t.Errorf("feedback, hasMore with an empty cursor: %+v, %v; want its item and the end counted", items, err)
	}

	// The counter holds every skip of every walk, by endpoint and reason.
	for ep, want := range map[string]apiclient.Skips{
		"visitors": traffic, "views": {apiclient.SkipNegative: 3, apiclient.SkipMalformed: 2, apiclient.SkipNoNextPage: 1}, "feedback_by_page": fb.Skipped,
		"searches": wantSearch, "assistant_caller_stats": cs.Skipped, "assistant": turns.Skipped, "feedback": items.Skipped,
	} {
		for _, reason := range apiclient.SkipReasons {
			if got := skippedSeries(t, reg, ep, reason); got != float64(want[reason]) {
				t.Errorf("mintlify_api_rows_skipped_total{endpoint=%q,reason=%q} = %v, want %d", ep, reason, got, want[reason])
			}
		}
	}
	if n := len(rec.requests()); n != 11 {
		t.Errorf("%d requests, want 11", n)
	}
}
