package tracker

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
)

var agentTestNow = time.Date(2026, 3, 10, 15, 0, 0, 0, time.UTC)

func newAgentTestMetrics(state []projectJobs) (*metrics, *prometheus.Registry) {
	m := newMetrics([]string{"p1", "p2"}, func() []projectJobs { return state }, func() time.Time { return agentTestNow }, 10*time.Second)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	return m, reg
}

func TestMetricsGolden(t *testing.T) {
	t.Parallel()
	m, reg := newAgentTestMetrics([]projectJobs{
		{project: "p1", byStatus: map[string]int{"active": 2, "completed": 3, "waiting_for_review": 1, "lost": 1}, oldestActive: agentTestNow.Add(-90 * time.Second),
			maxOverdue: 25 * time.Second},
		// Polls ahead of schedule: not late, 0.
		{project: "p2", byStatus: map[string]int{}, maxOverdue: -3 * time.Second},
		// Not configured: must not appear.
		{project: "evil", byStatus: map[string]int{"active": 9}},
	})
	m.submittedJob("p1")
	m.submittedJob("p1")
	m.count("p1", events{finished: apiclient.StatusCompleted, observeDur: true, duration: 42 * time.Second})
	m.count("p1", events{finished: apiclient.StatusArchived}) // archive after completion: counted, not observed
	m.count("p1", events{pr: true})
	m.count("p1", events{lost: true})
	m.messageSent("p1")
	m.pollDelay(3 * time.Second)
	m.pollDelay(-time.Second) // early: observed as 0
	// Unknown projects never become label values.
	m.submittedJob("nope")
	m.messageSent("nope")
	m.count("nope", events{finished: apiclient.StatusFailed, observeDur: true, duration: time.Second, pr: true, lost: true})

	want := `
# HELP mintlify_agent_job_messages_total Follow-up messages sent to agent jobs through the gateway and accepted upstream; each starts a new turn of its job.
# TYPE mintlify_agent_job_messages_total counter
mintlify_agent_job_messages_total{project="p1"} 1
mintlify_agent_job_messages_total{project="p2"} 0
# HELP mintlify_agent_poll_interval_seconds The configured poll interval of active agent jobs (--agent.poll-interval).
# TYPE mintlify_agent_poll_interval_seconds gauge
mintlify_agent_poll_interval_seconds 10
# HELP mintlify_agent_poll_max_overdue_seconds How long the most overdue scheduled poll of the project's tracked jobs has been due, 0 when none is late.
# TYPE mintlify_agent_poll_max_overdue_seconds gauge
mintlify_agent_poll_max_overdue_seconds{project="p1"} 25
mintlify_agent_poll_max_overdue_seconds{project="p2"} 0
# HELP mintlify_agent_job_oldest_active_age_seconds Age of the oldest turn still running among the tracked jobs, 0 when there is none.
# TYPE mintlify_agent_job_oldest_active_age_seconds gauge
mintlify_agent_job_oldest_active_age_seconds{project="p1"} 90
mintlify_agent_job_oldest_active_age_seconds{project="p2"} 0
# HELP mintlify_agent_job_pull_requests_total Completed agent jobs seen with a pull request (prLink), once per job.
# TYPE mintlify_agent_job_pull_requests_total counter
mintlify_agent_job_pull_requests_total{project="p1"} 1
mintlify_agent_job_pull_requests_total{project="p2"} 0
# HELP mintlify_agent_jobs Agent jobs tracked by the exporter, by current status.
# TYPE mintlify_agent_jobs gauge
mintlify_agent_jobs{project="p1",status="active"} 2
mintlify_agent_jobs{project="p1",status="archived"} 0
mintlify_agent_jobs{project="p1",status="completed"} 3
mintlify_agent_jobs{project="p1",status="failed"} 0
mintlify_agent_jobs{project="p1",status="lost"} 1
mintlify_agent_jobs{project="p1",status="waiting_for_review"} 1
mintlify_agent_jobs{project="p2",status="active"} 0
mintlify_agent_jobs{project="p2",status="archived"} 0
mintlify_agent_jobs{project="p2",status="completed"} 0
mintlify_agent_jobs{project="p2",status="failed"} 0
mintlify_agent_jobs{project="p2",status="lost"} 0
# HELP mintlify_agent_jobs_lost_total Tracked agent jobs given up on because the API answered 404 for them repeatedly.
# TYPE mintlify_agent_jobs_lost_total counter
mintlify_agent_jobs_lost_total{project="p1"} 1
mintlify_agent_jobs_lost_total{project="p2"} 0
# HELP mintlify_agent_jobs_submitted_total Agent jobs created upstream through the gateway and persisted as tracked.
# TYPE mintlify_agent_jobs_submitted_total counter
mintlify_agent_jobs_submitted_total{project="p1"} 2
mintlify_agent_jobs_submitted_total{project="p2"} 0
`
	names := []string{"mintlify_agent_jobs", "mintlify_agent_job_oldest_active_age_seconds", "mintlify_agent_jobs_submitted_total",
		"mintlify_agent_job_pull_requests_total", "mintlify_agent_jobs_lost_total", "mintlify_agent_job_messages_total",
		"mintlify_agent_poll_interval_seconds", "mintlify_agent_poll_max_overdue_seconds"}
	if err := promtestutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}

	// finished_total and the histogram: every known label
	// combination is pre-created, no unknown project appears.
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]int{}
	for _, mf := range mfs {
		for _, mt := range mf.GetMetric() {
			var ls []string
			for _, lp := range mt.GetLabel() {
				if lp.GetValue() == "nope" || lp.GetValue() == "evil" {
					t.Errorf("%s has a series for an unconfigured project: %v", mf.GetName(), mt.GetLabel())
				}
				ls = append(ls, lp.GetName()+"="+lp.GetValue())
			}
			series[mf.GetName()]++
			if mf.GetName() == "mintlify_agent_job_duration_seconds" && strings.Join(ls, ",") == "project=p1,status=completed" {
				h := mt.GetHistogram()
				if h.GetSampleCount() != 1 || h.GetSampleSum() != 42 {
					t.Errorf("duration histogram: count %d sum %v, want 1 and 42", h.GetSampleCount(), h.GetSampleSum())
				}
				if len(h.GetBucket()) != len(DurationBuckets) {
					t.Errorf("duration histogram has %d classic buckets, want %d", len(h.GetBucket()), len(DurationBuckets))
				}
			}
			if mf.GetName() == "mintlify_agent_poll_delay_seconds" {
				h := mt.GetHistogram()
				if h.GetSampleCount() != 2 || h.GetSampleSum() != 3 || len(h.GetBucket()) != len(PollDelayBuckets) {
					t.Errorf("poll delay histogram: count %d sum %v buckets %d, want 2, 3 and %d", h.GetSampleCount(), h.GetSampleSum(),
						len(h.GetBucket()), len(PollDelayBuckets))
				}
			}
		}
	}
	for name, want := range map[string]int{
		"mintlify_agent_jobs_finished_total":      2 * 3,
		"mintlify_agent_job_duration_seconds":     2 * 3,
		"mintlify_agent_state_write_errors_total": 1,
	} {
		if series[name] != want {
			t.Errorf("%s: %d series, want %d", name, series[name], want)
		}
	}
	if got := promtestutil.ToFloat64(m.finished.WithLabelValues("p1", apiclient.StatusArchived)); got != 1 {
		t.Errorf("finished archived = %v, want 1", got)
	}

	problems, err := promtestutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func TestMetricsUnknownStatusesBounded(t *testing.T) {
	t.Parallel()
	by := map[string]int{"active": 1}
	for i := range 25 {
		by[fmt.Sprintf("weird_%02d", i)] = 1
	}
	_, reg := newAgentTestMetrics([]projectJobs{{project: "p1", byStatus: by}})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	statuses := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "mintlify_agent_jobs" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range mt.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			if labels["project"] == "p1" {
				statuses[labels["status"]] = mt.GetGauge().GetValue()
			}
		}
	}
	// 5 always-present + 10 unknown + other.
	if len(statuses) != 5+maxUnknownStatuses+1 {
		t.Errorf("got %d status values, want %d: %v", len(statuses), 5+maxUnknownStatuses+1, statuses)
	}
	if statuses[statusOther] != 15 || statuses["weird_00"] != 1 || statuses["active"] != 1 {
		t.Errorf("unexpected values: %v", statuses)
	}
	var sum float64
	for _, v := range statuses {
		sum += v
	}
	if sum != 26 {
		t.Errorf("sum over status = %v, want 26 (folding must not lose jobs)", sum)
	}
}
