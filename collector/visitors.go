// Package collector turns unique visitor snapshots into Prometheus metrics.
// It does no I/O: internal/refresh walks the API on the analytics budget's
// plan and hands it finished snapshots; this package only reads them and
// says how fresh they are. The mapping from a snapshot to samples is
// exported, so that history backfills write the very same series.
package collector

import (
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/internal/refresh"
	"github.com/mintlify-exporter/mintlify_exporter/internal/visitors"
)

// Label values of the traffic label.
const (
	TrafficHuman = "human"
	TrafficAI    = "ai"
)

// DataFamily is one metric family of visitor data, as exported live and as
// written by a backfill.
type DataFamily struct {
	Name   string
	Help   string
	Labels []string
	// page: one series per path; traffic: split by human and AI.
	page, traffic bool
	desc          *prometheus.Desc
}

func newDataFamily(name, help string, page, traffic bool) *DataFamily {
	labels := []string{"project", "window"}
	if page {
		labels = append(labels, "path")
	}
	if traffic {
		labels = append(labels, "traffic")
	}
	return &DataFamily{Name: name, Help: help, Labels: labels, page: page, traffic: traffic,
		desc: prometheus.NewDesc(name, help, labels, nil)}
}

// Samples calls emit once per sample of the family in snapshot s, with the
// label values in the order of Labels.
func (f *DataFamily) Samples(project, window string, s *visitors.Snapshot, emit func(value float64, labelValues ...string)) {
	one := func(c visitors.Counts, lv ...string) {
		if f.traffic {
			emit(c.Human, append(lv, TrafficHuman)...)
			emit(c.AI, append(lv, TrafficAI)...)
			return
		}
		emit(c.Total, lv...)
	}
	if !f.page {
		one(s.Site, project, window)
		return
	}
	for i := range s.Paths {
		p := &s.Paths[i]
		one(p.Counts, project, window, p.Path)
	}
}

var (
	// DataFamilies are the visitor data families, site before page.
	DataFamilies = []*DataFamily{
		newDataFamily("mintlify_site_unique_visitors",
			"Unique visitors of the whole site in the window, by traffic (human or ai), as the Mintlify API reports them. "+
				"Unique visitors are not additive: do not sum across windows, and human + ai exceeds the deduplicated total "+
				"(mintlify_site_unique_visitors_deduplicated) when visitors overlap.", false, true),
		newDataFamily("mintlify_site_unique_visitors_deduplicated",
			"The Mintlify API's site-wide unique visitor total for the window, deduplicated across human and AI traffic. "+
				"It is the API's own total, never computed as a sum of the traffic series, and not additive across windows.", false, false),
		newDataFamily("mintlify_page_unique_visitors",
			"Unique visitors of one page in the window, by traffic (human or ai), as the Mintlify API reports them. "+
				"Not additive: a visitor who reads several pages counts on each, so summing over path does not give the site count; "+
				"do not sum across windows either.", true, true),
		newDataFamily("mintlify_page_unique_visitors_deduplicated",
			"The Mintlify API's unique visitor total of one page in the window, deduplicated across human and AI traffic. "+
				"It is the API's own total, never computed as a sum, and not additive across paths or windows.", true, false),
	}

	refreshSuccessDesc = prometheus.NewDesc(
		"mintlify_visitors_refresh_success",
		"1 if the last refresh of visitors for this project and window from the Mintlify API succeeded, else 0 (also 0 until the first refresh has finished). "+
			"After a failure the last good data stays exported until it is older than its planned interval plus the maximum staleness.",
		[]string{"project", "window"}, nil)
	lastRefreshDesc = prometheus.NewDesc(
		"mintlify_visitors_last_refresh_timestamp_seconds",
		"Unix time at which the last successful refresh of visitors for this project and window finished: the age of the data exported. "+
			"Absent until the first success.",
		[]string{"project", "window"}, nil)
	refreshDurationDesc = prometheus.NewDesc(
		"mintlify_visitors_refresh_duration_seconds",
		"How long the last refresh of visitors for this project and window took (every page and retry), whether it succeeded or not.",
		[]string{"project", "window"}, nil)
	refreshIntervalDesc = prometheus.NewDesc(
		"mintlify_visitors_refresh_interval_seconds",
		"Planned interval between two refreshes of this project and window: what the analytics budget pays for, given the window's own "+
			"interval, --visitors.cache-ttl and the requests one refresh takes. Absent for window=\"yesterday\", walked once a day.",
		[]string{"project", "window"}, nil)
	pathsDesc = prometheus.NewDesc(
		"mintlify_visitors_paths",
		"Paths exported for this project and window, after the path filters and the path cap.",
		[]string{"project", "window"}, nil)
	pathsDroppedDesc = prometheus.NewDesc(
		"mintlify_visitors_paths_dropped",
		"Paths the Mintlify API reported for this project and window that are not exported, left out by the path include/exclude filters or the path cap.",
		[]string{"project", "window"}, nil)

	statusDescs = []*prometheus.Desc{
		refreshSuccessDesc, lastRefreshDesc, refreshDurationDesc, refreshIntervalDesc, pathsDesc, pathsDroppedDesc,
	}
)

