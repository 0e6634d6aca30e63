// Package collector turns analytics snapshots into Prometheus metrics. It
// does no I/O: internal/refresh walks the API on the analytics budget's
// plan and hands it finished snapshots; this package only reads them and
// says how fresh they are. The mapping from a snapshot to samples is each
// source's own (internal/sources), so that history backfills write the
// very same series.
package collector

import (
	"cmp"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
	"github.com/mintlify-exporter/mintlify_exporter/internal/visitors"
)

// Label values of the traffic label.
const (
	TrafficHuman = sources.TrafficHuman
	TrafficAI    = sources.TrafficAI
)

// allFamilies are every source's data families, in the registry's order
// (visitors first); a family's index here is its place in the exposition.
var allFamilies = func() []*sources.Family {
	var out []*sources.Family
	for _, d := range sources.All() {
		out = append(out, d.Families...)
	}
	return out
}()

// familyIndex finds a family's place in families.
var familyIndex = func() map[*sources.Family]int {
	m := make(map[*sources.Family]int, len(allFamilies))
	for i, f := range allFamilies {
		m[f] = i
	}
	return m
}()

// DataFamily is one family of unique visitor data, emitted from a visitors
// snapshot (the collector's benchmarks read them).
type DataFamily struct {
	*sources.Family
}

// Samples calls emit once per sample of the family in snapshot s, with the
// label values in the order of Labels.
func (f *DataFamily) Samples(project, window string, s *visitors.Snapshot, emit func(value float64, labelValues ...string)) {
	f.Emit(&sources.TrafficSnapshot{Snapshot: s}, project, window, sources.Emit(emit))
}

// DataFamilies are the visitor data families, site before page.
var DataFamilies = func() []*DataFamily {
	d := sources.All()[0] // visitors: first in the registry (sources.TestRegistry)
	out := make([]*DataFamily, len(d.Families))
	for i, f := range d.Families {
		out[i] = &DataFamily{f}
	}
	return out
}()

var (
	statusLabels       = []string{"project", "source", "window", "scope"}
	refreshSuccessDesc = prometheus.NewDesc("mintlify_analytics_refresh_success",
		"1 if the last refresh of this project, source, window and scope succeeded, else 0.", statusLabels, nil)
	lastRefreshDesc = prometheus.NewDesc("mintlify_analytics_last_refresh_timestamp_seconds",
		"Unix time of the last successful refresh: the age of the data exported.", statusLabels, nil)
	refreshDurationDesc = prometheus.NewDesc("mintlify_analytics_refresh_duration_seconds",
		"How long the last refresh took, pages and retries included.", statusLabels, nil)
	refreshIntervalDesc = prometheus.NewDesc("mintlify_analytics_refresh_interval_seconds",
		"Planned interval between two refreshes, as the analytics budget pays for it.", statusLabels, nil)
	refreshFailuresDesc = prometheus.NewDesc("mintlify_analytics_refresh_failures_total",
		"Refreshes that failed: API errors, page or cursor loops that did not end, budget waits cut short.", statusLabels, nil)
	pathsDesc = prometheus.NewDesc("mintlify_analytics_paths",
		"Paths exported for this project, source and window, after the path filters and cap.", []string{"project", "source", "window"}, nil)
	pathsDroppedDesc = prometheus.NewDesc("mintlify_analytics_paths_dropped",
		"Paths the API reported that the path filters or cap left out.", []string{"project", "source", "window"}, nil)
	labelValuesFoldedDesc = prometheus.NewDesc("mintlify_analytics_label_values_folded",
		"Distinct values of a label from the API that the last refresh summed under other, beyond the label's cap.", []string{"project", "source", "window", "label"}, nil)

	statusDescs = []*prometheus.Desc{
		refreshSuccessDesc, lastRefreshDesc, refreshDurationDesc, refreshIntervalDesc, refreshFailuresDesc, pathsDesc, pathsDroppedDesc, labelValuesFoldedDesc,
	}
)

// ViewSource is what the collector reads; the refresh plans implement it.
type ViewSource interface {
	Views() []sources.View
}

// export is one snapshot to export and which of its families.
type export struct {
	key  viewKey
	snap sources.Snapshot
	// fams are indexes into families.
	fams []int
}

// exports decides which snapshot each family is exported from: page
// families from the walk of every page; site families from the newer of
// that walk and the site totals walk of the same window (planned more
// often); families without a window once per project and source, from its
// widest window. Every series is emitted once.
func exports(views []sources.View) []export {
	type group struct{ pages, site *sources.View }
	groups := map[viewKey]*group{}
	var order []viewKey
	widest := map[[2]string]*sources.View{}
	for i := range views {
		v := &views[i]
		if v.Data == nil {
			continue
		}
		k := viewKey{project: v.Project, source: v.Source, window: v.Window}
		g := groups[k]
		if g == nil {
			g = &group{}
			groups[k] = g
			order = append(order, k)
		}
		if v.Scope == sources.ScopeSite {
			g.site = v
			continue
		}
		g.pages = v
		ps := [2]string{v.Project, v.Source}
		if w := widest[ps]; w == nil || v.Data.Meta().DateFrom < w.Data.Meta().DateFrom {
			widest[ps] = v
		}
	}
	var out []export
	for _, k := range order {
		g := groups[k]
		def, ok := sources.ByName(k.source)
		if !ok {
			continue
		}
		siteFrom := g.pages
		if g.site != nil && (g.pages == nil || g.site.Data.Meta().At.After(g.pages.Data.Meta().At)) {
			siteFrom = g.site
		}
		var pageFams, siteFams []int
		for _, f := range def.Families {
			switch {
			case f.PerProject:
				if g.pages != nil && widest[[2]string{k.project, k.source}] == g.pages {
					pageFams = append(pageFams, familyIndex[f])
				}
			case f.Pages:
				if g.pages != nil {
					pageFams = append(pageFams, familyIndex[f])
				}
			case siteFrom == g.pages:
				pageFams = append(pageFams, familyIndex[f])
			default:
				siteFams = append(siteFams, familyIndex[f])
			}
		}
		if g.pages != nil && len(pageFams) > 0 {
			out = append(out, export{key: k.with(sources.ScopePages), snap: g.pages.Data, fams: pageFams})
		}
		if g.site != nil && len(siteFams) > 0 {
			out = append(out, export{key: k.with(sources.ScopeSite), snap: g.site.Data, fams: siteFams})
		}
	}
	return out
}

