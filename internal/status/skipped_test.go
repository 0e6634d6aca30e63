package status

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestPageShowsSkippedRows: rows of the API's answers that a refresh
// skipped, and site totals it skipped, are on the page and in its JSON; a
// refresh that skipped none shows nothing.
func TestPageShowsSkippedRows(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	rep := Report{GeneratedAt: at, Demands: []Demand{
		{Organization: "o", Project: "p", Source: "feedback_items", Window: "7d", Result: ResultOK, Exported: true, SkippedRows: 3},
		{Organization: "o", Project: "p", Source: "visitors", Window: "7d", Result: ResultOK, Exported: true},
		{Organization: "o", Project: "p", Source: "views", Window: "1d", Result: ResultOK, Exported: true, SkippedRows: 1, TotalsSkipped: true},
	}}
	h := Handler(func(context.Context) Report { return rep }, Options{})
	_, _, page := get(t, h, http.MethodGet, "/")
	if n := strings.Count(page, "rows skipped"); n != 2 || !strings.Contains(page, "3 rows skipped") {
		t.Errorf("the page says %d times that rows were skipped, want twice: 3 rows skipped", n)
	}
	if n := strings.Count(page, ">site totals skipped<"); n != 1 {
		t.Errorf("the page says %d times that site totals were skipped, want once", n)
	}
	_, _, js := get(t, h, http.MethodGet, "/?format=json")
	if n := strings.Count(js, `"skipped_rows"`); n != 2 || !strings.Contains(strings.ReplaceAll(js, " ", ""), `"skipped_rows":3`) {
		t.Errorf("the JSON has skipped_rows %d times, want twice, one with 3", n)
	}
	if n := strings.Count(strings.ReplaceAll(js, " ", ""), `"totals_skipped":true`); n != 1 {
		t.Errorf("the JSON has totals_skipped %d times, want once", n)
	}
}
