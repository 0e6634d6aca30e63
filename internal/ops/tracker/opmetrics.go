package tracker

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/prometheus/client_golang/prometheus"
)

// The metric families every op kind (opKind) has, named and described
// from a few words of the kind, so that each kind's series mean the same:
// <stem>s_finished_total and <stem>_duration_seconds, the process's own
// observations by project, the kind's labels and final status; and, read
// from the tracker at scrape time by project and the kind's labels,
// <stem>s_in_progress, <stem>_oldest_in_progress_age_seconds,
// <stem>_unknown_outcomes and <stem>_last_success_timestamp_seconds.

// opFamilies names and describes an op kind's families.
type opFamilies struct {
	// stem is the families' name stem ("mintlify_deployment"); noun names
	// an operation in their help ("deployment"), requests its requests
	// ("deployment triggers"), and route the route listing those of
	// unknown outcome ("unknown-triggers").
	stem, noun, requests, route string
	// ended is the API's field that says when one ended ("endedAt"). The
	// families' HELP lines must stay within 160 characters
	// (checkHelpLines in internal/e2e): keep the words short.
	ended string
	// labels are the kind's labels beside project (deployments: kind),
	// values the label values each series is pre-created for (nil: none).
	labels []string
	values [][]string
	// finals are the final statuses (the status label), success first.
	finals  []string
	buckets []float64
}

// opMetrics are an op kind's families (opFamilies).
type opMetrics struct {
	f opFamilies
	// enabled: the kind's routes are on, so every project's series are
	// pre-created (0) rather than born with its first operation.
	enabled bool

	finished                                 *prometheus.CounterVec
	duration                                 *prometheus.HistogramVec
	inProgress, oldest, unknown, lastSuccess *prometheus.Desc
}

// histogramOpts are the options of every histogram of the engine: the
// classic buckets, and a native one.
func histogramOpts(name, help string, buckets []float64) prometheus.HistogramOpts {
	return prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets,
		NativeHistogramBucketFactor: 1.1, NativeHistogramMaxBucketNumber: 100, NativeHistogramMinResetDuration: time.Hour}
}

func newOpMetrics(f opFamilies) *opMetrics {
	nouns := string(unicode.ToUpper(rune(f.noun[0]))) + f.noun[1:] + "s"
	by := ""
	if len(f.labels) > 0 {
		by = ", by " + strings.Join(f.labels, " and ")
	}
	gauge := append([]string{"project"}, f.labels...)
	final := append(append([]string{}, gauge...), "status")
	desc := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(f.stem+name, help, gauge, nil) }
	return &opMetrics{f: f,
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{Name: f.stem + "s_finished_total",
			Help: fmt.Sprintf("%s followed by the exporter seen reaching a final status (%s), once each.", nouns, strings.Join(f.finals, " or "))}, final),
		duration: prometheus.NewHistogramVec(histogramOpts(f.stem+"_duration_seconds",
			fmt.Sprintf("Time of each finished %s, from the API's createdAt to its %s, by final status.", f.noun, f.ended), f.buckets), final),
		inProgress: desc("s_in_progress", fmt.Sprintf("%s followed by the exporter that are not final yet (queued ones included)%s.", nouns, by)),
		oldest: desc("_oldest_in_progress_age_seconds",
			fmt.Sprintf("Age, from the API's createdAt, of the oldest %s followed and not final; 0 when none is.", f.noun)),
		unknown: desc("_unknown_outcomes", fmt.Sprintf("%s%s perhaps sent, answer never recorded (GET .../%s), waiting for an operator.",
			strings.ToUpper(f.requests[:1]), f.requests[1:], f.route)),
		lastSuccess: desc("_last_success_timestamp_seconds",
			fmt.Sprintf("The API's %s of the latest successful %s followed (absent until one is known).", f.ended, f.noun)),
	}
}

// series are the label values (project first) of every series of project
// p, each with its final statuses.
func (m *opMetrics) series(p string, each func(lv []string)) {
	values := m.f.values
	if len(values) == 0 {
		values = [][]string{nil}
	}
	for _, v := range values {
		each(append([]string{p}, v...))
	}
}

