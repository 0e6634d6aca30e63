package e2e

// The one harness of the black-box tests, tagged or not: the exporter
// binary built once (TestMain, testutil.ExporterBinary), started on a free
// port (startExporter), and the helpers only these tests use. The helpers
// they share with the root package's tests of main (waiting on the
// exporter, writing configuration files and keys, a recording front of the
// fake API, scraping /metrics into a map, reloading, reading the status
// page) are in internal/testutil/blackbox.

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil/blackbox"
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
	code := m.Run()
	removeToyBinary()
	os.Exit(code)
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

// makeRunArgs returns the exporter's arguments of the Makefile's run
// target (its RUN_FLAGS), without a --web.listen-address: the tests of
// the quick start run what `make run` runs.
func makeRunArgs(t *testing.T) []string {
	t.Helper()
	makefile := filepath.Join(repoRoot(), "Makefile")
	data, err := os.ReadFile(makefile)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(data), "\\\n", " ")
	if !strings.Contains(text, "\nrun: build\n\t./$(BIN) $(RUN_FLAGS) ") {
		t.Fatalf("%s: the run target does not run ./$(BIN) $(RUN_FLAGS)", makefile)
	}
	_, flags, ok := strings.Cut(text, "\nRUN_FLAGS = ")
	if !ok {
		t.Fatalf("%s: no RUN_FLAGS", makefile)
	}
	flags, _, _ = strings.Cut(flags, "\n")
	var args []string
	for _, f := range strings.Fields(flags) {
		if !strings.HasPrefix(f, "--web.listen-address=") {
			args = append(args, f)
		}
	}
	return args
}

// call sends method to url with an optional Idempotency-Key and a JSON
// body, and returns the answer's status, body and headers; a request that
// gets no answer (the exporter killed or stalled) returns status 0, which
// the caller's condition treats as "not yet".
func call(t *testing.T, client *http.Client, method, url, key, body string) (int, []byte, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return 0, nil, nil
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, nil
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data, resp.Header
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

// spent is the budget's spent-requests series of organization org.
func spent(org string) string {
	return "mintlify_api_budget_spent_requests{organization=" + org + "}"
}

// sighupReload sends SIGHUP and waits until the exporter logged the
// outcome of that reload (the n-th reload log line of the process).
func sighupReload(t *testing.T, x *testutil.Exporter) {
	t.Helper()
	before := reloadLogLines(x, "SIGHUP")
	if err := x.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	blackbox.Eventually(t, 10*time.Second, "the SIGHUP reload to be logged", func() bool { return reloadLogLines(x, "SIGHUP") > before })
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
	blackbox.Eventually(t, 10*time.Second, "a scheduler round with no walk in flight and none due", func() bool {
		r := blackbox.StatusReport(t, base)
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
