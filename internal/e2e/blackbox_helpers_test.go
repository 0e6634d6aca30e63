package e2e

// The one harness of the black-box tests, tagged or not: the exporter
// binary built once (TestMain, testutil.ExporterBinary), started on a free
// port (startExporter), waits on it (eventually), and the helpers of the
// tests that run it with --config.file: writing the file and the keys, a
// recording front of the fake API, scraping /metrics into a map, reloading,
// and reading the status page.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

var exporterBin string

// TestMain finds the exporter binary the tests run: built once per change of
// the sources and shared with the other packages (testutil.ExporterBinary).
func TestMain(m *testing.M) {
	flag.Parse()
	if !flagSet("test.parallel") {
		_ = flag.Set("test.parallel", fmt.Sprint(max(rootParallel, runtime.GOMAXPROCS(0))))
	}
	var err error
	if exporterBin, err = testutil.ExporterBinary(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(m.Run())
}

// rootParallel is how many of this package's tests run at once unless
// -parallel says otherwise. They spend their time waiting on the processes
// they start (the exporter, Redis, Chromium) and on those processes' wall
// clocks (leases, intervals, jobs of the fake), not on this process's CPU:
// Go's default of GOMAXPROCS (2 on the development machine) queued them
// behind each other's waits (82 s for the package; 38 s with eight). Not
// more: sixteen at a time on the busy 2-core machine stretched exporter
// restarts past the scripted jobs of the fake that they must outlast.
const rootParallel = 8

// flagSet reports whether the command line set the flag name.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// startExporter runs the built binary on a free loopback port.
func startExporter(t *testing.T, env []string, args ...string) *testutil.Exporter {
	t.Helper()
	return testutil.StartExporter(t, exporterBin, env, args...)
}

// makeRunArgs returns the exporter's arguments in the Makefile's run
// target, without its --web.listen-address.
func makeRunArgs(t *testing.T) []string {
	t.Helper()
	return testutil.MakeRunArgs(t, filepath.Join(repoRoot(), "Makefile"))
}

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

// analytics returns the analytics requests of project ("" = every project).
func (r *recordingAPI) analytics(project string) []sent {
	var out []sent
	for _, s := range r.Sent() {
		if strings.HasPrefix(s.Endpoint, "v1/analytics/") && (project == "" || s.Project == project) {
			out = append(out, s)
		}
	}
	return out
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

// withPrefix keeps the series whose name starts with prefix.
func withPrefix(m map[string]float64, prefix string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out
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

// spent is the budget's spent-requests series of organization org.
func spent(org string) string {
	return "mintlify_api_budget_spent_requests{organization=" + org + "}"
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

// sighupReload sends SIGHUP and waits until the exporter logged the
// outcome of that reload (the n-th reload log line of the process).
func sighupReload(t *testing.T, x *testutil.Exporter) {
	t.Helper()
	before := reloadLogLines(x, "SIGHUP")
	if err := x.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the SIGHUP reload to be logged", func() bool { return reloadLogLines(x, "SIGHUP") > before })
}

// reloadLogLines counts the reloads by trigger (SIGHUP or http) that the
// exporter logged: a POST /-/reload's line may reach stderr after its
// answer, so a wait for a SIGHUP's line counts those alone.
func reloadLogLines(x *testutil.Exporter, trigger string) int {
	n := 0
	for _, line := range strings.Split(x.Stderr.String(), "\n") {
		if (strings.Contains(line, `msg="configuration reloaded"`) || strings.Contains(line, `msg="configuration reload failed`)) &&
			strings.Contains(line, "trigger="+trigger) {
			n++
		}
	}
	return n
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

// demands indexes the status page's visitors demands by "project/window".
func demands(r status.Report) map[string]status.Demand {
	out := map[string]status.Demand{}
	for _, d := range r.Demands {
		out[d.Project+"/"+d.Window] = d
	}
	return out
}

// settle waits until the scheduler has had its round with nothing in
// flight: no walk running, and every demand's next refresh in the future,
// which a round sets for each due walk it holds back (the budget's wait)
// and a walk that starts leaves running: a test that then counts requests
// sees every walk a wrong plan would have started, with no guessed number
// of seconds.
func settle(t *testing.T, base string) {
	t.Helper()
	eventually(t, 10*time.Second, "a scheduler round with no walk in flight and none due", func() bool {
		r := statusReport(t, base)
		if !idle(r) {
			return false
		}
		for _, d := range r.Demands {
			if !d.NextRefreshAt.IsZero() && !d.NextRefreshAt.After(r.GeneratedAt) {
				return false
			}
		}
		return true
	})
}

// idle reports whether no walk is in flight.
func idle(r status.Report) bool {
	for _, d := range r.Demands {
		if d.Running {
			return false
		}
	}
	return true
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