// Analytics is a prometheus.Collector exporting the snapshots of a
// ViewSource: their data, their refresh status, or both.
type Analytics struct {
	src    ViewSource
	logger log.Logger
	// status: the refresh status series; data: the data families.
	status, data bool
}

// NewAnalytics returns a collector of src's snapshots: status and data.
func NewAnalytics(src ViewSource, logger log.Logger) *Analytics {
	return newAnalytics(src, logger, true, true)
}

// NewStatus returns a collector of the status series of src's snapshots
// only, for a registry whose handler writes the data families from an
// Encoded cache (internal/exposition).
func NewStatus(src ViewSource, logger log.Logger) *Analytics {
	return newAnalytics(src, logger, true, false)
}

func newAnalytics(src ViewSource, logger log.Logger, status, data bool) *Analytics {
	return &Analytics{src: src, logger: cmp.Or[log.Logger](logger, log.NewNopLogger()), status: status, data: data}
}

// Describe implements prometheus.Collector.
func (a *Analytics) Describe(ch chan<- *prometheus.Desc) {
	if a.data {
		for _, f := range allFamilies {
			ch <- f.Desc()
		}
	}
	if a.status {
		for _, d := range statusDescs {
			ch <- d
		}
	}
}

// Collect implements prometheus.Collector. It only reads snapshots: no I/O,
// no waiting on refreshes.
//
// Per project, source, window and scope it always emits refresh_success,
// refresh_duration once a refresh has finished, last_refresh_timestamp
// once one has succeeded (omitted, not 0, before that: a 0 would read as a
// 56-year-old snapshot) and the planned interval. The data series come
// from the snapshots the plan says to serve, and vanish with them.
func (a *Analytics) Collect(ch chan<- prometheus.Metric) {
	views := a.src.Views()
	if a.status {
		for _, v := range views {
			lv := []string{v.Project, v.Source, v.Window, v.Scope}
			a.gauge(ch, refreshSuccessDesc, boolFloat(v.OK), lv...)
			if v.Attempted {
				a.gauge(ch, refreshDurationDesc, v.Duration.Seconds(), lv...)
			}
			a.metric(ch, refreshFailuresDesc, prometheus.CounterValue, float64(v.Failures), lv...)
			if v.Interval > 0 {
				a.gauge(ch, refreshIntervalDesc, v.Interval.Seconds(), lv...)
			}
			if !v.LastSuccess.IsZero() {
				a.gauge(ch, lastRefreshDesc, float64(v.LastSuccess.UnixNano())/1e9, lv...)
			}
			if t, ok := v.Data.(*sources.TrafficSnapshot); ok && v.Scope == sources.ScopePages && t.Paths != nil {
				a.gauge(ch, pathsDesc, float64(len(t.Paths)), v.Project, v.Source, v.Window)
				a.gauge(ch, pathsDroppedDesc, float64(t.Dropped), v.Project, v.Source, v.Window)
			}
			if f, ok := v.Data.(sources.FoldReporter); ok && v.Scope == sources.ScopePages {
				for _, x := range f.FoldedValues() {
					a.gauge(ch, labelValuesFoldedDesc, float64(x.Values), v.Project, v.Source, v.Window, x.Label)
				}
			}
		}
	}
	if !a.data {
		return
	}
	for _, x := range exports(views) {
		for _, i := range x.fams {
			f := allFamilies[i]
			f.Emit(x.snap, x.key.project, x.key.window, func(value float64, lv ...string) { a.gauge(ch, f.Desc(), value, lv...) })
		}
	}
}

// gauge emits one const gauge. Label values are valid UTF-8 by construction
// (snapshots sanitise them), so the error cannot happen; if it ever did,
// the series is skipped rather than panicking inside Gather or turning the
// whole scrape into an error.
func (a *Analytics) gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, val float64, labelValues ...string) {
	a.metric(ch, d, prometheus.GaugeValue, val, labelValues...)
}

// metric emits one const metric of type vt; see gauge.
func (a *Analytics) metric(ch chan<- prometheus.Metric, d *prometheus.Desc, vt prometheus.ValueType, val float64, labelValues ...string) {
	m, err := prometheus.NewConstMetric(d, vt, val, labelValues...)
	if err != nil {
		level.Error(a.logger).Log("msg", "skipping invalid analytics series", "err", err)
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
