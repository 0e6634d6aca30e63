package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"

	"github.com/prometheus/client_golang/prometheus"
)

// The engine's own families (its state, its poll rounds), and the
// families most kinds have (Families), named and described from a few
// words of the kind so that each kind's series mean the same. A kind's
// families are its own (Kind is a prometheus.Collector); the engine's
// collector collects them with its own. Only followed projects ever
// become label values. Gauges are read from the records at scrape time,
// before the counters: an operation is counted before it is shown, so a
// scrape that shows it final shows it counted too.

// PollDelayBuckets are the classic buckets of
// mintlify_agent_poll_delay_seconds: 50ms to 10m.
var PollDelayBuckets = []float64{.05, .25, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600}

// metrics are the engine's families.
type metrics struct {
	e *Engine
	// projects are the label values allowed; addProjects swaps the set.
	projects atomic.Pointer[map[string]bool]

	overdue, interval, replaced, stalled *prometheus.Desc
	delay                                prometheus.Histogram
	writeErrors                          prometheus.Counter
}

func newMetrics(e *Engine) *metrics {
	m := &metrics{e: e,
		overdue: prometheus.NewDesc("mintlify_agent_poll_max_overdue_seconds",
			"How long the most overdue scheduled poll of the project's operations has been due, 0 when none is late.", []string{"project"}, nil),
		interval: prometheus.NewDesc("mintlify_agent_poll_interval_seconds", "The configured poll interval of the operations followed (--agent.poll-interval).", nil, nil),
		replaced: prometheus.NewDesc("mintlify_agent_state_file_replaced",
			"1 while the state file's path no longer names the file the exporter has open (deleted or replaced), else 0.", nil, nil),
		stalled: prometheus.NewDesc("mintlify_agent_state_write_stalled", "1 while a write of the state has been blocked for longer than its timeout, else 0.", nil, nil),
		delay: prometheus.NewHistogram(HistogramOpts("mintlify_agent_poll_delay_seconds",
			"How late each scheduled poll of an operation was sent against its schedule.", PollDelayBuckets)),
		writeErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "mintlify_agent_state_write_errors_total", Help: "Failed writes to the state."}),
	}
	m.projects.Store(&map[string]bool{})
	return m
}

// HistogramOpts are the options of every histogram of the engine and its
// kinds: the classic buckets, and a native one.
func HistogramOpts(name, help string, buckets []float64) prometheus.HistogramOpts {
	return prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets,
		NativeHistogramBucketFactor: 1.1, NativeHistogramMaxBucketNumber: 100, NativeHistogramMinResetDuration: time.Hour}
}

// addProjects allows projects as label values, their series pre-created.
// Callers add projects one call at a time (New, then reloads).
func (m *metrics) addProjects(projects []string) {
	next := maps.Clone(*m.projects.Load())
	for _, p := range projects {
		next[p] = true
	}
	for _, o := range m.e.kinds {
		o.kind.Series(projects, true)
	}
	m.projects.Store(&next)
}

// dropProjects undoes addProjects for projects whose state could not be
// read: they are no label value, and export no series.
func (m *metrics) dropProjects(projects []string) {
	next := maps.Clone(*m.projects.Load())
	for _, p := range projects {
		delete(next, p)
	}
	for _, o := range m.e.kinds {
		o.kind.Series(projects, false)
	}
	m.projects.Store(&next)
}

// Labelled reports whether project is a label value of the kind's series.
func (o *Ops) Labelled(project string) bool { return (*o.e.metrics.projects.Load())[project] }

// Projects are the label values of the kind's series, sorted.
func (o *Ops) Projects() []string { return slices.Sorted(maps.Keys(*o.e.metrics.projects.Load())) }

// On reports whether the kind's routes are on (Config.On).
func (o *Ops) On() bool { return o.e.cfg.On[o.decl.Name] }

