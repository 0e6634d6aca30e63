package main

// Copies of internal/e2e's helpers for the tests of main that run serve in
// this process (config_reload_prepare_test.go, soak_test.go): a test package
// cannot import another's test files. TestInProcessHelpersAreE2ECopies fails
// when a copy differs from its original.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// eventually polls cond until it holds or timeout passes. The timeout is a
// hang guard for a test of a running binary, not a bound the test asserts:
// never shorter than testutil.Patience, which a busy machine needs.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, max(timeout, testutil.Patience), what, cond)
}

// writeFile writes content to path (0600), failing the test on error.
func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// sent is one request the fake API received.
type sent struct {
	Method, Project, Endpoint, Key string
	Status                         int
	// At is when the answer was written; Range is the dates asked for.
	At    time.Time
	Range string
}

// recordingAPI serves a fake API and records every request: which
// project, which endpoint, with which key, and the answer's status.
type recordingAPI struct {
	Fake *fakeapi.Server
	URL  string

	mu   sync.Mutex
	sent []sent
}

func newRecordingAPI(t *testing.T, opts fakeapi.Options) *recordingAPI {
	t.Helper()
	r := &recordingAPI{Fake: fakeapi.New(opts)}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (r *recordingAPI) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	r.Fake.ServeHTTP(rec, req)
	// /v1/analytics/{project}/{endpoint...} or /v2/agent/{project}/...
	parts := strings.SplitN(strings.TrimPrefix(req.URL.Path, "/"), "/", 4)
	s := sent{Method: req.Method, Status: rec.status, Key: strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer "),
		At: time.Now(), Range: req.URL.Query().Get("dateFrom") + ".." + req.URL.Query().Get("dateTo")}
	if len(parts) >= 3 {
		s.Project = parts[2]
	}
	if len(parts) == 4 {
		s.Endpoint = parts[0] + "/" + parts[1] + "/" + parts[3]
	}
	r.mu.Lock()
	r.sent = append(r.sent, s)
	r.mu.Unlock()
}

// Sent returns a copy of every request so far.
func (r *recordingAPI) Sent() []sent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.sent)
}

