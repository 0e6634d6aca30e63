// Package collector turns analytics snapshots into Prometheus metrics and
// serves /metrics, encoding each snapshot once. It
// does no I/O: internal/refresh walks the API on the analytics budget's
// plan and hands it finished snapshots; this package only reads them and
// says how fresh they are. The mapping from a snapshot to samples is each
// source's own (internal/sources), so that history backfills write the
// very same series.
package collector

import (
	"cmp"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
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

var statusLabels = []string{"project", "source", "window", "scope"}

// statusFamily is one family of the refresh status series, exported per
// view (project, source, window and scope) next to the data.
type statusFamily struct {
	name, help string
	labels     []string
	counter    bool
	desc       *prometheus.Desc
}

// Indexes of statusFamilies.
const (
	stSuccess = iota
	stLastRefresh
	stDuration
	stInterval
	stFailures
	stPaths
	stPathsDropped
	stFolded
)

// statusFamilies are the refresh status families, in stSuccess... order.
var statusFamilies = func() []*statusFamily {
	pw := []string{"project", "source", "window"}
	fs := []*statusFamily{
		{name: "mintlify_analytics_refresh_success", labels: statusLabels,
			help: "1 if the last refresh of this project, source, window and scope succeeded, else 0."},
		{name: "mintlify_analytics_last_refresh_timestamp_seconds", labels: statusLabels,
			help: "Unix time of the last successful refresh: the age of the data exported."},
		{name: "mintlify_analytics_refresh_duration_seconds", labels: statusLabels,
			help: "How long the last refresh took, pages and retries included."},
		{name: "mintlify_analytics_refresh_interval_seconds", labels: statusLabels,
			help: "Planned interval between two refreshes, as the analytics budget pays for it."},
		{name: "mintlify_analytics_refresh_failures_total", labels: statusLabels, counter: true,
			help: "Refreshes that failed: API errors, page or cursor loops that did not end, budget waits cut short."},
		{name: "mintlify_analytics_paths", labels: pw,
			help: "Paths exported for this project, source and window, after the path filters and cap."},
		{name: "mintlify_analytics_paths_dropped", labels: pw,
			help: "Paths the API reported that the path filters or cap left out."},
		{name: "mintlify_analytics_label_values_folded", labels: []string{"project", "source", "window", "label"},
			help: "Distinct values of a label from the API that the last refresh summed under other, beyond the label's cap."},
	}
	for _, f := range fs {
		f.desc = prometheus.NewDesc(f.name, f.help, f.labels, nil)
	}
	return fs
}()

var (
	refreshSuccessDesc  = statusFamilies[stSuccess].desc
	lastRefreshDesc     = statusFamilies[stLastRefresh].desc
	refreshDurationDesc = statusFamilies[stDuration].desc
	refreshIntervalDesc = statusFamilies[stInterval].desc
	pathsDesc           = statusFamilies[stPaths].desc
	pathsDroppedDesc    = statusFamilies[stPathsDropped].desc

	statusDescs = func() []*prometheus.Desc {
		out := make([]*prometheus.Desc, len(statusFamilies))
		for i, f := range statusFamilies {
			out[i] = f.desc
		}
		return out
	}()
)

// statusRow is what the status series of one view show: comparable, so
// that a cache of their encoding knows when it is out of date.
type statusRow struct {
	project, source, window, scope string
	attempted, ok                  bool
	duration, interval             time.Duration
	failures                       int
	lastSuccess                    int64 // Unix nanoseconds; 0 before a success
	hasPaths                       bool
	paths, dropped                 int
	// folded are the snapshot's sources.FoldReporter counts (an array, so
	// that the row stays comparable); nFolded of them are set.
	folded  [maxFoldedLabels]sources.Folded
	nFolded int
}

// maxFoldedLabels bounds the labels of one source whose values are folded
// (the assistant folds four).
const maxFoldedLabels = 8

func statusRowOf(v *sources.View) statusRow {
	r := statusRow{project: v.Project, source: v.Source, window: v.Window, scope: v.Scope,
		attempted: v.Attempted, ok: v.OK, duration: v.Duration, interval: v.Interval, failures: v.Failures}
	if !v.LastSuccess.IsZero() {
		r.lastSuccess = v.LastSuccess.UnixNano()
	}
	if t, ok := v.Data.(*sources.TrafficSnapshot); ok && v.Scope == sources.ScopePages && t.Paths != nil {
		r.hasPaths, r.paths, r.dropped = true, len(t.Paths), t.Dropped
	}
	if f, ok := v.Data.(sources.FoldReporter); ok && v.Scope == sources.ScopePages {
		r.nFolded = copy(r.folded[:], f.FoldedValues())
	}
	return r
}

func statusRows(views []sources.View) []statusRow {
	out := make([]statusRow, len(views))
	for i := range views {
		out[i] = statusRowOf(&views[i])
	}
	return out
}

// emit calls fn once per status series of the row, with the index of its
// family in statusFamilies and its label values.
//
// Per project, source, window and scope it always emits refresh_success,
// refresh_duration once a refresh has finished, last_refresh_timestamp
// once one has succeeded (omitted, not 0, before that: a 0 would read as a
// 56-year-old snapshot) and the planned interval.
func (r *statusRow) emit(fn func(family int, value float64, labelValues ...string)) {
	lv := [4]string{r.project, r.source, r.window, r.scope}
	fn(stSuccess, boolFloat(r.ok), lv[:]...)
	if r.attempted {
		fn(stDuration, r.duration.Seconds(), lv[:]...)
	}
	fn(stFailures, float64(r.failures), lv[:]...)
	if r.interval > 0 {
		fn(stInterval, r.interval.Seconds(), lv[:]...)
	}
	if r.lastSuccess != 0 {
		fn(stLastRefresh, float64(r.lastSuccess)/1e9, lv[:]...)
	}
	if r.hasPaths {
		fn(stPaths, float64(r.paths), lv[:3]...)
		fn(stPathsDropped, float64(r.dropped), lv[:3]...)
	}
	for _, f := range r.folded[:r.nFolded] {
		fn(stFolded, float64(f.Values), r.project, r.source, r.window, f.Label)
	}
}

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
	g := groupViews(views)
	var out []export
	for _, k := range g.order {
		def, ok := sources.ByName(k.source)
		if !ok {
			continue
		}
		vg := g.groups[k]
		pageFams, siteFams := vg.families(def, g.widest[[2]string{k.project, k.source}] == vg.pages)
		if vg.pages != nil && len(pageFams) > 0 {
			out = append(out, export{key: k.with(sources.ScopePages), snap: vg.pages.Data, fams: pageFams})
		}
		if vg.site != nil && len(siteFams) > 0 {
			out = append(out, export{key: k.with(sources.ScopeSite), snap: vg.site.Data, fams: siteFams})
		}
	}
	return out
}

