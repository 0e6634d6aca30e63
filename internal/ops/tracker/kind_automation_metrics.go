package tracker

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"
)

// OtherAutomation is the automation label of automations the
// configuration does not name.
const OtherAutomation = "other"

// autoMetrics are the mintlify_automation* families of the engine: runs
// by how they are followed (counted once each when written final: the
// engine's count, an opCounter), and two gauges read at scrape time. The
// trigger counter by result is the gateway's (it sees the requests it
// refuses itself). A run's end is the agent job's, counted by the agent
// job families.
type autoMetrics struct {
	// named are each project's automations named in the configuration
	// (label values), nil: none; on reports whether a project takes
	// automation triggers (its gauges are then exported at 0).
	named func(project string) []string
	on    func(project string) bool

	runs        *prometheus.CounterVec
	pendingDesc *prometheus.Desc
	unknownDesc *prometheus.Desc
}

func newAutoMetrics() *autoMetrics {
	byProject := []string{"project"}
	return &autoMetrics{
		named: func(string) []string { return nil },
		on:    func(string) bool { return false },
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mintlify_automation_runs_total",
			Help: "Automation runs triggered through the gateway, once each: followed as an agent job, or not (get-job does not know it).",
		}, []string{"project", "automation", "follow"}),
		pendingDesc: prometheus.NewDesc("mintlify_automation_runs_pending",
			"Automation runs triggered whose jobId get-job has not answered yet (neither followed as an agent job nor given up).", byProject, nil),
		unknownDesc: prometheus.NewDesc("mintlify_automation_unknown_outcomes",
			"Automation triggers perhaps sent, their answer never recorded (GET .../unknown-triggers), waiting for an operator.", byProject, nil),
	}
}

// configure takes the configuration's automations (Config.Automations).
func (m *autoMetrics) configure(cfg *Config) {
	if cfg.Automations == nil {
		return
	}
	m.on = func(p string) bool { _, on := cfg.Automations(p); return on }
	m.named = func(p string) []string { named, _ := cfg.Automations(p); return named }
}

// AutomationLabel is the automation label of automation in project: its
// id when the configuration names it (named), else OtherAutomation.
func AutomationLabel(named []string, automation string) string {
	if slices.Contains(named, automation) {
		return automation
	}
	return OtherAutomation
}

// addProjects pre-creates the runs series of the automations named.
func (m *autoMetrics) addProjects(projects []string) {
	for _, p := range projects {
		for _, a := range m.named(p) {
			for _, f := range autoFollows {
				m.runs.WithLabelValues(p, a, f)
			}
		}
	}
}

func (m *autoMetrics) dropProjects(projects []string) {
	for _, p := range projects {
		m.runs.DeletePartialMatch(prometheus.Labels{"project": p})
	}
}

func (m *autoMetrics) describe(ch chan<- *prometheus.Desc) {
	m.runs.Describe(ch)
	ch <- m.pendingDesc
	ch <- m.unknownDesc
}

// autoGauges are one project's runs at scrape time.
type autoGauges struct {
	pending, unknown int
}

// collectProject sends project p's gauges: always for a project that
// takes automation triggers, else while it has a run pending or an
// outcome unknown (one of a project a reload took them from).
func (m *autoMetrics) collectProject(ch chan<- prometheus.Metric, p string, g *autoGauges) {
	if !m.on(p) && g.pending == 0 && g.unknown == 0 {
		return
	}
	ch <- prometheus.MustNewConstMetric(m.pendingDesc, prometheus.GaugeValue, float64(g.pending), p)
	ch <- prometheus.MustNewConstMetric(m.unknownDesc, prometheus.GaugeValue, float64(g.unknown), p)
}

// count counts a run whose final follow (ev.finished) was just written;
// lv is its automation id.
func (m *autoMetrics) count(has func(string) bool, ev finishEvent, project string, lv ...string) {
	if ev.finished == "" || !has(project) {
		return
	}
	m.runs.WithLabelValues(project, AutomationLabel(m.named(project), lv[0]), ev.finished).Inc()
}
