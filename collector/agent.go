package collector

import (
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Agent job statuses as they appear in the mintlify_agent_jobs gauge. The
// first four are the API's; AgentStatusLost is the exporter's own: the API
// answered 404 for a tracked job several times in a row, so it is no longer
// polled.
const (
	AgentStatusActive    = "active"
	AgentStatusCompleted = "completed"
	AgentStatusFailed    = "failed"
	AgentStatusArchived  = "archived"
	AgentStatusLost      = "lost"
)

// agentGaugeStatuses are always exported, 0 included.
var agentGaugeStatuses = []string{AgentStatusActive, AgentStatusCompleted, AgentStatusFailed, AgentStatusArchived, AgentStatusLost}

// agentTerminalStatuses are the finished_total and duration label values.
var agentTerminalStatuses = []string{AgentStatusCompleted, AgentStatusFailed, AgentStatusArchived}

// Submit rejection reasons (mintlify_agent_job_submit_rejected_total).
const (
	RejectBadRequest           = "bad_request"            // 400: malformed JSON, missing/empty/non-string prompt
	RejectTooLarge             = "too_large"              // 413: body or prompt over --agent.max-prompt-bytes
	RejectUnsupportedMediaType = "unsupported_media_type" // 415: Content-Type is not application/json
	RejectRateLimited          = "rate_limited"           // 429: local create limit, or the API's 429 / Retry-After
	RejectUpstreamError        = "upstream_error"         // the API answered an error, or could not be reached
)

// AgentRejectReasons lists every reason; each is pre-created at 0.
var AgentRejectReasons = []string{RejectBadRequest, RejectTooLarge, RejectUnsupportedMediaType, RejectRateLimited, RejectUpstreamError}

// agentMaxUnknownStatuses bounds how many distinct undocumented statuses one
// project exports; the rest are summed under AgentStatusOther, so an API
// that returns garbage cannot explode cardinality.
const agentMaxUnknownStatuses = 10

// AgentStatusOther collects undocumented statuses beyond agentMaxUnknownStatuses.
const AgentStatusOther = "other"

// AgentProjectJobs is the tracker's view of one project at scrape time.
type AgentProjectJobs struct {
	Project string
	// ByStatus counts tracked jobs by current status: the API's statuses,
	// undocumented statuses as reported, and AgentStatusLost.
	ByStatus map[string]int
	// OldestActive is the createdAt of the oldest job that is not in a
	// terminal status (active or an undocumented status, not lost); zero
	// when there is none.
	OldestActive time.Time
}

// AgentMetrics are the agent job metrics. The gauges are read from the
// tracker's state at scrape time; counters and the histogram are the
// process's own observations (they reset on restart, Prometheus copes).
// Only configured projects ever become label values.
type AgentMetrics struct {
	projects map[string]bool
	state    func() []AgentProjectJobs
	now      func() time.Time

	jobsDesc   *prometheus.Desc
	oldestDesc *prometheus.Desc

	submitted   *prometheus.CounterVec
	finished    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	prs         *prometheus.CounterVec
	lost        *prometheus.CounterVec
	rejected    *prometheus.CounterVec
	writeErrors prometheus.Counter
}

// AgentDurationBuckets are the classic buckets of
// mintlify_agent_job_duration_seconds: 10s to 4h.
var AgentDurationBuckets = []float64{10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400}

// NewAgentMetrics builds the metrics for the configured projects. state is
// called on every scrape and must be cheap and safe for concurrent use; now
// may be nil (time.Now). Register the result with a registry.
func NewAgentMetrics(projects []string, state func() []AgentProjectJobs, now func() time.Time) *AgentMetrics {
	if now == nil {
		now = time.Now
	}
	m := &AgentMetrics{
		projects: map[string]bool{},
		state:    state,
		now:      now,
		jobsDesc: prometheus.NewDesc("mintlify_agent_jobs",
			"Agent jobs tracked by the exporter, by current status. active, completed, failed, archived and lost are always present; "+
				"an undocumented status reported by the API appears as its own value. lost: the API answered 404 for the job, it is no longer polled.",
			[]string{"project", "status"}, nil),
		oldestDesc: prometheus.NewDesc("mintlify_agent_job_oldest_active_age_seconds",
			"Age (now minus createdAt) of the oldest tracked job not yet in a terminal status, 0 when there is none.",
			[]string{"project"}, nil),
		submitted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mintlify_agent_jobs_submitted_total",
			Help: "Agent jobs created upstream through the gateway and persisted as tracked.",
		}, []string{"project"}),
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mintlify_agent_jobs_finished_total",
			Help: "Tracked agent jobs seen reaching a terminal status, counted once per job and status. A completed job archived later " +
				"is counted under completed and again under archived, so sum over status counts terminal transitions; " +
				"jobs already terminal when first seen (tracked after the fact, or before a restart) are not counted.",
		}, []string{"project", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "mintlify_agent_job_duration_seconds",
			Help: "Time from an agent job's createdAt to the first poll that saw it in a terminal status (so up to one poll interval late), " +
				"by that first terminal status.",
			Buckets:                         AgentDurationBuckets,
			NativeHistogramBucketFactor:     1.1,
			NativeHistogramMaxBucketNumber:  100,
			NativeHistogramMinResetDuration: time.Hour,
		}, []string{"project", "status"}),
		prs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mintlify_agent_job_pull_requests_total",
			Help: "Completed agent jobs seen with a pull request (prLink), once per job.",
		}, []string{"project"}),
		lost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mintlify_agent_jobs_lost_total",
			Help: "Tracked agent jobs given up on because the API answered 404 for them repeatedly.",
		}, []string{"project"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mintlify_agent_job_submit_rejected_total",
			Help: "Job submissions the gateway refused, by reason: bad_request, too_large, unsupported_media_type, rate_limited (local or upstream limit), upstream_error.",
		}, []string{"project", "reason"}),
		writeErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mintlify_agent_state_write_errors_total",
			Help: "Failed writes to the agent state file. Jobs whose state could not be written are retried on the next poll; a failed write of a new submission answers 500.",
		}),
	}
	for _, p := range projects {
		m.projects[p] = true
		m.submitted.WithLabelValues(p)
		m.prs.WithLabelValues(p)
		m.lost.WithLabelValues(p)
		for _, s := range agentTerminalStatuses {
			m.finished.WithLabelValues(p, s)
			m.duration.WithLabelValues(p, s)
		}
		for _, r := range AgentRejectReasons {
			m.rejected.WithLabelValues(p, r)
		}
	}
	return m
}

