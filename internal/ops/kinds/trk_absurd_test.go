package kinds_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// absurd serves fake, with field of its answers to the reads (GET) under
// prefix set to value.
func absurd(fake http.Handler, prefix, field, value string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !strings.HasPrefix(r.URL.Path, prefix) {
			fake.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		fake.ServeHTTP(rec, r)
		var body map[string]json.RawMessage
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &body) != nil {
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return
		}
		body[field] = json.RawMessage(value)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(body)
	})
}

// TestAbsurdPageCountNotExported (issue 45, item 4): a static export
// whose status says pageCount 2^70 exports no page count (not 4.6e18),
// its progress standing, and the refused value is counted on the
// client's mintlify_api_rows_skipped_total at each poll and logged once.
func TestAbsurdPageCountNotExported(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	srv := httptest.NewServer(absurd(e.fake, "/v1/static-export/jobs/", "pageCount", "1180591620717411303424"))
	t.Cleanup(srv.Close)
	m := apiclient.NewMetrics(nil)
	c, err := apiclient.New(apiclient.Config{BaseURL: srv.URL, APIKey: testKey, Timeout: testutil.Patience, Metrics: m, Logger: log.NewLogfmtLogger(e.logs)})
	if err != nil {
		t.Fatal(err)
	}
	e.client = c
	cfg := e.config()
	cfg.StaticExports = true
	e.open(cfg)
	e.reg.MustRegister(m)
	if _, err := e.trk.StartExport(context.Background(), ExportRequest{Project: "p1", Body: apiclient.StaticExportRequest{Domain: "docs.example.com"}}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(10 * time.Second) // running from 6 s to 60 s (fakeapi's export course)
	for range 3 {
		e.tick()
	}
	if p := e.metric("mintlify_static_export_progress_ratio", "project", "p1"); p <= 0 || p >= 1 {
		t.Errorf("progress %v, want the export running", p)
	}
	if n := e.metric("mintlify_static_export_pages_exported", "project", "p1"); n != 0 {
		t.Errorf("pages exported %v, want 0: the absurd count refused", n)
	}
	if n := e.metric("mintlify_api_rows_skipped_total", "endpoint", apiclient.EndpointStaticExportStatus, "reason", apiclient.SkipOutOfRange); n != 3 {
		t.Errorf("out_of_range counted %v times, want 3 (one per poll)", n)
	}
	if n := strings.Count(e.logs.String(), "field=pageCount"); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, e.logs.String())
	}
}
