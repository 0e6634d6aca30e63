package apiclient_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

// TestStaticExportRuns starts an export on the fake and follows it on the
// fake's clock: the body sent (domain and version; paths left out when
// empty), queued, running with progress and pages growing, 409 for a
// bundle until it completed, then a bundle whose presigned URL only
// Reveal gives. The requests are counted by endpoint.
func TestStaticExportRuns(t *testing.T) {
	t.Parallel()
	clk := newClock()
	reg := prometheus.NewPedanticRegistry()
	m := apiclient.NewMetrics(reg)
	_, rec, srv := startFake(t, fakeapi.Options{Now: clk.Now, StaticExportDuration: time.Minute})
	c := newClient(t, srv.URL, func(cfg *apiclient.Config) { cfg.Metrics = m })
	ctx := testCtx(t)

	job, err := c.StartStaticExport(ctx, apiclient.StaticExportRequest{Domain: "docs.example.com", Version: "2024-06-01"})
	if err != nil {
		t.Fatalf("StartStaticExport: %v", err)
	}
	last := rec.requests()[len(rec.requests())-1]
	var sent map[string]any
	if err := json.Unmarshal(last.body, &sent); err != nil || last.method != "POST" || last.uri != "/v1/static-export/jobs" ||
		len(sent) != 2 || sent["domain"] != "docs.example.com" || sent["version"] != "2024-06-01" ||
		last.header.Get("Content-Type") != "application/json" {
		t.Errorf("sent %s %s %s (%s), want POST /v1/static-export/jobs with domain and version only", last.method, last.uri, last.body, last.header.Get("Content-Type"))
	}
	if job.Code != http.StatusAccepted || job.JobID == "" || job.Status != apiclient.StaticExportQueued || job.Progress != 0 ||
		!job.CreatedAt.Equal(clk.Now()) {
		t.Fatalf("start answered %+v, want a queued job of now with 202", job)
	}

	var progress []float64
	var pages []int64
	for _, at := range []time.Duration{3 * time.Second, 7 * time.Second, 30 * time.Second, 59 * time.Second} {
		clk.Advance(at - clk.Now().Sub(job.CreatedAt.Time))
		j, err := c.GetStaticExport(ctx, job.JobID)
		if err != nil {
			t.Fatalf("at %v: %v", at, err)
		}
		if at < 6*time.Second {
			if j.Status != apiclient.StaticExportQueued {
				t.Errorf("at %v: %s, want queued", at, j.Status)
			}
			continue
		}
		if j.Status != apiclient.StaticExportRunning || apiclient.IsStaticExportFinal(j.Status) || j.JobID != job.JobID || j.Code != http.StatusOK {
			t.Errorf("at %v: %+v, want running", at, j)
		}
		progress, pages = append(progress, j.Progress), append(pages, j.PageCount)
		if _, err := c.BundleStaticExport(ctx, job.JobID); apiclient.StatusCode(err) != http.StatusConflict || !strings.Contains(err.Error(), "not finished") {
			t.Errorf("bundle at %v: %v, want the API's 409", at, err)
		}
	}
	if !slices.IsSorted(progress) || progress[0] >= progress[2] || progress[2] >= 100 || !slices.IsSorted(pages) || pages[0] >= pages[2] || pages[2] >= 300 {
		t.Errorf("running: progress %v, pages %v; want both growing below 100%% and 300 pages", progress, pages)
	}
	if progress[1] != 44.4 {
		t.Errorf("progress at 30 s = %v, want the fake's fractional 44.4", progress[1])
	}
	clk.Advance(time.Second)
	done, err := c.GetStaticExport(ctx, job.JobID)
	if err != nil || done.Status != apiclient.StaticExportCompleted || !apiclient.IsStaticExportFinal(done.Status) || done.Progress != 100 ||
		done.PageCount != 300 || done.Error != "" || !done.UpdatedAt.Equal(done.CreatedAt.Add(time.Minute)) {
		t.Fatalf("at 60 s: %+v, %v; want completed, 300 pages, updated at its end", done, err)
	}

	b, err := c.BundleStaticExport(ctx, job.JobID)
	if err != nil {
		t.Fatalf("BundleStaticExport: %v", err)
	}
	url := b.URL.Reveal()
	if !strings.HasPrefix(url, fakeapi.BundleURLPrefix+job.JobID+"/") || !strings.Contains(url, "X-Amz-Signature=") ||
		b.JobID != job.JobID || b.SizeBytes <= 0 || !b.ExpiresAt.Equal(clk.Now().Add(fakeapi.BundleLifetime)) {
		t.Errorf("bundle %+v (URL %q), want the job's presigned link, valid an hour", b, url)
	}
	if last := rec.requests()[len(rec.requests())-1]; last.method != "POST" || last.uri != "/v1/static-export/jobs/"+job.JobID+"/bundle" || len(last.body) != 0 {
		t.Errorf("bundle sent %s %s %q", last.method, last.uri, last.body)
	}
	assertHidden(t, url, b)

	requests, _ := m.Collectors()
	for _, tc := range []struct {
		endpoint, code string
		want           float64
	}{
		{apiclient.EndpointStartStaticExport, "202", 1},
		{apiclient.EndpointStaticExportStatus, "200", 5},
		{apiclient.EndpointStaticExportBundle, "409", 3},
		{apiclient.EndpointStaticExportBundle, "200", 1},
		{apiclient.EndpointStaticExportBundle, "403", 0}, // pre-created
	} {
		if got := testutil.ToFloat64(requests.WithLabelValues(tc.endpoint, tc.code)); got != tc.want {
			t.Errorf("{%s,%s} = %v, want %v", tc.endpoint, tc.code, got, tc.want)
		}
	}
	for _, e := range []string{apiclient.EndpointStartStaticExport, apiclient.EndpointStaticExportStatus, apiclient.EndpointStaticExportBundle} {
		if !slices.Contains(apiclient.OperationEndpoints, e) || slices.Contains(apiclient.AnalyticsEndpoints, e) {
			t.Errorf("%s is not an operation endpoint of the client", e)
		}
	}
}

