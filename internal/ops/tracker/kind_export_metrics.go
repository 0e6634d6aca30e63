package tracker

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
)

// ExportDurationBuckets are the classic buckets of
// mintlify_static_export_duration_seconds: 10s to 2h.
var ExportDurationBuckets = []float64{10, 30, 60, 90, 120, 180, 300, 600, 1200, 1800, 3600, 7200}

// exportMetrics are the mintlify_static_export* families: the engine's
// (opMetrics), and the progress and pages of the newest export running.
type exportMetrics struct {
	*opMetrics
	progress, pages *prometheus.Desc
}

func newExportMetrics() *exportMetrics {
	m := newOpMetrics(opFamilies{stem: "mintlify_static_export", noun: "static export", requests: "static export starts", route: "unknown-starts",
		ended: "updatedAt", finals: []string{apiclient.StaticExportCompleted, apiclient.StaticExportFailed}, buckets: ExportDurationBuckets})
	return &exportMetrics{opMetrics: m,
		progress: prometheus.NewDesc("mintlify_static_export_progress_ratio",
			"Progress (0-1) of the newest static export in progress; 0 when there is none.", []string{"project"}, nil),
		pages: prometheus.NewDesc("mintlify_static_export_pages_exported",
			"Pages exported so far by the newest static export in progress; 0 when there is none.", []string{"project"}, nil)}
}

func (m *exportMetrics) describe(ch chan<- *prometheus.Desc) {
	m.opMetrics.describe(ch)
	ch <- m.progress
	ch <- m.pages
}

// exportGauges are one project's exports at scrape time: the engine's
// gauges, and the newest running (its start, progress and pages).
type exportGauges struct {
	opGauges
	newest   time.Time
	progress float64
	pages    int64
}

// add counts r.
func (g *exportGauges) add(r *exportRecord) {
	end := r.UpdatedAt
	if end.IsZero() {
		end = r.TerminalAt
	}
	started := g.opGauges.add(&r.opState, r.final(), r.Status == apiclient.StaticExportCompleted, end)
	if !r.final() && !started.Before(g.newest) {
		g.newest, g.progress, g.pages = started, r.Progress, r.Pages
	}
}

// collectProject sends the gauges of project p as of now.
func (m *exportMetrics) collectProject(ch chan<- prometheus.Metric, p string, g *exportGauges, now time.Time) {
	if !m.shown(&g.opGauges) {
		return
	}
	m.collect(ch, &g.opGauges, now, p)
	ch <- prometheus.MustNewConstMetric(m.progress, prometheus.GaugeValue, g.progress/100, p)
	ch <- prometheus.MustNewConstMetric(m.pages, prometheus.GaugeValue, float64(g.pages), p)
}
