package tracker

import (
	"maps"
	"sort"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
)

// Statuses of the tracker's own, beside the API's (apiclient.Status*).
const (
	// StatusLost is shown for a job the API answered 404 for several times
	// in a row; it is no longer polled.
	StatusLost = "lost"
	// statusOther collects undocumented statuses beyond maxUnknownStatuses
	// in the jobs gauge.
	statusOther = bounded.Other
)

// gaugeStatuses are always exported, 0 included.
var gaugeStatuses = []string{apiclient.StatusActive, apiclient.StatusCompleted, apiclient.StatusFailed, apiclient.StatusArchived, StatusLost}

// terminalStatuses are the finished_total and duration label values.
var terminalStatuses = []string{apiclient.StatusCompleted, apiclient.StatusFailed, apiclient.StatusArchived}

// maxUnknownStatuses bounds how many distinct undocumented statuses one
// project exports; the rest are summed under statusOther, so an API that
// returns garbage cannot explode cardinality.
const maxUnknownStatuses = bounded.MaxUnknownValues

// DurationBuckets are the classic buckets of
// mintlify_agent_job_duration_seconds: 10s to 4h.
var DurationBuckets = []float64{10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400}

// projectJobs is the tracker's view of one project at scrape time.
type projectJobs struct {
	project string
	// byStatus counts tracked jobs by current status: the API's statuses,
	// undocumented statuses as reported, and StatusLost.
	byStatus map[string]int
	// oldestActive is the createdAt of the oldest job that is not in a
	// terminal status (active or an undocumented status, not lost); zero
	// when there is none.
	oldestActive time.Time
	// unknownCreates counts creates whose outcome is unknown.
	unknownCreates int
	// rebuilt counts jobs whose record state salvage rebuilt.
	rebuilt int
	// maxOverdue is how long the most overdue scheduled poll of the
	// project's jobs and deployments has been due (0 or less: none is
	// late).
	maxOverdue time.Duration
	// deploy are its deployments by kind (addDeployment), with their
	// triggers of unknown outcome.
	deploy map[string]*opGauges
	// export are its static exports (exportGauges.add), with their starts
	// of unknown outcome.
	export exportGauges
	// auto are its automation runs pending and its triggers of unknown
	// outcome.
	auto autoGauges
}

// metrics are the mintlify_agent_* metrics of the tracker. The gauges are
// read from the tracker's state at scrape time; counters and the histogram
// are the process's own observations (they reset on restart, Prometheus
// copes). Only configured projects ever become label values.
type metrics struct {
	// projects are the label values allowed; addProjects swaps the set.
	projects atomic.Pointer[map[string]bool]
	state    func() []projectJobs
	now      func() time.Time

	jobsDesc     *prometheus.Desc
	foldedDesc   *prometheus.Desc
	oldestDesc   *prometheus.Desc
	unknownDesc  *prometheus.Desc
	overdueDesc  *prometheus.Desc
	intervalDesc *prometheus.Desc
	pollInterval time.Duration
	// file reads the state file's health at scrape time; nil reads 0s.
	file         func() fileHealth
	replacedDesc *prometheus.Desc
	stalledDesc  *prometheus.Desc
	rebuiltDesc  *prometheus.Desc

	submitted   *prometheus.CounterVec
	finished    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	prs         *prometheus.CounterVec
	lost        *prometheus.CounterVec
	messages    *prometheus.CounterVec
	delay       prometheus.Histogram
	writeErrors prometheus.Counter
	// deploy are the deployments' families (kind_deployment.go).
	deploy *opMetrics
	// export are the static exports' families (kind_export.go).
	export *exportMetrics
	// auto are the automations' families (kind_automation.go).
	auto *autoMetrics
}

// PollDelayBuckets are the classic buckets of
// mintlify_agent_poll_delay_seconds: 50ms to 10m.
var PollDelayBuckets = []float64{.05, .25, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600}