// viewGroup is one project, source and window's views with data: the walk
// of every page and the site totals' walk (nil: none).
type viewGroup struct{ pages, site *sources.View }

// viewGroups are the views with data grouped by project, source and
// window, in the order first seen, and the widest window's page walk of
// each project and source.
type viewGroups struct {
	groups map[viewKey]*viewGroup
	order  []viewKey
	widest map[[2]string]*sources.View
}

func groupViews(views []sources.View) viewGroups {
	g := viewGroups{groups: map[viewKey]*viewGroup{}, widest: map[[2]string]*sources.View{}}
	for i := range views {
		v := &views[i]
		if v.Data == nil {
			continue
		}
		k := viewKey{project: v.Project, source: v.Source, window: v.Window}
		vg := g.groups[k]
		if vg == nil {
			vg = &viewGroup{}
			g.groups[k] = vg
			g.order = append(g.order, k)
		}
		if v.Scope == sources.ScopeSite {
			vg.site = v
			continue
		}
		vg.pages = v
		ps := [2]string{v.Project, v.Source}
		if w := g.widest[ps]; w == nil || v.Data.Meta().DateFrom < w.Data.Meta().DateFrom {
			g.widest[ps] = v
		}
	}
	return g
}

// siteFrom is the walk the site families come from: the newer of the two.
func (g *viewGroup) siteFrom() *sources.View {
	if g.site != nil && (g.pages == nil || g.site.Data.Meta().At.After(g.pages.Data.Meta().At)) {
		return g.site
	}
	return g.pages
}

// families are def's families exported from the page walk and from the
// site totals' walk (indexes into families); widest: the page walk is of
// the project and source's widest window, which exports the families
// without a window.
func (g *viewGroup) families(def *sources.Def, widest bool) (pageFams, siteFams []int) {
	siteFrom := g.siteFrom()
	for _, f := range def.Families {
		switch {
		case f.PerProject:
			if g.pages != nil && widest {
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
	return pageFams, siteFams
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
// no waiting on refreshes. The status series are statusRow.emit's; the data
// series come from the snapshots the plan says to serve, and vanish with
// them.
func (a *Analytics) Collect(ch chan<- prometheus.Metric) {
	views := a.src.Views()
	if a.status {
		for i := range views {
			r := statusRowOf(&views[i])
			r.emit(func(fi int, value float64, lv ...string) {
				vt := prometheus.GaugeValue
				if statusFamilies[fi].counter {
					vt = prometheus.CounterValue
				}
				a.metric(ch, statusFamilies[fi].desc, vt, value, lv...)
			})
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