// assertHidden fails when url shows through any way a bundle may be
// printed, logged or stored.
func assertHidden(t *testing.T, url string, b apiclient.StaticExportBundle) {
	t.Helper()
	sig := url[strings.Index(url, "X-Amz-Signature=")+len("X-Amz-Signature="):]
	var kit, kitJSON, slogText bytes.Buffer
	_ = log.NewLogfmtLogger(&kit).Log("bundle", b, "url", b.URL)
	_ = log.NewJSONLogger(&kitJSON).Log("url", b.URL)
	slog.New(slog.NewTextHandler(&slogText, nil)).Info("x", "bundle", b, "url", b.URL)
	js, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	hidden := struct{ b apiclient.StaticExportBundle }{b} // unexported: fmt reaches it by reflection
	for name, s := range map[string]string{
		"%v": fmt.Sprintf("%v", b), "%+v": fmt.Sprintf("%+v", b), "%#v": fmt.Sprintf("%#v", b), "%s": fmt.Sprintf("%s", b.URL),
		"%q": fmt.Sprintf("%q", b.URL), "%x": fmt.Sprintf("%x", b.URL), "unexported %+v": fmt.Sprintf("%+v", hidden),
		"unexported %#v": fmt.Sprintf("%#v", hidden), "pointer %v": fmt.Sprintf("%v", &b),
		"json": string(js), "go-kit logfmt": kit.String(), "go-kit json": kitJSON.String(), "slog": slogText.String(),
	} {
		if strings.Contains(s, sig) || strings.Contains(s, "X-Amz") || strings.Contains(s, fmt.Sprintf("%x", sig)) {
			t.Errorf("%s shows the presigned URL: %s", name, s)
		}
	}
	if !strings.Contains(fmt.Sprintf("%v", b), "[redacted]") {
		t.Errorf("%%v = %v, want the URL shown as [redacted]", b)
	}
}