// scrape reads /metrics into "name{k=v,...}" -> value (labels sorted by
// name; histograms: their sample count), every family.
func scrape(t *testing.T, base string) map[string]float64 {
	t.Helper()
	m, err := tryScrape(t.Context(), base)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func tryScrape(ctx context.Context, base string) (map[string]float64, error) {
	body, status, err := testutil.Get(ctx, base+"/metrics")
	if err != nil || status != http.StatusOK {
		return nil, fmt.Errorf("scrape: HTTP %d %v", status, err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, lp := range m.GetLabel() {
				ls = append(ls, lp.GetName()+"="+lp.GetValue())
			}
			slices.Sort(ls)
			key := name + "{" + strings.Join(ls, ",") + "}"
			switch mf.GetType() {
			case dto.MetricType_HISTOGRAM:
				out[key] = float64(m.GetHistogram().GetSampleCount())
			case dto.MetricType_COUNTER:
				out[key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key] = m.GetGauge().GetValue()
			default:
				out[key] = m.GetUntyped().GetValue()
			}
		}
	}
	return out, nil
}

// waitMetrics scrapes until every want series has its value.
func waitMetrics(t *testing.T, base string, timeout time.Duration, want map[string]float64) map[string]float64 {
	t.Helper()
	var m map[string]float64
	eventually(t, timeout, "metrics "+strings.Join(keys(want), " "), func() bool {
		var err error
		if m, err = tryScrape(t.Context(), base); err != nil {
			return false
		}
		for k, v := range want {
			if got, ok := m[k]; !ok || got != v {
				return false
			}
		}
		return true
	})
	return m
}

func keys(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// refreshed is the series saying project's window was walked with success.
func refreshed(project, window string) string {
	return "mintlify_analytics_refresh_success{project=" + project + ",scope=pages,source=visitors,window=" + window + "}"
}

// postReload sends POST /-/reload and returns the status and the JSON
// body's fields.
func postReload(t *testing.T, base string) (int, map[string]string) {
	t.Helper()
	return callReload(t, http.MethodPost, base)
}

func callReload(t *testing.T, method, base string) (int, map[string]string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, base+"/-/reload", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]string
	if err := json.Unmarshal(data, &body); err != nil {
		t.Fatalf("%s /-/reload: HTTP %d, body not JSON: %q", method, resp.StatusCode, data)
	}
	return resp.StatusCode, body
}

// statusReport reads the status page as JSON.
func statusReport(t *testing.T, base string) status.Report {
	t.Helper()
	r, err := tryStatusReport(base)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// tryStatusReport reads the status page's JSON, for a loop that waits
// for an exporter still starting.
func tryStatusReport(base string) (status.Report, error) {
	var r status.Report
	body, code, err := testutil.Get(context.Background(), base+"/?format=json")
	if err != nil || code != http.StatusOK {
		return r, fmt.Errorf("status page: HTTP %d %v", code, err)
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		return r, fmt.Errorf("status page: %w", err)
	}
	return r, nil
}

// keyFile writes key into a new file in dir and returns its path.
func keyFile(t *testing.T, dir, name, key string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	writeFile(t, p, key+"\n")
	return p
}

// configArgs are the flags every config-file test runs with: the file,
// a fake API, one walk per window for the test's length (a long
// min-interval; the projects' time zone is noonZone), no retries.
func configArgs(apiURL, file string, extra ...string) []string {
	// Page walks of visitors alone: the request counts are the tests'.
	return append([]string{"--config.file=" + file, "--mintlify.api-url=" + apiURL,
		"--analytics.min-interval=1h", "--mintlify.max-retries=0", "--analytics.site-totals-interval=0s"}, extra...)
}

// noonZone is an IANA zone where it is around noon now, so that no walk
// of a test depends on the hour of day: neither today's window's new
// dates at midnight nor the finished day's walk after it.
func noonZone() string {
	offset := 12 - time.Now().UTC().Hour() // local = UTC + offset, in -11..12
	if offset == 0 {
		return "UTC"
	}
	return fmt.Sprintf("Etc/GMT%+d", -offset) // Etc/GMT-3 is UTC+3
}

// postJob submits a job for project and returns the HTTP status and the
// job's id.
func postJob(t *testing.T, base, project, prompt string) (int, string) {
	t.Helper()
	resp, err := http.Post(base+"/api/v2/agent/"+project+"/job", "application/json", strings.NewReader(`{"prompt":"`+prompt+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var job struct {
		ID string `json:"id"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&job)
	return resp.StatusCode, job.ID
}

// reloadFile writes configuration files of one organization whose projects
// each have the given windows.
type reloadFile struct {
	t    *testing.T
	path string
	head string
}

func newReloadFile(t *testing.T) *reloadFile {
	dir := t.TempDir()
	return &reloadFile{t: t, path: dir + "/mintlify.yml",
		head: "organizations:\n  - name: acme\n    api_key_file: " + keyFile(t, dir, "key", "mint_test") + "\n    analytics_budget: 50\nprojects:\n"}
}

// agentProjects is a file whose projects ids (7d windows) take agent jobs.
func (f *reloadFile) agentProjects(ids ...string) string {
	var b strings.Builder
	b.WriteString(f.head)
	for _, id := range ids {
		b.WriteString("  - id: " + id + "\n    windows: [7d]\n    timezone: " + noonZone() + "\n    sources: {visitors: {}}\n    agent_jobs: true\n")
	}
	return b.String()
}

// dataSeries are the series read from the API for project (not the
// exporter's own bookkeeping).
func dataSeries(m map[string]float64, project string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if (strings.HasPrefix(k, "mintlify_site_") || strings.HasPrefix(k, "mintlify_page_")) && strings.Contains(k, "project="+project+",") {
			out[k] = v
		}
	}
	return out
}