// newMetrics builds the metrics for the configured projects. state is
// called on every scrape and must be cheap and safe for concurrent use.
func newMetrics(projects []string, state func() []projectJobs, now func() time.Time, pollInterval time.Duration) *metrics {
	m := &metrics{
		state:        state,
		now:          now,
		pollInterval: pollInterval,
		overdueDesc: prometheus.NewDesc("mintlify_agent_poll_max_overdue_seconds",
			"How long the most overdue scheduled poll of the project's tracked jobs has been due, 0 when none is late.",
			[]string{"project"}, nil),
		replacedDesc: prometheus.NewDesc("mintlify_agent_state_file_replaced",
			"1 while the agent state file's path no longer names the file the exporter has open (deleted or replaced), else 0.", nil, nil),
		rebuiltDesc: prometheus.NewDesc("mintlify_agent_state_unreadable_records",
			"Tracked jobs whose unreadable state record state salvage rebuilt from the job's id, losing its idempotency keys.",
			[]string{"project"}, nil),
		stalledDesc: prometheus.NewDesc("mintlify_agent_state_write_stalled",
			"1 while an agent state file write has been blocked for longer than its timeout, else 0.", nil, nil),
		intervalDesc: prometheus.NewDesc("mintlify_agent_poll_interval_seconds",
			"The configured poll interval of active agent jobs (--agent.poll-interval).", nil, nil),
		jobsDesc: prometheus.NewDesc("mintlify_agent_jobs",
			"Agent jobs tracked by the exporter, by current status.",
			[]string{"project", "status"}, nil),
		foldedDesc: prometheus.NewDesc("mintlify_agent_job_statuses_folded",
			"Distinct undocumented job statuses from the API summed under other in mintlify_agent_jobs, beyond its cap.",
			[]string{"project"}, nil),
		oldestDesc: prometheus.NewDesc("mintlify_agent_job_oldest_active_age_seconds",
			"Age of the oldest turn still running among the tracked jobs, 0 when there is none.",
			[]string{"project"}, nil),
		// A gauge, not a counter: it is how many such creates wait for an
		// operator now, and it falls when they are resolved or dismissed,
		// which is what clears the alert.
		unknownDesc: prometheus.NewDesc("mintlify_agent_create_unknown_outcomes",
			"Job creates that may have reached the API but whose outcome was never recorded, waiting for an operator.",
			[]string{"project"}, nil),
		submitted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mintlify_agent_jobs_submitted_total",
			Help: "Agent jobs created upstream through the gateway and persisted as tracked.",
		}, []string{"project"}),
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mintlify_agent_jobs_finished_total",
			Help: "Turns of tracked agent jobs seen reaching a terminal status, once per turn and status.",
		}, []string{"project", "status"}),
		duration: prometheus.NewHistogramVec(histogramOpts("mintlify_agent_job_duration_seconds",
			"Duration of each turn of an agent job until a poll saw it end, by its first terminal status.", DurationBuckets), []string{"project", "status"}),
		prs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mintlify_agent_job_pull_requests_total",
			Help: "Completed agent jobs seen with a pull request (prLink), once per job.",
		}, []string{"project"}),
		lost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mintlify_agent_jobs_lost_total",
			Help: "Tracked agent jobs given up on because the API answered 404 for them repeatedly.",
		}, []string{"project"}),
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mintlify_agent_job_messages_total",
			Help: "Follow-up messages sent to agent jobs through the gateway and accepted upstream; each starts a new turn of its job.",
		}, []string{"project"}),
		delay: prometheus.NewHistogram(histogramOpts("mintlify_agent_poll_delay_seconds",
			"How late each scheduled poll of a tracked job was sent against its schedule.", PollDelayBuckets)),
		writeErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mintlify_agent_state_write_errors_total",
			Help: "Failed writes to the agent state file.",
		}),
	}
	m.deploy = newDeployMetrics()
	m.export = newExportMetrics()
	m.auto = newAutoMetrics()
	m.projects.Store(&map[string]bool{})
	m.addProjects(projects)
	return m
}

// addProjects allows projects as label values, their series at 0. Callers
// add projects one call at a time (New, then reloads).
func (m *metrics) addProjects(projects []string) {
	next := maps.Clone(*m.projects.Load())
	m.deploy.addProjects(projects)
	m.export.addProjects(projects)
	m.auto.addProjects(projects)
	for _, p := range projects {
		next[p] = true
		m.submitted.WithLabelValues(p)
		m.prs.WithLabelValues(p)
		m.lost.WithLabelValues(p)
		m.messages.WithLabelValues(p)
		for _, s := range terminalStatuses {
			m.finished.WithLabelValues(p, s)
			m.duration.WithLabelValues(p, s)
		}
	}
	m.projects.Store(&next)
}

// dropProjects undoes addProjects for projects whose jobs could not be
// read: they are no label value, and export no series.
func (m *metrics) dropProjects(projects []string) {
	next := maps.Clone(*m.projects.Load())
	m.deploy.dropProjects(projects)
	m.export.dropProjects(projects)
	m.auto.dropProjects(projects)
	for _, p := range projects {
		delete(next, p)
		for _, v := range []*prometheus.CounterVec{m.submitted, m.prs, m.lost, m.messages} {
			v.DeleteLabelValues(p)
		}
		for _, s := range terminalStatuses {
			m.finished.DeleteLabelValues(p, s)
			m.duration.DeleteLabelValues(p, s)
		}
	}
	m.projects.Store(&next)
}

// has reports whether project is a label value.
func (m *metrics) has(project string) bool { return (*m.projects.Load())[project] }

func (m *metrics) vecs() []prometheus.Collector {
	return []prometheus.Collector{m.submitted, m.finished, m.duration, m.prs, m.lost, m.messages, m.delay, m.writeErrors}
}

