package status

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
)

// TestPageBoundsValuesFromTheAPI: a report whose project id, operation id
// and cells are 1 MB long gives a small page (HTML and JSON) with each
// value cut to bounded.MaxLabelBytes with a hash suffix, distinct values
// distinct, and a cell that is markup escaped (it stays text). The kinds
// bound their sections' JSON and fold their statuses (the kinds' tests).
func TestPageBoundsValuesFromTheAPI(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	long := strings.Repeat("z", 1<<20)
	s := Section{Key: "things", Title: "Things", Columns: []Column{{Name: "Project"}, {Name: "Branch"}, {Name: "Status"}}}
	for i := range MaxRows {
		s.Rows = append(s.Rows, Row{Project: long, Cells: []Cell{{Text: long}, {Text: `<script>alert("b")</script>`, Code: true},
			{Text: long + string(rune('a'+i)), Level: LevelWarn}}})
	}
	rep := Report{GeneratedAt: at,
		Demands: []Demand{{Organization: "o", Project: long, Source: "visitors", Window: "1d"}},
		Jobs:    &Jobs{Sections: []Section{s}, MostOverduePoll: &Poll{Project: long, Kind: "thing", JobID: long, DueAt: at.Add(-time.Hour)}}}
	h := Handler(func(context.Context) Report { return rep }, Options{})
	for _, target := range []string{"/", "/?format=json"} {
		code, _, body := get(t, h, http.MethodGet, target)
		if code != http.StatusOK || len(body) > 128<<10 {
			t.Fatalf("%s: %d, %d bytes; want 200 and a small page", target, code, len(body))
		}
		if strings.Contains(body, strings.Repeat("z", bounded.MaxLabelBytes+1)) {
			t.Errorf("%s shows a value longer than the cap", target)
		}
	}
	_, _, page := get(t, h, http.MethodGet, "/")
	if strings.Contains(page, `<script>alert`) || !strings.Contains(page, `&lt;script&gt;alert(&#34;b&#34;)&lt;/script&gt;`) {
		t.Error("a cell that is markup is not escaped in the page")
	}
	for i := range MaxRows {
		if !strings.Contains(page, bounded.Label(long+string(rune('a'+i)))) {
			t.Errorf("row %d's long status is not shown apart from the others", i)
		}
	}
	_, _, body := get(t, h, http.MethodGet, "/?format=json")
	var got Report
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	if p := got.Jobs.MostOverduePoll; p == nil || p.JobID != bounded.Label(long) || p.Kind != "thing" || got.Demands[0].Project != bounded.Label(long) {
		t.Errorf("the long operation id or project id is not cut: %+v", p)
	}
}