// TestStaticExportRefusals: 403 (not enabled) is an *APIError the caller
// tells apart, with the API's text; 404 for an unknown job; a failed
// export has its bounded error and no bundle; nothing the reference
// refuses, and no id that is empty, holds a NUL or a newline or is 10,000
// bytes, leaves the client.
func TestStaticExportRefusals(t *testing.T) {
	t.Parallel()
	clk := newClock()
	fake, rec, srv := startFake(t, fakeapi.Options{Now: clk.Now, StaticExportDuration: time.Minute})
	c := newClient(t, srv.URL, nil)
	ctx := testCtx(t)

	_, err := c.StartStaticExport(ctx, apiclient.StaticExportRequest{Domain: "noexport.example.com"})
	var apiErr *apiclient.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusForbidden || !strings.Contains(apiErr.Message, "not enabled") ||
		apiErr.Endpoint != apiclient.EndpointStartStaticExport {
		t.Errorf("start for an organization without static export: %v, want the API's 403", err)
	}
	if _, err := c.GetStaticExport(ctx, "se_nope"); apiclient.StatusCode(err) != http.StatusNotFound {
		t.Errorf("unknown job: %v, want 404", err)
	}
	if _, err := c.BundleStaticExport(ctx, "se_nope"); apiclient.StatusCode(err) != http.StatusNotFound {
		t.Errorf("bundle of an unknown job: %v, want 404", err)
	}

	job, err := c.StartStaticExport(ctx, apiclient.StaticExportRequest{Domain: "failing.example.com", Paths: []string{"index", "guides/a b", "api/ü"}})
	if err != nil {
		t.Fatal(err)
	}
	var sent struct{ Paths []string }
	if err := json.Unmarshal(rec.requests()[len(rec.requests())-1].body, &sent); err != nil || len(sent.Paths) != 3 || sent.Paths[2] != "api/ü" {
		t.Errorf("paths sent %s", rec.requests()[len(rec.requests())-1].body)
	}
	clk.Advance(time.Minute)
	failed, err := c.GetStaticExport(ctx, job.JobID)
	if err != nil || failed.Status != apiclient.StaticExportFailed || !apiclient.IsStaticExportFinal(failed.Status) || failed.Error == "" || failed.Progress >= 100 || failed.PageCount > 3 {
		t.Errorf("failing export: %+v, %v; want failed with its error", failed, err)
	}
	if _, err := c.BundleStaticExport(ctx, job.JobID); apiclient.StatusCode(err) != http.StatusConflict {
		t.Errorf("bundle of a failed export: %v, want 409", err)
	}

	long := strings.Repeat("a", 10000)
	sentBefore, started := len(rec.requests()), fake.StaticExports()
	for _, req := range []apiclient.StaticExportRequest{
		{}, {Domain: "https://docs.example.com"}, {Domain: "docs.example.com/docs"}, {Domain: "docs.example.com/"},
		{Domain: "docs example.com"}, {Domain: "docs.example.com:443"}, {Domain: "docs\n.example.com"}, {Domain: long},
		{Domain: "docs.example.com", Version: "v1\nx"}, {Domain: "docs.example.com", Version: long},
		{Domain: "docs.example.com", Paths: []string{"a", ""}}, {Domain: "docs.example.com", Paths: []string{"a\x00"}},
		{Domain: "docs.example.com", Paths: make([]string, 10001)},
	} {
		if _, err := c.StartStaticExport(ctx, req); err == nil {
			t.Errorf("%.80q: sent", fmt.Sprint(req))
		} else if len(err.Error()) > 200 {
			t.Errorf("%.80q: the error quotes the request: %.200s", fmt.Sprint(req), err)
		}
	}
	for _, id := range []string{"", "se\x00x", "se\nx", long, ".", "se\x7f"} {
		if _, err := c.GetStaticExport(ctx, id); err == nil || len(err.Error()) > 200 {
			t.Errorf("status of %.20q: %.200v", id, err)
		}
		if _, err := c.BundleStaticExport(ctx, id); err == nil || len(err.Error()) > 200 {
			t.Errorf("bundle of %.20q: %.200v", id, err)
		}
	}
	if n := len(rec.requests()) - sentBefore; n != 0 || fake.StaticExports() != started {
		t.Errorf("%d requests left that must not be sent", n)
	}

	// An export started whose answer was lost: an error, never sent again.
	fake.SetFault(fakeapi.StartStaticExport, fakeapi.Fault{DropAnswer: true, Remaining: 1})
	if _, err := c.StartStaticExport(ctx, apiclient.StaticExportRequest{Domain: "docs.example.com"}); err == nil ||
		fake.Requests(fakeapi.StartStaticExport) != 3 || fake.StaticExports() != started+1 {
		t.Errorf("answer lost: %v after %d requests, want an error after one more", err, fake.Requests(fakeapi.StartStaticExport))
	}

	// A key whose organization has no static export: every domain is 403.
	_, _, srv2 := startFake(t, fakeapi.Options{Now: clk.Now, StaticExportDisabled: []string{testKey}})
	if _, err := newClient(t, srv2.URL, nil).StartStaticExport(ctx, apiclient.StaticExportRequest{Domain: "docs.example.com"}); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusForbidden {
		t.Errorf("start with a key without static export: %v, want 403", err)
	}
}