// Describe implements prometheus.Collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.jobsDesc
	ch <- m.foldedDesc
	ch <- m.oldestDesc
	ch <- m.unknownDesc
	ch <- m.overdueDesc
	ch <- m.intervalDesc
	ch <- m.replacedDesc
	ch <- m.stalledDesc
	ch <- m.rebuiltDesc
	for _, c := range m.vecs() {
		c.Describe(ch)
	}
	m.deploy.describe(ch)
	m.export.describe(ch)
	m.auto.describe(ch)
}

// Collect implements prometheus.Collector.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	now := m.now()
	allowed := *m.projects.Load()
	byProject := map[string]projectJobs{}
	for _, pj := range m.state() {
		if allowed[pj.project] {
			byProject[pj.project] = pj
		}
	}
	// The counters after the state: a terminal status is counted before
	// it is shown (Tracker.applyJob), so a scrape whose jobs gauge shows
	// it shows it counted too.
	for _, c := range m.vecs() {
		c.Collect(ch)
	}
	m.deploy.collectVecs(ch)
	m.export.collectVecs(ch)
	m.auto.runs.Collect(ch)
	projects := make([]string, 0, len(allowed))
	for p := range allowed {
		projects = append(projects, p)
	}
	sort.Strings(projects)
	for _, p := range projects {
		pj := byProject[p]
		statuses, folded := foldStatuses(pj.byStatus)
		for status, n := range statuses {
			ch <- prometheus.MustNewConstMetric(m.jobsDesc, prometheus.GaugeValue, float64(n), p, status)
		}
		ch <- prometheus.MustNewConstMetric(m.foldedDesc, prometheus.GaugeValue, float64(folded), p)
		age := 0.0
		if !pj.oldestActive.IsZero() {
			age = max(now.Sub(pj.oldestActive).Seconds(), 0)
		}
		ch <- prometheus.MustNewConstMetric(m.oldestDesc, prometheus.GaugeValue, age, p)
		ch <- prometheus.MustNewConstMetric(m.unknownDesc, prometheus.GaugeValue, float64(pj.unknownCreates), p)
		ch <- prometheus.MustNewConstMetric(m.overdueDesc, prometheus.GaugeValue, max(pj.maxOverdue.Seconds(), 0), p)
		ch <- prometheus.MustNewConstMetric(m.rebuiltDesc, prometheus.GaugeValue, float64(pj.rebuilt), p)
		m.collectDeployments(ch, p, &pj, now)
		m.export.collectProject(ch, p, &pj.export, now)
		m.auto.collectProject(ch, p, &pj.auto)
	}
	ch <- prometheus.MustNewConstMetric(m.intervalDesc, prometheus.GaugeValue, m.pollInterval.Seconds())
	var h fileHealth
	if m.file != nil {
		h = m.file()
	}
	ch <- prometheus.MustNewConstMetric(m.replacedDesc, prometheus.GaugeValue, boolValue(h.replaced))
	ch <- prometheus.MustNewConstMetric(m.stalledDesc, prometheus.GaugeValue, boolValue(h.stalled))
}

// fileHealth is what the metrics show of the state file.
type fileHealth struct{ replaced, stalled bool }

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// foldStatuses returns the counts to export: statuses made bounded label
// values (bounded.Label: a 1 MB status is cut with a hash suffix), every
// always-present status, the maxUnknownStatuses largest undocumented ones
// (ties in name order) and the rest summed under statusOther
// (bounded.Fold, the analytics sources' rule); folded is how many distinct
// statuses were summed.
func foldStatuses(by map[string]int) (out map[string]int, folded int) {
	labelled := make(map[string]int, min(len(by), 1024))
	for s, n := range by {
		labelled[bounded.Label(s)] += n
	}
	return bounded.Fold(labelled, gaugeStatuses, maxUnknownStatuses)
}

// count applies the events of one persisted state change.
func (m *metrics) count(project string, ev events) {
	if !m.has(project) {
		return
	}
	if ev.finished != "" {
		m.finished.WithLabelValues(project, ev.finished).Inc()
		if ev.observeDur {
			m.duration.WithLabelValues(project, ev.finished).Observe(max(ev.duration.Seconds(), 0))
		}
	}
	if ev.pr {
		m.prs.WithLabelValues(project).Inc()
	}
	if ev.lost {
		m.lost.WithLabelValues(project).Inc()
	}
}

// submittedJob counts a job created upstream through the gateway.
func (m *metrics) submittedJob(project string) {
	if m.has(project) {
		m.submitted.WithLabelValues(project).Inc()
	}
}

// stateWriteError counts a failed state file write.
func (m *metrics) stateWriteError() { m.writeErrors.Inc() }

// messageSent counts a follow-up accepted upstream.
func (m *metrics) messageSent(project string) {
	if m.has(project) {
		m.messages.WithLabelValues(project).Inc()
	}
}

// pollDelay observes how late a scheduled poll was sent.
func (m *metrics) pollDelay(d time.Duration) { m.delay.Observe(max(d.Seconds(), 0)) }
