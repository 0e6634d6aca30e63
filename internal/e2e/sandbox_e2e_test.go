//go:build e2e

package e2e

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/dashboards"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil/blackbox"
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
	bin := exporterBin
	addr := testutil.FreeAddr(t)
	args := append(makeRunArgs(t), "--web.listen-address="+addr)
	exporter := startProc(t, "exporter", bin, args, nil)
	started := time.Now()
	procs := []*proc{exporter}

	// No Alertmanager: alerts are TestEndToEnd's.
	prom, api := startPrometheus(t, promBin, map[string]string{"exporter": addr, "alertmanager": testutil.FreeAddr(t)}, procs)
	procs = append(procs, prom)
	t.Logf("exporter and Prometheus started in %s", time.Since(began).Round(100*time.Millisecond))

	// A minute from the exporter's start, as a user opening Grafana would
	// see it: the variables resolve first (each dashboard's window
	// variable lists the windows its sources refreshed).
	deadline := started.Add(time.Minute)
	eventuallyRunning(t, "every analytics dashboard's variables resolve", time.Until(deadline), time.Second, procs, func() error {
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

// startPrometheus runs Prometheus with examples/prometheus.yml, rewritten to
// scrape and evaluate every second and to reach services (the compose
// service names exporter and alertmanager) at their test addresses, and
// waits until it is ready while procs stay up.
func startPrometheus(t *testing.T, bin string, services map[string]string, procs []*proc) (*proc, promAPI) {
	t.Helper()
	addr := testutil.FreeAddr(t)
	config, err := rewritePrometheusConfig(readExample(t, "prometheus.yml"), examplesDir(), promRewrite{Interval: "1s", Services: services})
	if err != nil {
		t.Fatalf("examples/prometheus.yml: %v", err)
	}
	dir := t.TempDir()
	blackbox.WriteFile(t, filepath.Join(dir, "prometheus.yml"), string(config))
	prom := startProc(t, "prometheus", bin, []string{
		"--config.file=" + filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=" + addr,
		"--rules.alert.resend-delay=1s",
		"--log.level=debug",
	}, nil)
	waitReady(t, "http://"+addr+"/-/ready", append(procs, prom))
	return prom, promAPI{base: "http://" + addr}
}
