package tracker

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
)

// DeploymentDurationBuckets are the classic buckets of
// mintlify_deployment_duration_seconds: 10s to 1h.
var DeploymentDurationBuckets = []float64{10, 20, 30, 45, 60, 90, 120, 180, 300, 600, 1200, 3600}

// deployFinalStatuses are the status label values of the finished and
// duration series.
var deployFinalStatuses = []string{apiclient.DeploymentSuccess, apiclient.DeploymentFailure}

// deployKindState is one project's deployments of one kind at scrape
// time.
type deployKindState struct {
	// inProgress counts those not final (queued, in progress, or an
	// undocumented status), lost ones left out.
	inProgress int
	// oldest is the createdAt (else when followed) of the oldest of them.
	oldest time.Time
	// lastSuccess is the latest endedAt of a success followed.
	lastSuccess time.Time
}

// deployMetrics are the mintlify_deployment* families: two instrumented
// vecs (the process's own observations, from zero in a new process) and
// three gauges read from the tracker's state at scrape time.
type deployMetrics struct {
	// enabled: the deployment gateway is on, so every project's series
	// are pre-created (0) rather than born with the first deployment.
	enabled bool

	finished        *prometheus.CounterVec
	duration        *prometheus.HistogramVec
	inProgressDesc  *prometheus.Desc
	lastSuccessDesc *prometheus.Desc
	oldestDesc      *prometheus.Desc
	unknownDesc     *prometheus.Desc
}

func newDeployMetrics(enabled bool) *deployMetrics {
	return &deployMetrics{
		enabled: enabled,
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mintlify_deployments_finished_total",
			Help: "Deployments followed by the exporter seen reaching a final status (success or failure), once each.",
		}, []string{"project", "kind", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:                            "mintlify_deployment_duration_seconds",
			Help:                            "Build time of each finished deployment, from the API's createdAt to its endedAt, by final status.",
			Buckets:                         DeploymentDurationBuckets,
			NativeHistogramBucketFactor:     1.1,
			NativeHistogramMaxBucketNumber:  100,
			NativeHistogramMinResetDuration: time.Hour,
		}, []string{"project", "kind", "status"}),
		inProgressDesc: prometheus.NewDesc("mintlify_deployments_in_progress",
			"Deployments followed by the exporter that are not final yet (queued ones included), by kind.",
			[]string{"project", "kind"}, nil),
		lastSuccessDesc: prometheus.NewDesc("mintlify_deployment_last_success_timestamp_seconds",
			"The API's endedAt of the latest successful deployment the exporter followed (absent until one is known).",
			[]string{"project", "kind"}, nil),
		oldestDesc: prometheus.NewDesc("mintlify_deployment_oldest_in_progress_age_seconds",
			"Age, from the API's createdAt, of the oldest followed deployment not yet final; 0 when there is none.",
			[]string{"project", "kind"}, nil),
		unknownDesc: prometheus.NewDesc("mintlify_deployment_unknown_outcomes",
			"Deployment triggers perhaps sent, their answer never recorded (GET .../unknown-triggers), waiting for an operator.",
			[]string{"project", "kind"}, nil),
	}
}

// addProjects pre-creates the projects' series (when enabled).
func (m *deployMetrics) addProjects(projects []string) {
	if !m.enabled {
		return
	}
	for _, p := range projects {
		for _, k := range DeploymentKinds {
			for _, s := range deployFinalStatuses {
				m.finished.WithLabelValues(p, k, s)
				m.duration.WithLabelValues(p, k, s)
			}
		}
	}
}

// dropProjects undoes addProjects.
func (m *deployMetrics) dropProjects(projects []string) {
	for _, p := range projects {
		m.finished.DeletePartialMatch(prometheus.Labels{"project": p})
		m.duration.DeletePartialMatch(prometheus.Labels{"project": p})
	}
}

func (m *deployMetrics) describe(ch chan<- *prometheus.Desc) {
	m.finished.Describe(ch)
	m.duration.Describe(ch)
	ch <- m.inProgressDesc
	ch <- m.lastSuccessDesc
	ch <- m.oldestDesc
	ch <- m.unknownDesc
}

// collectVecs sends the instrumented families.
func (m *deployMetrics) collectVecs(ch chan<- prometheus.Metric) {
	m.finished.Collect(ch)
	m.duration.Collect(ch)
}

// collectProject sends the gauges of project p as of now.
func (m *deployMetrics) collectProject(ch chan<- prometheus.Metric, p string, pj *projectJobs, now time.Time) {
	for _, k := range DeploymentKinds {
		st, ok := pj.deploy[k]
		if !ok && !m.enabled && pj.unknownTriggers[k] == 0 {
			continue
		}
		age := 0.0
		if !st.oldest.IsZero() {
			age = max(now.Sub(st.oldest).Seconds(), 0)
		}
		ch <- prometheus.MustNewConstMetric(m.inProgressDesc, prometheus.GaugeValue, float64(st.inProgress), p, k)
		ch <- prometheus.MustNewConstMetric(m.oldestDesc, prometheus.GaugeValue, age, p, k)
		ch <- prometheus.MustNewConstMetric(m.unknownDesc, prometheus.GaugeValue, float64(pj.unknownTriggers[k]), p, k)
		if !st.lastSuccess.IsZero() {
			ch <- prometheus.MustNewConstMetric(m.lastSuccessDesc, prometheus.GaugeValue, float64(st.lastSuccess.UnixMilli())/1000, p, k)
		}
	}
}

// count applies the event of one persisted deployment change; has says
// whether project is a label value.
func (m *deployMetrics) count(has func(string) bool, project, kind string, ev deployEvent) {
	if ev.finished == "" || !has(project) {
		return
	}
	m.finished.WithLabelValues(project, kind, ev.finished).Inc()
	if ev.observeDur {
		m.duration.WithLabelValues(project, kind, ev.finished).Observe(max(ev.duration.Seconds(), 0))
	}
}

// addDeployment adds e to the scrape-time state of its project.
func (pj *projectJobs) addDeployment(e *deployEntry) {
	if pj.deploy == nil {
		pj.deploy = map[string]deployKindState{}
	}
	r := &e.rec
	st := pj.deploy[r.Kind]
	switch {
	case !r.final():
		st.inProgress++
		c := r.CreatedAt
		if c.IsZero() {
			c = r.TrackedAt
		}
		if st.oldest.IsZero() || c.Before(st.oldest) {
			st.oldest = c
		}
	case r.Status == apiclient.DeploymentSuccess && !r.Lost && r.EndedAt.After(st.lastSuccess):
		st.lastSuccess = r.EndedAt
	}
	pj.deploy[r.Kind] = st
}
