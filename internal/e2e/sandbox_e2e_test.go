//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/dashboards"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// The dashboards of the analytics, which the sandbox alone fills (the
// agent jobs' dashboard needs jobs submitted, the exporter's health
// dashboard faults: TestEndToEnd checks both).
var analyticsDashboards = []string{"visitors.json", "assistant.json", "feedback-search.json"}

// TestQuickStartFillsEveryDashboard: `make run` as the README's quick
// start has it (the Makefile's own command line), scraped by Prometheus
// every second: within a minute of the start, every panel of the
// analytics dashboards has data (but the daily panels, which need a day of
// history, as in TestEndToEnd).
func TestQuickStartFillsEveryDashboard(t *testing.T) {
	began := time.Now()
	promBin := lookTool(t, "prometheus", "prometheus")
	bin, err := testutil.BuildExporter(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	addr := testutil.FreeAddr(t)
	args := makeRunArgs(t, addr)
	exporter := startProc(t, "exporter", bin, args, nil)
	started := time.Now()
	procs := []*proc{exporter}

	promAddr := testutil.FreeAddr(t)
	promConfig, err := rewritePrometheusConfig(readExample(t, "prometheus.yml"), examplesDir(), promRewrite{
		Interval: "1s",
		// No Alertmanager: alerts are TestEndToEnd's.
		Services: map[string]string{"exporter": addr, "alertmanager": testutil.FreeAddr(t)},
	})
	if err != nil {
		t.Fatalf("examples/prometheus.yml: %v", err)
	}
	promDir := t.TempDir()
	writeFile(t, filepath.Join(promDir, "prometheus.yml"), promConfig)
	prom := startProc(t, "prometheus", promBin, []string{
		"--config.file=" + filepath.Join(promDir, "prometheus.yml"),
		"--storage.tsdb.path=" + filepath.Join(promDir, "data"),
		"--web.listen-address=" + promAddr,
	}, nil)
	procs = append(procs, prom)
	waitReady(t, "http://"+promAddr+"/-/ready", procs)
	api := promAPI{base: "http://" + promAddr}
	t.Logf("exporter and Prometheus started in %s", time.Since(began).Round(100*time.Millisecond))

	// A minute from the exporter's start, as a user opening Grafana would
	// see it: the variables resolve first (each dashboard's window
	// variable lists the windows its sources refreshed).
	deadline := started.Add(time.Minute)
	eventually(t, "every analytics dashboard's variables resolve", time.Until(deadline), time.Second, procs, func() error {
		for _, file := range analyticsDashboards {
			if err := resolves(api, file); err != nil {
				return err
			}
		}
		return nil
	})
	checkDashboardFiles(t, api, started, procs, max(time.Until(deadline), time.Second), analyticsDashboards)
}

// resolves says whether every variable of dashboard file has a value.
func resolves(api promAPI, file string) error {
	ds, err := dashboards.Load(dashboards.Dir())
	if err != nil {
		return err
	}
	if ds[file] == nil {
		return fmt.Errorf("no dashboard %s", file)
	}
	_, err = dashboardVars(api, file, ds[file])
	return err
}

// makeRunArgs reads the exporter's command line from the Makefile's run
// target, with addr as $(RUN_ADDR): the test runs what `make run` runs.
func makeRunArgs(t *testing.T, addr string) []string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(repoRoot(), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^run:.*\n((?:\t.*\n)+)`).FindSubmatch(src)
	if m == nil {
		t.Fatal("Makefile: no run target")
	}
	recipe := strings.ReplaceAll(string(m[1]), "\\\n", " ")
	fields := strings.Fields(recipe)
	if len(fields) == 0 || fields[0] != "./$(BIN)" {
		t.Fatalf("Makefile: the run target's recipe is not ./$(BIN) ...: %q", recipe)
	}
	var args []string
	for _, f := range fields[1:] {
		f = strings.ReplaceAll(f, "$(RUN_ADDR)", addr)
		if strings.Contains(f, "$(") {
			t.Fatalf("Makefile: run target argument %q has a variable the test does not know", f)
		}
		args = append(args, f)
	}
	if !strings.Contains(strings.Join(args, " "), "--mintlify.sandbox") {
		t.Fatalf("Makefile: the run target %v does not run the sandbox", args)
	}
	return args
}
