//go:build e2e

package e2e

import (
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil/blackbox"
)

// TestExpositionBothFormats: Prometheus 2.42 scrapes the pre-encoded
// answer as it negotiates it (OpenMetrics, gzipped: concatenated gzip
// members) and stores every data series; a Go client reads the text 0.0.4
// answer, gzipped, and it parses and passes promtool with the same series.
// (2.42 has no scrape_protocols to make Prometheus ask for text itself.)
func TestExpositionBothFormats(t *testing.T) {
	promBin := lookTool(t, "prometheus", "prometheus")
	bin := exporterBin
	exporterAddr := testutil.FreeAddr(t)
	exporter := startProc(t, "exporter", bin, []string{
		"--web.listen-address=" + exporterAddr, "--mintlify.sandbox",
		"--analytics.window=1d", "--analytics.window=7d",
	}, nil)
	metricsURL := "http://" + exporterAddr + "/metrics"

	promAddr, promDir := testutil.FreeAddr(t), t.TempDir()
	blackbox.WriteFile(t, filepath.Join(promDir, "prometheus.yml"), fmt.Sprintf(`
global: {scrape_interval: 1s, scrape_timeout: 1s}
scrape_configs:
  - job_name: mintlify
    static_configs: [{targets: [%q]}]
`, exporterAddr))
	prom := startProc(t, "prometheus", promBin, []string{
		"--config.file=" + filepath.Join(promDir, "prometheus.yml"),
		"--storage.tsdb.path=" + filepath.Join(promDir, "data"),
		"--web.listen-address=" + promAddr,
	}, nil)
	procs := []*proc{exporter, prom}
	waitReady(t, "http://"+promAddr+"/-/ready", procs)
	api := promAPI{base: "http://" + promAddr}

	// Text 0.0.4, gzipped, from a Go client: every data series once.
	var want map[string]int
	eventuallyRunning(t, "text answer with both windows of both projects", 30*time.Second, 250*time.Millisecond, procs, func() error {
		req, _ := http.NewRequest("GET", metricsURL, nil)
		req.Header.Set("Accept", "text/plain;version=0.0.4")
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if ce := resp.Header.Get("Content-Encoding"); ce != "gzip" {
			return fmt.Errorf("Content-Encoding %q", ce)
		}
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			return err
		}
		body, err := io.ReadAll(zr)
		if err != nil {
			return err
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		mfs, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
		if err != nil {
			t.Fatalf("text answer does not parse: %v", err)
		}
		want = map[string]int{}
		for _, name := range []string{"mintlify_site_unique_visitors", "mintlify_page_unique_visitors_deduplicated"} {
			for _, m := range mfs[name].GetMetric() {
				for _, lp := range m.GetLabel() {
					if lp.GetName() == "window" {
						want[name+"/"+lp.GetValue()]++
					}
				}
			}
		}
		if want["mintlify_site_unique_visitors/1d"] != 4 || want["mintlify_site_unique_visitors/7d"] != 4 {
			return fmt.Errorf("site series per window: %v", want)
		}
		testutil.CheckMetrics(t, string(body))
		return nil
	})

	// OpenMetrics, gzipped, as Prometheus negotiates it: the same series.
	eventuallyRunning(t, "Prometheus stored every data series", 30*time.Second, 500*time.Millisecond, procs, func() error {
		for key, n := range want {
			name, window, _ := strings.Cut(key, "/")
			r, err := api.query(fmt.Sprintf(`count(%s{window=%q})`, name, window), time.Now())
			if err != nil {
				return err
			}
			if len(r.Series) != 1 || fmt.Sprint(r.Series[0].Value[1]) != fmt.Sprint(n) {
				return fmt.Errorf("count(%s{window=%q}) = %v, want %d", name, window, r.Series, n)
			}
		}
		r, err := api.query(`up{job="mintlify"} == 1 and scrape_samples_scraped > 100`, time.Now())
		if err != nil || len(r.Series) != 1 {
			return fmt.Errorf("target not up with its samples: %v %v", r.Series, err)
		}
		return nil
	})
}
