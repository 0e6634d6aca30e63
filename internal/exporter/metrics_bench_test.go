package exporter

import (
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/collector"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
)

// BenchmarkMetricsHandlerFixedCost is an OpenMetrics + gzip scrape of the
// /metrics handler as Serve mounts it, without analytics data: what every
// scrape costs beside writing the pre-encoded bytes. as-serve: build info,
// Go and process collectors, the API client's metrics, a budget;
// no-process: the same without the process collector; handler: an empty
// registry (the handler, the role and budget gatherers alone).
func BenchmarkMetricsHandlerFixedCost(b *testing.B) {
	for _, c := range []struct {
		name          string
		runtime, proc bool
	}{{"as-serve", true, true}, {"no-process", true, false}, {"handler", false, false}} {
		b.Run(c.name, func(b *testing.B) {
			reg := prometheus.NewRegistry()
			var client *apiclient.Metrics
			if c.runtime {
				reg.MustRegister(versioncollector.NewCollector(exporterName), collectors.NewGoCollector())
				client = apiclient.NewMetrics(nil)
			}
			if c.proc {
				reg.MustRegister(collector.NewProcessCollector())
			}
			bud, err := budget.New(budget.Config{Limit: 100})
			if err != nil {
				b.Fatal(err)
			}
			var wg sync.WaitGroup
			h := metricsHandler(b.Context(), &wg, reg, metricsOptions{Views: staticViews{}, Client: client, Budgets: func() []*budget.Budget { return []*budget.Budget{bud} }})
			req := httptest.NewRequest("GET", "/metrics", nil)
			req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0")
			req.Header.Set("Accept-Encoding", "gzip")
			var n int
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				n = rec.Body.Len()
			}
			b.ReportMetric(float64(n), "answer-bytes")
		})
	}
}
