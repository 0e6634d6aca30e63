package collector

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// benchPaths is the number of paths of the benchmark site: 3 page series
// each (human, ai, deduplicated) make 30,000 page series.
const benchPaths = 10000

// discardResponse is an http.ResponseWriter that throws the body away.
type discardResponse struct{ h http.Header }

func (d *discardResponse) Header() http.Header         { return d.h }
func (d *discardResponse) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardResponse) WriteHeader(int)             {}

// cachedVisitors returns a harness serving one snapshot of benchPaths
// paths, fetched from the fake API over HTTP.
func cachedVisitors(b *testing.B) *harness { return cachedVisitorsN(b, benchPaths) }

// cachedVisitorsN is cachedVisitors with n paths.
func cachedVisitorsN(b *testing.B, n int) *harness {
	b.Helper()
	h := newHarness(b, harnessOptions{fake: fakeapi.Options{Paths: n}, plainRegistry: true})
	h.views.set(h.walk(walkSpec{}))
	if got := h.gather().count(pageVisitors) + h.gather().count(pageVisitorsDedup); got != 3*n {
		b.Fatalf("cache holds %d page series, want %d", got, 3*n)
	}
	return h
}

// scrapeLoop serves /metrics from handler b.N times as text exposition, the
// way Prometheus asks for it, into a discarding writer.
func scrapeLoop(b *testing.B, handler http.Handler) {
	b.Helper()
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	w := &discardResponse{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		handler.ServeHTTP(w, req)
	}
}

// httpScrapeLoop GETs /metrics from handler over loopback HTTP b.N times,
// with the Accept header of a format and, when gz, Accept-Encoding: gzip
// (as Prometheus sends it), reading the body as it comes (not
// decompressing it). Besides ns/op it reports cpu-ns/op: the user and
// system CPU time of the whole process (server and client) per scrape.
func httpScrapeLoop(b *testing.B, handler http.Handler, accept string, gz bool) {
	b.Helper()
	srv := httptest.NewServer(handler)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	req, _ := http.NewRequest("GET", srv.URL+"/metrics", nil)
	req.Header.Set("Accept", accept)
	if gz {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	buf := make([]byte, 64<<10)
	scrape := func() {
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.CopyBuffer(io.Discard, struct{ io.Reader }{resp.Body}, buf)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("HTTP %d", resp.StatusCode)
		}
	}
	scrape() // connect
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		scrape()
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
}

// processCPU is the user and system CPU time of this process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchEncodings are the answers the exposition benchmarks ask for.
var benchEncodings = []struct {
	name   string
	accept string
	gzip   bool
}{
	{"text", acceptText, false},
	{"text+gzip", acceptText, true},
	{"openmetrics", acceptOpenMetrics, false},
	{"openmetrics+gzip", acceptOpenMetrics, true}, // what Prometheus asks for
}

// BenchmarkScrapeEncoded is a whole cached scrape through the exposition
// handler over loopback HTTP, for 250, 2,500 and 10,000 paths, in each
// format and compression. exporter: an empty registry, then the status
// series and the data families from Encoded (kept current by Run, as
// main runs it): the bytes encoded once per change when gzipped, encoded
// as written when plain. exporter+runtime adds what main registers beside
// (build info, Go and process collectors, collector as main
// registers it), gathered on every scrape.
//
// bare is the floor, measured in the same run over the same loopback HTTP:
// a handler writing the very same answer, pre-encoded in one slice.
// per-scrape-gzip compresses the cached plain answer on every scrape
// (gzip.BestSpeed): the alternative to caching gzip members.
// answer-bytes is the size of the answer; cache-bytes what the cache of
// that encoding holds for the snapshot (a gzip encoding is built from a
// fresh plain encoding, which is not kept unless asked for too).
func BenchmarkScrapeEncoded(b *testing.B) {
	for _, n := range []int{250, 2500, 10000} {
		h := cachedVisitorsN(b, n)
		reg := prometheus.NewRegistry()
		runtimeReg := prometheus.NewRegistry()
		runtimeReg.MustRegister(versioncollector.NewCollector("mintlify_exporter"), collectors.NewGoCollector(), NewProcessCollector())
		before := h.requests()
		for _, e := range benchEncodings {
			// A cache per encoding, so that cache-bytes is that encoding's.
			enc := NewEncoded(h.views, nil)
			ctx, cancel := context.WithCancel(b.Context())
			done := make(chan struct{})
			go func() { defer close(done); enc.Run(ctx, time.Hour) }()
			for !enc.running.Load() {
				time.Sleep(time.Millisecond) // real time: Run starts on another goroutine; a benchmark has no testutil.Eventually
			}
			handler := NewHandler(reg, enc, Opts{Registry: reg})
			withRuntime := NewHandler(runtimeReg, enc, Opts{Registry: runtimeReg})
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("GET", "/metrics", nil)
			req.Header.Set("Accept", e.accept)
			if e.gzip {
				req.Header.Set("Accept-Encoding", "gzip")
			}
			handler.ServeHTTP(rec, req) // fills the cache of this encoding
			answer := rec.Body.Bytes()
			var cached int
			for _, x := range enc.Bytes() {
				cached += x
			}
			b.Run(fmt.Sprintf("paths=%d/%s/exporter", n, e.name), func(b *testing.B) {
				httpScrapeLoop(b, handler, e.accept, e.gzip)
				b.ReportMetric(float64(len(answer)), "answer-bytes")
				b.ReportMetric(float64(cached), "cache-bytes")
			})
			b.Run(fmt.Sprintf("paths=%d/%s/exporter+runtime", n, e.name), func(b *testing.B) {
				httpScrapeLoop(b, withRuntime, e.accept, e.gzip)
			})
			b.Run(fmt.Sprintf("paths=%d/%s/bare", n, e.name), func(b *testing.B) {
				bare := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					if e.gzip {
						w.Header().Set("Content-Encoding", "gzip")
					}
					_, _ = w.Write(answer)
				})
				httpScrapeLoop(b, bare, e.accept, e.gzip)
			})
			cancel()
			<-done
			if e.gzip {
				continue
			}
			b.Run(fmt.Sprintf("paths=%d/%s/per-scrape-gzip", n, e.name), func(b *testing.B) {
				perScrape := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					w.Header().Set("Content-Encoding", "gzip")
					zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
					_, _ = zw.Write(answer)
					_ = zw.Close()
				})
				httpScrapeLoop(b, perScrape, e.accept, true)
			})
		}
		if h.requests() != before {
			b.Fatal("cached scrapes reached the API")
		}
	}
}

func metricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// BenchmarkScrapeCached is a whole scrape of 30,000 page series (plus the 3
// site and 6 status series): promhttp gathers the Visitors collector, which
// reads the scheduler's views and builds const metrics from the snapshot,
// and encodes them as text. Scrapes never refresh: it must not reach the
// API.
func BenchmarkScrapeCached(b *testing.B) {
	h := cachedVisitors(b)
	reg := prometheus.NewRegistry() // the collector alone, as in the baseline
	reg.MustRegister(h.v)
	handler := metricsHandler(reg)
	before := h.requests()

	scrapeLoop(b, handler)

	if got := h.requests() - before; got != 0 {
		b.Fatalf("cached scrapes sent %d upstream requests", got)
	}
}

// allDescs are the descriptors of the Visitors collector.
func allDescs() []*prometheus.Desc {
	var out []*prometheus.Desc
	for _, f := range sources.All()[0].Families { // visitors
		out = append(out, f.Desc())
	}
	return append(out, statusDescs...)
}

// metricsCollector is a bare collector that emits given const metrics.
type metricsCollector struct{ metrics []prometheus.Metric }

func (c *metricsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs() {
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
	site            analytics.Counts
	paths           []analytics.PathCounts
}

func (c *perCollectCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs() {
		ch <- d
	}
}

func (c *perCollectCollector) Collect(ch chan<- prometheus.Metric) {
	p, w := c.project, c.window
	g := prometheus.GaugeValue
	for _, m := range []struct {
		d *prometheus.Desc
		v float64
	}{{refreshSuccessDesc, 1}, {refreshDurationDesc, 0}, {refreshIntervalDesc, 3600}, {lastRefreshDesc, 1}, {pathsDesc, float64(len(c.paths))}, {pathsDroppedDesc, 0}} {
		ch <- prometheus.MustNewConstMetric(m.d, g, m.v, p, w)
	}
	fams := sources.All()[0].Families // visitors: site before page
	site, siteDedup, page, pageDedup := fams[0].Desc(), fams[1].Desc(), fams[2].Desc(), fams[3].Desc()
	ch <- prometheus.MustNewConstMetric(site, g, c.site.Human, p, w, TrafficHuman)
	ch <- prometheus.MustNewConstMetric(site, g, c.site.AI, p, w, TrafficAI)
	ch <- prometheus.MustNewConstMetric(siteDedup, g, c.site.Total, p, w)
	for _, pc := range c.paths {
		ch <- prometheus.MustNewConstMetric(page, g, pc.Human, p, w, pc.Path, TrafficHuman)
		ch <- prometheus.MustNewConstMetric(page, g, pc.AI, p, w, pc.Path, TrafficAI)
		ch <- prometheus.MustNewConstMetric(pageDedup, g, pc.Total, p, w, pc.Path)
	}
}

// BenchmarkScrapeBareConstMetrics exposes the same series, with the same
// names, labels, help and values, from a bare registry through the same
// promhttp handler, without the scheduler's views.
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
	views := h.views.Views()
	if len(views) != 1 || views[0].Data == nil {
		b.Fatalf("views %+v, want one with data", views)
	}
	snap := views[0].Data.(*sources.TrafficSnapshot)
	before := h.requests()

	b.Run("prebuilt", func(b *testing.B) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(&metricsCollector{metrics: prebuilt})
		scrapeLoop(b, metricsHandler(reg))
	})
	b.Run("per-collect", func(b *testing.B) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(&perCollectCollector{project: "docs", window: "1d", site: snap.Site, paths: snap.Paths})
		scrapeLoop(b, metricsHandler(reg))
	})
	if h.requests() != before {
		b.Fatal("the baseline reached the API")
	}
}
