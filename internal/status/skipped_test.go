package status

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestPageShowsSkippedRows: rows of the API's answers that a refresh
// skipped are on the page and in its JSON; a refresh that skipped none
// shows nothing.
func TestPageShowsSkippedRows(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	rep := Report{GeneratedAt: at, Demands: []Demand{
		{Organization: "o", Project: "p", Source: "feedback_items", Window: "7d", Result: ResultOK, Exported: true, SkippedRows: 3},
		{Organization: "o", Project: "p", Source: "visitors", Window: "7d", Result: ResultOK, Exported: true},
	}}
	h := Handler(func(context.Context) Report { return rep }, Options{})
	_, _, page := get(t, h, http.MethodGet, "/")
	if n := strings.Count(page, "rows skipped"); n != 1 || !strings.Contains(page, "3 rows skipped") {
		t.Errorf("the page says %d times that rows were skipped, want once: 3 rows skipped", n)
	}
	_, _, js := get(t, h, http.MethodGet, "/?format=json")
	if n := strings.Count(js, `"skipped_rows"`); n != 1 || !strings.Contains(strings.ReplaceAll(js, " ", ""), `"skipped_rows":3`) {
		t.Errorf("the JSON has skipped_rows %d times, want once with 3", n)
	}
}
