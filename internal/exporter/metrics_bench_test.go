package exporter

import (
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
)

// BenchmarkMetricsHandlerFixedCost is a gzipped OpenMetrics scrape of the
// /metrics handler as Serve mounts it with no analytics data: what every
// scrape costs beside the pre-encoded bytes (build info, Go and process
// collectors, the API client's metrics, the budgets).
func BenchmarkMetricsHandlerFixedCost(b *testing.B) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(versioncollector.NewCollector(exporterName), collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	apiclient.NewMetrics(reg)
	bud, _ := budget.New(budget.Config{Limit: 100})
	var wg sync.WaitGroup
	h := metricsHandler(b.Context(), &wg, reg, metricsOptions{Views: staticViews{}, Budgets: func() []*budget.Budget { return []*budget.Budget{bud} }})
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
}