// Describe implements prometheus.Collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.overdue, m.interval, m.replaced, m.stalled} {
		ch <- d
	}
	m.delay.Describe(ch)
	m.writeErrors.Describe(ch)
	for _, o := range m.e.kinds {
		o.kind.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	e := m.e
	now := e.cfg.Now()
	overdue := map[string]time.Duration{}
	e.mu.RLock()
	for _, o := range e.kinds {
		for _, en := range o.records {
			// A poll picked by a round but not sent yet is late as well.
			if p, at := en.rec.Base().Project, en.dueAt(e); !at.IsZero() && (en.pending || en.polled(now, &e.cfg)) {
				overdue[p] = max(overdue[p], now.Sub(at))
			}
		}
	}
	e.mu.RUnlock()
	for _, p := range slices.Sorted(maps.Keys(*m.projects.Load())) {
		ch <- prometheus.MustNewConstMetric(m.overdue, prometheus.GaugeValue, max(overdue[p].Seconds(), 0), p)
	}
	ch <- prometheus.MustNewConstMetric(m.interval, prometheus.GaugeValue, e.cfg.PollInterval.Seconds())
	ch <- prometheus.MustNewConstMetric(m.replaced, prometheus.GaugeValue, boolValue(e.store.Replaced()))
	ch <- prometheus.MustNewConstMetric(m.stalled, prometheus.GaugeValue, boolValue(e.store.Stalled()))
	m.delay.Collect(ch)
	m.writeErrors.Collect(ch)
	for _, o := range e.kinds {
		o.kind.Collect(ch)
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Names name and describe a kind's Families.
type Names struct {
	// Stem is the families' name stem ("mintlify_deployment"); Noun names
	// an operation in their help ("deployment"), Requests its requests
	// ("deployment triggers"), and Route the route listing those of
	// unknown outcome ("unknown-triggers").
	Stem, Noun, Requests, Route string
	// Ended is the API's field that says when one ended ("endedAt"). The
	// families' HELP lines must stay within 160 characters
	// (checkHelpLines in internal/e2e): keep the words short.
	Ended string
	// Labels are the kind's labels beside project, Values the label
	// values each series is pre-created for (nil: none).
	Labels []string
	Values [][]string
	// Finals are the final statuses (the status label), success first.
	Finals  []string
	Buckets []float64
}

// Families are the families most kinds have: <stem>s_finished_total and
// <stem>_duration_seconds, the process's own observations by project, the
// kind's labels and final status; and, read from the records at scrape
// time by project and the kind's labels, <stem>s_in_progress,
// <stem>_oldest_in_progress_age_seconds, <stem>_unknown_outcomes and
// <stem>_last_success_timestamp_seconds.
type Families struct {
	n                                        Names
	finished                                 *prometheus.CounterVec
	duration                                 *prometheus.HistogramVec
	inProgress, oldest, unknown, lastSuccess *prometheus.Desc
}

// NewFamilies are the Families named by n.
func NewFamilies(n Names) *Families {
	nouns := string(unicode.ToUpper(rune(n.Noun[0]))) + n.Noun[1:] + "s"
	by := ""
	if len(n.Labels) > 0 {
		by = ", by " + strings.Join(n.Labels, " and ")
	}
	gauge := append([]string{"project"}, n.Labels...)
	final := append(slices.Clone(gauge), "status")
	desc := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(n.Stem+name, help, gauge, nil) }
	return &Families{n: n,
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{Name: n.Stem + "s_finished_total",
			Help: fmt.Sprintf("%s followed by the exporter seen reaching a final status (%s), once each.", nouns, strings.Join(n.Finals, " or "))}, final),
		duration: prometheus.NewHistogramVec(HistogramOpts(n.Stem+"_duration_seconds",
			fmt.Sprintf("Time of each finished %s, from the API's createdAt to its %s, by final status.", n.Noun, n.Ended), n.Buckets), final),
		inProgress: desc("s_in_progress", fmt.Sprintf("%s followed by the exporter that are not final yet (queued ones included)%s.", nouns, by)),
		oldest: desc("_oldest_in_progress_age_seconds",
			fmt.Sprintf("Age, from the API's createdAt, of the oldest %s followed and not final; 0 when none is.", n.Noun)),
		unknown: desc("_unknown_outcomes", fmt.Sprintf("%s%s perhaps sent, answer never recorded (GET .../%s), waiting for an operator.",
			strings.ToUpper(n.Requests[:1]), n.Requests[1:], n.Route)),
		lastSuccess: desc("_last_success_timestamp_seconds",
			fmt.Sprintf("The API's %s of the latest successful %s followed (absent until one is known).", n.Ended, n.Noun)),
	}
}

// each calls fn with the label values (project first) of every series of
// project p.
func (m *Families) each(p string, fn func(lv []string)) {
	values := m.n.Values
	if len(values) == 0 {
		values = [][]string{nil}
	}
	for _, v := range values {
		fn(append([]string{p}, v...))
	}
}