// ViewSource is what the collector reads; *refresh.Scheduler implements it.
type ViewSource interface {
	Views() []refresh.View
}

// Visitors is a prometheus.Collector exporting unique visitor counts from
// the snapshots of a ViewSource.
type Visitors struct {
	src    ViewSource
	logger log.Logger
	// status: the refresh status series; data: the DataFamilies.
	status, data bool
}

// NewVisitors returns a collector of src's snapshots: status and data.
func NewVisitors(src ViewSource, logger log.Logger) *Visitors {
	return newVisitors(src, logger, true, true)
}

// NewVisitorsStatus returns a collector of the status series of src's
// snapshots only, for a registry whose handler writes the data families
// from an Encoded cache (internal/exposition).
func NewVisitorsStatus(src ViewSource, logger log.Logger) *Visitors {
	return newVisitors(src, logger, true, false)
}

func newVisitors(src ViewSource, logger log.Logger, status, data bool) *Visitors {
	if logger == nil {
		logger = log.NewNopLogger()
	}
	return &Visitors{src: src, logger: logger, status: status, data: data}
}

// Describe implements prometheus.Collector.
func (v *Visitors) Describe(ch chan<- *prometheus.Desc) {
	if v.data {
		for _, f := range DataFamilies {
			ch <- f.desc
		}
	}
	if v.status {
		for _, d := range statusDescs {
			ch <- d
		}
	}
}

// Collect implements prometheus.Collector. It only reads snapshots: no I/O,
// no waiting on refreshes.
//
// Per project×window it always emits refresh_success, refresh_duration once
// a refresh has finished, last_refresh_timestamp once one has succeeded
// (omitted, not 0, before that: a 0 would read as a 56-year-old snapshot)
// and the planned interval. The data series, paths and paths_dropped come
// from the snapshot the source says to serve, and vanish together when
// there is none.
func (v *Visitors) Collect(ch chan<- prometheus.Metric) {
	for _, view := range v.src.Views() {
		p, w, s := view.Project, view.Window, view.Data
		if v.status {
			v.gauge(ch, refreshSuccessDesc, boolFloat(view.OK), p, w)
			if view.Attempted {
				v.gauge(ch, refreshDurationDesc, view.Duration.Seconds(), p, w)
			}
			if view.Interval > 0 {
				v.gauge(ch, refreshIntervalDesc, view.Interval.Seconds(), p, w)
			}
			if !view.LastSuccess.IsZero() {
				v.gauge(ch, lastRefreshDesc, float64(view.LastSuccess.UnixNano())/1e9, p, w)
			}
			if s != nil {
				v.gauge(ch, pathsDesc, float64(len(s.Paths)), p, w)
				v.gauge(ch, pathsDroppedDesc, float64(s.Dropped), p, w)
			}
		}
		if s == nil || !v.data {
			continue
		}
		for _, f := range DataFamilies {
			f.Samples(p, w, s, func(value float64, lv ...string) { v.gauge(ch, f.desc, value, lv...) })
		}
	}
}

// gauge emits one const gauge. Label values are valid UTF-8 by construction
// (snapshots sanitise paths), so the error cannot happen; if it ever did,
// the series is skipped rather than panicking inside Gather or turning the
// whole scrape into an error.
func (v *Visitors) gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, val float64, labelValues ...string) {
	m, err := prometheus.NewConstMetric(d, prometheus.GaugeValue, val, labelValues...)
	if err != nil {
		level.Error(v.logger).Log("msg", "skipping invalid visitors series", "err", err)
		return
	}
	ch <- m
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