// TestStaticExportBundleURLNeverInErrors: the answers and error answers
// of the bundle endpoint that hold a presigned URL (one cut short, a
// redirect to it, a proxy's 500 echoing it, an {error} naming it) make
// errors that do not quote it; a 200 without a URL is an error.
func TestStaticExportBundleURLNeverInErrors(t *testing.T) {
	t.Parallel()
	clk := newClock()
	fake, _, srv := startFake(t, fakeapi.Options{Now: clk.Now, StaticExportDuration: time.Second})
	c := newClient(t, srv.URL, nil)
	ctx := testCtx(t)
	job, err := c.StartStaticExport(ctx, apiclient.StaticExportRequest{Domain: "docs.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	fake.SetFault(fakeapi.StaticExportBundle, fakeapi.Fault{MalformedJSON: true, Remaining: 1})
	_, err = c.BundleStaticExport(ctx, job.JobID)
	if err == nil || strings.Contains(err.Error(), fakeapi.BundleURLPrefix) || strings.Contains(err.Error(), "X-Amz") {
		t.Errorf("a bundle answer cut short: %v, want an error that does not quote it", err)
	}

	const secretURL = "https://mintlify-static-exports.s3.amazonaws.com/se_1/bundle.tar.gz?X-Amz-Signature=deadbeefcafe"
	for name, h := range map[string]http.HandlerFunc{
		"redirect": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Location", secretURL)
			w.WriteHeader(http.StatusSeeOther)
			_, _ = w.Write([]byte(`<a href="` + secretURL + `">See Other</a>.`))
		},
		"echoing 500": func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "upstream said "+secretURL, 500) },
		"{error} URL": func(w http.ResponseWriter, _ *http.Request) { writeJSONBody(w, 409, `{"error": "see `+secretURL+`"}`) },
		"no bundleUrl": func(w http.ResponseWriter, _ *http.Request) {
			writeJSONBody(w, 200, `{"jobId": "se_1", "sizeBytes": 1}`)
		},
		"bundleUrl int": func(w http.ResponseWriter, _ *http.Request) {
			writeJSONBody(w, 200, `{"bundleUrl": 5, "x": "`+secretURL+`"}`)
		},
		"bad expiry": func(w http.ResponseWriter, _ *http.Request) {
			writeJSONBody(w, 200, `{"bundleUrl": "`+secretURL+`", "expiresAt": "soon"}`)
		},
		// Issue 36 (4.4): every string from the API the gateway serves is
		// bounded; a URL cannot be cut, so one that is no usable link is
		// refused, unquoted.
		"1 MB URL": func(w http.ResponseWriter, _ *http.Request) {
			writeJSONBody(w, 200, `{"bundleUrl": "`+secretURL+strings.Repeat("a", 1<<20)+`"}`)
		},
		"http URL": func(w http.ResponseWriter, _ *http.Request) {
			writeJSONBody(w, 200, `{"bundleUrl": "http`+strings.TrimPrefix(secretURL, "https")+`"}`)
		},
		"URL with a newline": func(w http.ResponseWriter, _ *http.Request) {
			writeJSONBody(w, 200, `{"bundleUrl": "`+secretURL+`\nX-Injected: 1"}`)
		},
	} {
		_, srv := serve(t, h)
		_, err := newClient(t, srv.URL, func(cfg *apiclient.Config) { cfg.MaxRetries = 0 }).BundleStaticExport(ctx, "se_1")
		if err == nil || strings.Contains(err.Error(), "deadbeef") || strings.Contains(fmt.Sprintf("%+v", err), "deadbeef") {
			t.Errorf("%s: %v, want an error without the URL", name, err)
		}
	}
	// What it does keep: the API's own {error} text.
	_, srv409 := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		writeJSONBody(w, 409, `{"error": "The job has not finished yet"}`)
	})
	if _, err := newClient(t, srv409.URL, nil).BundleStaticExport(ctx, "se_1"); err == nil || !strings.Contains(err.Error(), "has not finished yet") {
		t.Errorf("409: %v, want the API's text", err)
	}
}

