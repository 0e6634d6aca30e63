package status

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
)

// TestPageBoundsValuesFromTheAPI: a report whose project id, job id and job
// statuses are 1 MB long, and a project with 5,000 distinct statuses, gives
// a small page (HTML and JSON) with each value cut to bounded.MaxLabelBytes
// with a hash suffix, distinct values distinct, and the statuses beyond the
// cap summed under other with nothing lost.
func TestPageBoundsValuesFromTheAPI(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	long := strings.Repeat("z", 1<<20)
	by := map[string]int{"active": 1, long + "1": 2, long + "2": 3}
	for i := range 5000 {
		by[fmt.Sprintf("weird_%04d", i)] = 1
	}
	rep := Report{GeneratedAt: at,
		Demands: []Demand{{Organization: "o", Project: long, Source: "visitors", Window: "1d"}},
		Jobs: &Jobs{Projects: []ProjectJobs{{Project: long, ByStatus: by}},
			MostOverduePoll: &Poll{Project: long, JobID: long, DueAt: at.Add(-time.Hour)}}}
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
	_, _, body := get(t, h, http.MethodGet, "/?format=json")
	var got Report
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	statuses := got.Jobs.Projects[0].ByStatus
	if len(statuses) != len(knownStatuses)+bounded.MaxUnknownValues+1 {
		t.Errorf("%d statuses shown, want %d", len(statuses), len(knownStatuses)+bounded.MaxUnknownValues+1)
	}
	total := 0
	for _, n := range statuses {
		total += n
	}
	if total != 1+2+3+5000 {
		t.Errorf("statuses sum to %d, want %d", total, 1+2+3+5000)
	}
	if statuses[bounded.Label(long+"1")] != 2 || statuses[bounded.Label(long+"2")] != 3 {
		t.Errorf("the two long statuses are not shown apart: %v", statuses)
	}
	if p := got.Jobs.MostOverduePoll; p == nil || p.JobID != bounded.Label(long) || got.Demands[0].Project != bounded.Label(long) {
		t.Errorf("the long job id or project id is not cut: %+v", p)
	}
}