// addProjects pre-creates the projects' series (when enabled).
func (m *opMetrics) addProjects(projects []string) {
	if !m.enabled {
		return
	}
	for _, p := range projects {
		m.series(p, func(lv []string) {
			for _, s := range m.f.finals {
				m.finished.WithLabelValues(append(lv, s)...)
				m.duration.WithLabelValues(append(lv, s)...)
			}
		})
	}
}

// dropProjects undoes addProjects.
func (m *opMetrics) dropProjects(projects []string) {
	for _, p := range projects {
		m.finished.DeletePartialMatch(prometheus.Labels{"project": p})
		m.duration.DeletePartialMatch(prometheus.Labels{"project": p})
	}
}

func (m *opMetrics) describe(ch chan<- *prometheus.Desc) {
	m.finished.Describe(ch)
	m.duration.Describe(ch)
	for _, d := range []*prometheus.Desc{m.inProgress, m.oldest, m.unknown, m.lastSuccess} {
		ch <- d
	}
}

// collectVecs sends the instrumented families.
func (m *opMetrics) collectVecs(ch chan<- prometheus.Metric) {
	m.finished.Collect(ch)
	m.duration.Collect(ch)
}

// count applies the event of one persisted change of an operation of
// project with the kind's label values lv; has says whether project is a
// label value.
func (m *opMetrics) count(has func(string) bool, ev finishEvent, project string, lv ...string) {
	if ev.finished == "" || !has(project) {
		return
	}
	labels := append(append([]string{project}, lv...), ev.finished)
	m.finished.WithLabelValues(labels...).Inc()
	if ev.observeDur {
		m.duration.WithLabelValues(labels...).Observe(max(ev.duration.Seconds(), 0))
	}
}

// opGauges are one project's operations of a kind (of one value of its
// labels) at scrape time.
type opGauges struct {
	// inProgress counts those not final (queued, running, or an
	// undocumented status), lost ones left out; unknown the requests of
	// unknown outcome.
	inProgress, unknown int
	// seen: the project has operations of the kind (of these values).
	seen bool
	// oldest is the createdAt (else when followed) of the oldest not
	// final; lastSuccess the latest end of a success.
	oldest, lastSuccess time.Time
}

// add counts an operation (op; final: it will not change; success: it
// ended in success, at end) and returns when it started.
func (g *opGauges) add(op *opState, final, success bool, end time.Time) time.Time {
	g.seen = true
	started := op.CreatedAt
	if started.IsZero() {
		started = op.TrackedAt
	}
	switch {
	case !final:
		g.inProgress++
		if g.oldest.IsZero() || started.Before(g.oldest) {
			g.oldest = started
		}
	case success && !op.Lost && end.After(g.lastSuccess):
		g.lastSuccess = end
	}
	return started
}

// shown reports whether a project's gauges g are sent: always when the
// kind is enabled, else once it has operations or unknown outcomes.
func (m *opMetrics) shown(g *opGauges) bool { return m.enabled || g.seen || g.unknown > 0 }

// collect sends the gauges g of project p (and the kind's label values
// lv) as of now.
func (m *opMetrics) collect(ch chan<- prometheus.Metric, g *opGauges, now time.Time, p string, lv ...string) {
	labels := append([]string{p}, lv...)
	age := 0.0
	if !g.oldest.IsZero() {
		age = max(now.Sub(g.oldest).Seconds(), 0)
	}
	ch <- prometheus.MustNewConstMetric(m.inProgress, prometheus.GaugeValue, float64(g.inProgress), labels...)
	ch <- prometheus.MustNewConstMetric(m.oldest, prometheus.GaugeValue, age, labels...)
	ch <- prometheus.MustNewConstMetric(m.unknown, prometheus.GaugeValue, float64(g.unknown), labels...)
	if !g.lastSuccess.IsZero() {
		ch <- prometheus.MustNewConstMetric(m.lastSuccess, prometheus.GaugeValue, float64(g.lastSuccess.UnixMilli())/1000, labels...)
	}
}
