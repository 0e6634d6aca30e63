package tracker

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
)

// ExportDurationBuckets are the classic buckets of
// mintlify_static_export_duration_seconds: 10s to 2h.
var ExportDurationBuckets = []float64{10, 30, 60, 90, 120, 180, 300, 600, 1200, 1800, 3600, 7200}

// exportFinalStatuses are the status label values of the finished series.
var exportFinalStatuses = []string{apiclient.StaticExportCompleted, apiclient.StaticExportFailed}

// exportState is one project's exports at scrape time.
type exportState struct {
	inProgress int
	// oldest is the createdAt (else when followed) of the oldest running;
	// newest that of the newest, whose progress and pages are shown.
	oldest, newest time.Time
	progress       float64
	pages          int64
	// lastSuccess is the latest end of a completed export.
	lastSuccess time.Time
}

// add counts r in st.
func (st *exportState) add(r *exportRecord) {
	started := r.CreatedAt
	if started.IsZero() {
		started = r.TrackedAt
	}
	switch {
	case !r.final():
		st.inProgress++
		if st.oldest.IsZero() || started.Before(st.oldest) {
			st.oldest = started
		}
		if !started.Before(st.newest) {
			st.newest, st.progress, st.pages = started, r.Progress, r.Pages
		}
	case r.Status == apiclient.StaticExportCompleted && !r.Lost:
		end := r.UpdatedAt
		if end.IsZero() {
			end = r.TerminalAt
		}
		if end.After(st.lastSuccess) {
			st.lastSuccess = end
		}
	}
}

// exportMetrics are the mintlify_static_export* families.
type exportMetrics struct {
	// enabled: the static export routes are on; every project's series
	// are pre-created.
	enabled bool

	finished                                               *prometheus.CounterVec
	duration                                               *prometheus.HistogramVec
	inProgress, progress, pages, lastSuccess, oldest, unkn *prometheus.Desc
}

func newExportMetrics(enabled bool) *exportMetrics {
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, []string{"project"}, nil)
	}
	return &exportMetrics{
		enabled: enabled,
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mintlify_static_exports_finished_total",
			Help: "Static exports followed by the exporter seen reaching a final status (completed or failed), once each.",
		}, []string{"project", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:                            "mintlify_static_export_duration_seconds",
			Help:                            "Time of each finished static export, from the API's createdAt to its last updatedAt.",
			Buckets:                         ExportDurationBuckets,
			NativeHistogramBucketFactor:     1.1,
			NativeHistogramMaxBucketNumber:  100,
			NativeHistogramMinResetDuration: time.Hour,
		}, []string{"project"}),
		inProgress: desc("mintlify_static_exports_in_progress", "Static exports followed by the exporter that are not final yet (queued ones included)."),
		progress:   desc("mintlify_static_export_progress_ratio", "Progress (0-1) of the newest static export in progress; 0 when there is none."),
		pages:      desc("mintlify_static_export_pages_exported", "Pages exported so far by the newest static export in progress; 0 when there is none."),
		lastSuccess: desc("mintlify_static_export_last_success_timestamp_seconds",
			"When the latest completed static export the exporter followed ended (absent until one is known)."),
		oldest: desc("mintlify_static_export_oldest_in_progress_age_seconds",
			"Age, from the API's createdAt, of the oldest static export followed and not final; 0 when none is."),
		unkn: desc("mintlify_static_export_unknown_outcomes",
			"Static export starts perhaps sent, their answer never recorded (GET .../unknown-starts), waiting for an operator."),
	}
}

// addProjects pre-creates the projects' series (when enabled).
func (m *exportMetrics) addProjects(projects []string) {
	if !m.enabled {
		return
	}
	for _, p := range projects {
		for _, st := range exportFinalStatuses {
			m.finished.WithLabelValues(p, st)
		}
		m.duration.WithLabelValues(p)
	}
}

// dropProjects undoes addProjects.
func (m *exportMetrics) dropProjects(projects []string) {
	for _, p := range projects {
		m.finished.DeletePartialMatch(prometheus.Labels{"project": p})
		m.duration.DeleteLabelValues(p)
	}
}

func (m *exportMetrics) describe(ch chan<- *prometheus.Desc) {
	m.finished.Describe(ch)
	m.duration.Describe(ch)
	for _, d := range []*prometheus.Desc{m.inProgress, m.progress, m.pages, m.lastSuccess, m.oldest, m.unkn} {
		ch <- d
	}
}

func (m *exportMetrics) collectVecs(ch chan<- prometheus.Metric) {
	m.finished.Collect(ch)
	m.duration.Collect(ch)
}

// collectProject sends the gauges of project p as of now.
func (m *exportMetrics) collectProject(ch chan<- prometheus.Metric, p string, pj *projectJobs, now time.Time) {
	st := &pj.export
	if !m.enabled && st.inProgress == 0 && st.lastSuccess.IsZero() && pj.unknownExports == 0 {
		return
	}
	age := 0.0
	if !st.oldest.IsZero() {
		age = max(now.Sub(st.oldest).Seconds(), 0)
	}
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, p)
	}
	gauge(m.inProgress, float64(st.inProgress))
	gauge(m.progress, st.progress/100)
	gauge(m.pages, float64(st.pages))
	gauge(m.oldest, age)
	gauge(m.unkn, float64(pj.unknownExports))
	if !st.lastSuccess.IsZero() {
		gauge(m.lastSuccess, float64(st.lastSuccess.UnixMilli())/1000)
	}
}

// count applies the event of one persisted export change.
func (m *exportMetrics) count(has func(string) bool, project string, ev finishEvent) {
	if ev.finished == "" || !has(project) {
		return
	}
	m.finished.WithLabelValues(project, ev.finished).Inc()
	if ev.observeDur {
		m.duration.WithLabelValues(project).Observe(max(ev.duration.Seconds(), 0))
	}
}