func writeJSONBody(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// TestStaticExportTolerantReader reads what the reference allows and what
// a reader must survive: a fractional progress and counts written as
// 128.0, a null error, an unknown status (kept, not final), absent
// optional fields; and bounds what it keeps: progress within 0-100, a
// status or error with control characters or of megabytes.
func TestStaticExportTolerantReader(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body string
		want apiclient.StaticExportJob
	}{
		{`{"jobId": "se_1", "status": "running", "progress": 42.5, "pageCount": 128.0, "createdAt": "2026-08-21T10:00:00.5Z", "updatedAt": "2026-08-21T10:00:30+02:00", "error": null}`,
			apiclient.StaticExportJob{JobID: "se_1", Status: "running", Progress: 42.5, PageCount: 128,
				CreatedAt: apiclient.APITime{Time: time.Date(2026, 8, 21, 10, 0, 0, 5e8, time.UTC)}, UpdatedAt: apiclient.APITime{Time: time.Date(2026, 8, 21, 8, 0, 30, 0, time.UTC)}}},
		{`{"status": "paused", "progress": 150, "pageCount": -3}`, apiclient.StaticExportJob{JobID: "se_1", Status: "paused", Progress: 100}},
		{`{"jobId": "se_1", "status": "x\ny", "progress": -1, "error": "bad\u0000page"}`, apiclient.StaticExportJob{JobID: "se_1", Status: "x\uFFFDy", Error: "bad\uFFFDpage"}},
		{`{}`, apiclient.StaticExportJob{JobID: "se_1"}},
	} {
		_, srv := serve(t, func(w http.ResponseWriter, _ *http.Request) { writeJSONBody(w, 200, tc.body) })
		got, err := newClient(t, srv.URL, nil).GetStaticExport(testCtx(t), "se_1")
		tc.want.Code = 200
		if err != nil || !got.CreatedAt.Equal(tc.want.CreatedAt.Time) || !got.UpdatedAt.Equal(tc.want.UpdatedAt.Time) {
			t.Errorf("%.60s: %+v, %v", tc.body, got, err)
			continue
		}
		got.CreatedAt, got.UpdatedAt, tc.want.CreatedAt, tc.want.UpdatedAt = apiclient.APITime{}, apiclient.APITime{}, apiclient.APITime{}, apiclient.APITime{}
		if got != tc.want {
			t.Errorf("%.60s: %+v, want %+v", tc.body, got, tc.want)
		}
	}
	if apiclient.IsStaticExportFinal("paused") {
		t.Error("an unknown status is final")
	}

	huge := strings.Repeat("é", 1<<20)
	_, srv := serve(t, func(w http.ResponseWriter, _ *http.Request) {
		writeJSONBody(w, 200, `{"jobId": "se_1", "status": "`+huge+`", "error": "`+huge+`"}`)
	})
	got, err := newClient(t, srv.URL, nil).GetStaticExport(testCtx(t), "se_1")
	if err != nil || len(got.Status) > 80 || len(got.Error) > 600 {
		t.Errorf("megabyte status and error: %d and %d bytes kept, %v", len(got.Status), len(got.Error), err)
	}

	for name, body := range map[string]string{
		"another job's":  `{"jobId": "se_2", "status": "running"}`,
		"not an object":  `[1]`,
		"progress a str": `{"jobId": "se_1", "progress": "42"}`,
	} {
		_, srv := serve(t, func(w http.ResponseWriter, _ *http.Request) { writeJSONBody(w, 200, body) })
		if _, err := newClient(t, srv.URL, nil).GetStaticExport(testCtx(t), "se_1"); err == nil {
			t.Errorf("%s: no error", name)
		}
	}

	// A start the API accepted without an id to follow it by.
	for _, body := range []string{`{"status": "queued"}`, `{"jobId": "se\n1", "status": "queued"}`} {
		_, srv := serve(t, func(w http.ResponseWriter, _ *http.Request) { writeJSONBody(w, 202, body) })
		job, err := newClient(t, srv.URL, nil).StartStaticExport(testCtx(t), apiclient.StaticExportRequest{Domain: "docs.example.com"})
		if !errors.Is(err, apiclient.ErrNoOperationID) || job.Code != 202 || job.JobID != "" {
			t.Errorf("%s: %+v, %v; want ErrNoOperationID with the 202", body, job, err)
		}
	}

	// A bundle's size may come as a number in any form.
	_, srv = serve(t, func(w http.ResponseWriter, _ *http.Request) {
		writeJSONBody(w, 200, `{"jobId": "se_1", "bundleUrl": "https://x.example/b?sig=1", "sizeBytes": 1.8432e7, "expiresAt": "2026-08-21T11:00:00Z"}`)
	})
	b, err := newClient(t, srv.URL, nil).BundleStaticExport(testCtx(t), "se_1")
	if err != nil || b.SizeBytes != 18432000 || b.URL.Reveal() != "https://x.example/b?sig=1" {
		t.Errorf("bundle: %+v, %v", b, err)
	}
}
