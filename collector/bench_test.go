package collector

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

// benchPaths is the number of paths of the benchmark site: 3 page series
// each (human, ai, deduplicated) make 30,000 page series.
const benchPaths = 10000

// discardResponse is an http.ResponseWriter that throws the body away.
type discardResponse struct{ h http.Header }

func (d *discardResponse) Header() http.Header         { return d.h }
func (d *discardResponse) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardResponse) WriteHeader(int)             {}

// cachedVisitors returns a Visitors collector whose cache holds one snapshot
// of benchPaths paths, fetched from the fake API over HTTP.
func cachedVisitors(b *testing.B) *harness {
	b.Helper()
	h := newHarness(b, harnessOptions{
		fake:          fakeapi.Options{Paths: benchPaths},
		cfg:           VisitorsConfig{MaxPages: 100, CacheTTL: time.Hour},
		plainRegistry: true,
	})
	h.refresh()
	if n := h.gather().count(pageVisitors) + h.gather().count(pageVisitorsDedup); n != 3*benchPaths {
		b.Fatalf("cache holds %d page series, want %d", n, 3*benchPaths)
	}
	return h
}

// scrapeLoop serves /metrics from handler b.N times as text exposition, the
// way Prometheus asks for it, into a discarding writer.
func scrapeLoop(b *testing.B, handler http.Handler) {
	b.Helper()
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	req.Header.Set(ScrapeTimeoutHeader, "10")
	w := &discardResponse{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		handler.ServeHTTP(w, req)
	}
}

func metricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// BenchmarkScrapeCached is a whole cached scrape of 30,000 page series (plus
// the 3 site and 5 status series): RefreshBeforeScrape finds nothing due,
// then promhttp gathers the Visitors collector, which builds const metrics
// from the snapshot, and encodes them as text. It must not reach the API.
func BenchmarkScrapeCached(b *testing.B) {
	h := cachedVisitors(b)
	reg := prometheus.NewRegistry() // the collector alone, as in the baseline
	reg.MustRegister(h.v)
	handler := RefreshBeforeScrape(metricsHandler(reg), h.v, 10*time.Second)
	before := h.requests()

	scrapeLoop(b, handler)

	if got := h.requests() - before; got != 0 {
		b.Fatalf("cached scrapes sent %d upstream requests", got)
	}
}

// metricsCollector is a bare collector that emits given const metrics.
type metricsCollector struct{ metrics []prometheus.Metric }

func (c *metricsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs {
		ch <- d
	}
}

func (c *metricsCollector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c.metrics {
		ch <- m
	}
}

// perCollectCollector builds the same const metrics on every Collect from
// plain slices, the textbook const-metric exporter.
type perCollectCollector struct {
	project, window string
	site            visitorCounts
	pages           []pageVisitorCounts
}

func (c *perCollectCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs {
		ch <- d
	}
}

func (c *perCollectCollector) Collect(ch chan<- prometheus.Metric) {
	p, w := c.project, c.window
	g := prometheus.GaugeValue
	for _, m := range []struct {
		d *prometheus.Desc
		v float64
	}{{refreshSuccessDesc, 1}, {refreshDurationDesc, 0}, {lastRefreshDesc, 1}, {pathsDesc, float64(len(c.pages))}, {pathsDroppedDesc, 0}} {
		ch <- prometheus.MustNewConstMetric(m.d, g, m.v, p, w)
	}
	ch <- prometheus.MustNewConstMetric(siteVisitorsDesc, g, c.site.human, p, w, trafficHuman)
	ch <- prometheus.MustNewConstMetric(siteVisitorsDesc, g, c.site.ai, p, w, trafficAI)
	ch <- prometheus.MustNewConstMetric(siteVisitorsDedupDesc, g, c.site.total, p, w)
	for _, pg := range c.pages {
		ch <- prometheus.MustNewConstMetric(pageVisitorsDesc, g, pg.human, p, w, pg.path, trafficHuman)
		ch <- prometheus.MustNewConstMetric(pageVisitorsDesc, g, pg.ai, p, w, pg.path, trafficAI)
		ch <- prometheus.MustNewConstMetric(pageVisitorsDedupDesc, g, pg.total, p, w, pg.path)
	}
}

// BenchmarkScrapeBareConstMetrics exposes the same series, with the same
// names, labels, help and values, from a bare registry through the same
// promhttp handler, without the cache or RefreshBeforeScrape.
//
// prebuilt emits const metrics built once, outside the loop: the cost of
// exposition alone, the lowest any const-metric collector can reach, and
// the baseline for the "within 2x" target. per-collect builds them on every
// Collect as most exporters do (and as Visitors does); it is reported to
// show how much of the cost is building the metrics.
func BenchmarkScrapeBareConstMetrics(b *testing.B) {
	h := cachedVisitors(b)
	ch := make(chan prometheus.Metric, 3*benchPaths+16)
	h.v.Collect(ch)
	close(ch)
	var prebuilt []prometheus.Metric
	for m := range ch {
		prebuilt = append(prebuilt, m)
	}
	snap := h.v.entries[0].state.Load().good
	before := h.requests()

	b.Run("prebuilt", func(b *testing.B) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(&metricsCollector{metrics: prebuilt})
		scrapeLoop(b, metricsHandler(reg))
	})
	b.Run("per-collect", func(b *testing.B) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(&perCollectCollector{project: "docs", window: "1d", site: snap.site, pages: snap.pages})
		scrapeLoop(b, metricsHandler(reg))
	})
	if h.requests() != before {
		b.Fatal("the baseline reached the API")
	}
}