func (m *AgentMetrics) vecs() []prometheus.Collector {
	return []prometheus.Collector{m.submitted, m.finished, m.duration, m.prs, m.lost, m.rejected, m.writeErrors}
}

// Describe implements prometheus.Collector.
func (m *AgentMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.jobsDesc
	ch <- m.oldestDesc
	for _, c := range m.vecs() {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *AgentMetrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.vecs() {
		c.Collect(ch)
	}
	now := m.now()
	byProject := map[string]AgentProjectJobs{}
	if m.state != nil {
		for _, pj := range m.state() {
			if m.projects[pj.Project] {
				byProject[pj.Project] = pj
			}
		}
	}
	projects := make([]string, 0, len(m.projects))
	for p := range m.projects {
		projects = append(projects, p)
	}
	sort.Strings(projects)
	for _, p := range projects {
		pj := byProject[p]
		for status, n := range agentFoldStatuses(pj.ByStatus) {
			ch <- prometheus.MustNewConstMetric(m.jobsDesc, prometheus.GaugeValue, float64(n), p, status)
		}
		age := 0.0
		if !pj.OldestActive.IsZero() {
			age = max(now.Sub(pj.OldestActive).Seconds(), 0)
		}
		ch <- prometheus.MustNewConstMetric(m.oldestDesc, prometheus.GaugeValue, age, p)
	}
}

// agentFoldStatuses returns the counts to export: every always-present status,
// the first agentMaxUnknownStatuses undocumented ones (in name order) and the
// rest summed under AgentStatusOther.
func agentFoldStatuses(by map[string]int) map[string]int {
	out := make(map[string]int, len(agentGaugeStatuses)+len(by))
	for _, s := range agentGaugeStatuses {
		out[s] = by[s]
	}
	var unknown []string
	for s := range by {
		if _, ok := out[s]; !ok {
			unknown = append(unknown, s)
		}
	}
	sort.Strings(unknown)
	for i, s := range unknown {
		if i < agentMaxUnknownStatuses && s != AgentStatusOther {
			out[s] = by[s]
		} else {
			out[AgentStatusOther] += by[s]
		}
	}
	return out
}

// Submitted counts a job created upstream through the gateway.
func (m *AgentMetrics) Submitted(project string) {
	if m.projects[project] {
		m.submitted.WithLabelValues(project).Inc()
	}
}

// Rejected counts a refused submission. Unknown projects are never counted
// (their names are arbitrary client input).
func (m *AgentMetrics) Rejected(project, reason string) {
	if m.projects[project] {
		m.rejected.WithLabelValues(project, reason).Inc()
	}
}

// Finished counts a job seen reaching a terminal status. observe says
// whether d (createdAt to this poll) goes into the duration histogram: only
// for the first terminal status of a job with a known createdAt.
func (m *AgentMetrics) Finished(project, status string, d time.Duration, observe bool) {
	if !m.projects[project] {
		return
	}
	m.finished.WithLabelValues(project, status).Inc()
	if observe {
		m.duration.WithLabelValues(project, status).Observe(max(d.Seconds(), 0))
	}
}

// PullRequest counts a completed job with a prLink.
func (m *AgentMetrics) PullRequest(project string) {
	if m.projects[project] {
		m.prs.WithLabelValues(project).Inc()
	}
}

// Lost counts a job given up on after repeated 404s.
func (m *AgentMetrics) Lost(project string) {
	if m.projects[project] {
		m.lost.WithLabelValues(project).Inc()
	}
}

// StateWriteError counts a failed state file write.
func (m *AgentMetrics) StateWriteError() { m.writeErrors.Inc() }