// Series pre-creates (add, when the kind's routes are on) or deletes the
// projects' series.
func (m *Families) Series(projects []string, add, on bool) {
	for _, p := range projects {
		if !add {
			m.finished.DeletePartialMatch(prometheus.Labels{"project": p})
			m.duration.DeletePartialMatch(prometheus.Labels{"project": p})
			continue
		}
		if !on {
			continue
		}
		m.each(p, func(lv []string) {
			for _, s := range m.n.Finals {
				m.finished.WithLabelValues(append(lv, s)...)
				m.duration.WithLabelValues(append(lv, s)...)
			}
		})
	}
}

// Describe sends the families' descriptions.
func (m *Families) Describe(ch chan<- *prometheus.Desc) {
	m.finished.Describe(ch)
	m.duration.Describe(ch)
	for _, d := range []*prometheus.Desc{m.inProgress, m.oldest, m.unknown, m.lastSuccess} {
		ch <- d
	}
}

// Count applies ev of an operation of project (with the kind's label
// values lv), when project is a label value (o.Labelled).
func (m *Families) Count(o *Ops, ev Event, project string, lv ...string) {
	if ev.Finished == "" || !o.Labelled(project) {
		return
	}
	labels := append(append([]string{project}, lv...), ev.Finished)
	m.finished.WithLabelValues(labels...).Inc()
	if ev.Timed {
		m.duration.WithLabelValues(labels...).Observe(max(ev.Duration.Seconds(), 0))
	}
}

// Gauges are one project's operations of a kind (of one value of its
// labels) at scrape time.
type Gauges struct {
	// InProgress counts those not final (queued, running, or an
	// undocumented status), lost ones left out; Unknown the starts of
	// unknown outcome.
	InProgress, Unknown int
	// seen: the project has operations of the kind (of these values).
	seen bool
	// oldest is the createdAt (else when followed) of the oldest not
	// final; lastSuccess the latest end of a success.
	oldest, lastSuccess time.Time
}

// Add counts rec (success: it ended in success, at end) and returns when
// it started.
func (g *Gauges) Add(rec Record, success bool, end time.Time) time.Time {
	g.seen = true
	op := rec.Base()
	started := op.Started()
	switch {
	case !rec.Final():
		g.InProgress++
		if g.oldest.IsZero() || started.Before(g.oldest) {
			g.oldest = started
		}
	case success && !op.Lost && end.After(g.lastSuccess):
		g.lastSuccess = end
	}
	return started
}

// Collect sends the gauges g of project p (and the kind's label values
// lv) as of now, and reports whether it did: always when the kind's routes
// are on, else once the project has operations or unknown outcomes.
func (m *Families) Collect(ch chan<- prometheus.Metric, on bool, g *Gauges, now time.Time, p string, lv ...string) bool {
	if !on && !g.seen && g.Unknown == 0 {
		return false
	}
	labels := append([]string{p}, lv...)
	age := 0.0
	if !g.oldest.IsZero() {
		age = max(now.Sub(g.oldest).Seconds(), 0)
	}
	ch <- prometheus.MustNewConstMetric(m.inProgress, prometheus.GaugeValue, float64(g.InProgress), labels...)
	ch <- prometheus.MustNewConstMetric(m.oldest, prometheus.GaugeValue, age, labels...)
	ch <- prometheus.MustNewConstMetric(m.unknown, prometheus.GaugeValue, float64(g.Unknown), labels...)
	if !g.lastSuccess.IsZero() {
		ch <- prometheus.MustNewConstMetric(m.lastSuccess, prometheus.GaugeValue, float64(g.lastSuccess.UnixMilli())/1000, labels...)
	}
	return true
}

// CollectCounters sends the counters (after every project's gauges).
func (m *Families) CollectCounters(ch chan<- prometheus.Metric) {
	m.finished.Collect(ch)
	m.duration.Collect(ch)
}

// Finished is the log line of ev when it is an operation's end (nil
// otherwise): what ended, with kv, and how long it took when the API said.
func Finished(d *Decl, rec Record, ev Event, kv ...any) []any {
	if ev.Finished == "" {
		return nil
	}
	line := append([]any{"msg", d.What + " finished", "project", rec.Base().Project, d.IDKey, bounded.Label(rec.ID()), "status", ev.Finished}, kv...)
	if ev.Timed {
		line = append(line, "duration", ev.Duration)
	}
	return line
}
