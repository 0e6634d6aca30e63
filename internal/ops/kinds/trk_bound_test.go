package kinds_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
)

// TestLongJobStatusesBounded: jobs whose status the API answers as 1 MB of
// text (two of them differing only in their last byte) are exported, and
// shown on the status page, as statuses cut to bounded.MaxLabelBytes with a
// hash suffix: distinct, small, and counted. Twelve more undocumented
// statuses go beyond the cap of 10: four are summed under other, and
// counted.
func TestLongJobStatusesBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	e.open(e.config())
	long := strings.Repeat("q", 1<<20)
	a, b := e.create("p1", "first"), e.create("p1", "second")
	statuses := map[string]string{a.ID: long + "a", b.ID: long + "b"}
	for i := range 12 {
		statuses[e.create("p1", fmt.Sprint("more ", i)).ID] = fmt.Sprintf("weird_%02d", i)
	}
	for id, st := range statuses {
		if err := e.fake.SetJobStatus("p1", id, st); err != nil {
			t.Fatal(err)
		}
	}
	e.tickUntil(20, "both jobs polled", func() bool {
		for id, st := range statuses {
			if e.status("p1", id) != bounded.Text(st) {
				return false
			}
		}
		return true
	})
	// 'q' sorts before 'w': the two long statuses and weird_00..07 are
	// kept, weird_08..11 folded.
	if got := e.metric("mintlify_agent_jobs", "project", "p1", "status", "other"); got != 4 {
		t.Errorf("mintlify_agent_jobs{status=other} = %v, want 4", got)
	}
	if got := e.metric("mintlify_agent_job_statuses_folded", "project", "p1"); got != 4 {
		t.Errorf("mintlify_agent_job_statuses_folded = %v, want 4", got)
	}

	cut := map[string]float64{}
	for labels, v := range e.series("mintlify_agent_jobs") {
		for _, kv := range strings.Split(labels, ",") {
			if len(kv) > len("status=")+bounded.MaxLabelBytes {
				t.Fatalf("mintlify_agent_jobs has a label of %d bytes", len(kv))
			}
			if strings.HasPrefix(kv, "status=qqq") {
				cut[kv] = v
			}
		}
	}
	if len(cut) != 2 {
		t.Errorf("the two long statuses are %d series: %v", len(cut), cut)
	}
	for kv, v := range cut {
		if v != 1 || !strings.Contains(kv, "…") {
			t.Errorf("series %.40q… = %v, want a cut status with a hash holding one job", kv, v)
		}
	}

	// Stored and served bounded too (issue 36, 4.4: 17 such jobs made a
	// 17 MB list and a 34 MB state file): the list and the state stay small.
	list, err := json.Marshal(e.trk.Jobs("p1", ""))
	if err != nil {
		t.Fatal(err)
	}
	if len(list) > 64<<10 {
		t.Errorf("the jobs list is %d bytes: the statuses are served whole", len(list))
	}
	var stored int
	if err := e.trk.store.ForEachIn(store.Jobs, func(_, v []byte) error { stored += len(v); return nil }); err != nil {
		t.Fatal(err)
	}
	if stored > 64<<10 {
		t.Errorf("the jobs' records are %d bytes: the statuses are stored whole", stored)
	}

	// The status page, HTML and JSON, from the tracker's own report.
	h := status.Handler(func(context.Context) status.Report { return status.Report{Jobs: e.trk.Status()} }, status.Options{})
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, q := range []string{"", "?format=json"} {
		res, err := http.Get(srv.URL + q)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || len(body) > 64<<10 {
			t.Errorf("status page%s: %d, %d bytes; want 200 and a small page", q, res.StatusCode, len(body))
		}
		if strings.Contains(string(body), strings.Repeat("q", bounded.MaxLabelBytes+1)) {
			t.Errorf("status page%s shows a status longer than the cap", q)
		}
		if n := strings.Count(string(body), strings.Repeat("q", 200)); n < 2 {
			t.Errorf("status page%s shows %d of the two long statuses", q, n)
		}
	}
}
