package job

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
)

var agentTestNow = time.Date(2026, 3, 10, 15, 0, 0, 0, time.UTC)

// collector collects m for p1 and p2 as state says (projects of state
// not among them are not configured).
type collector struct {
	m     *metrics
	state map[string]*projectJobs
}

func (c collector) Describe(ch chan<- *prometheus.Desc) { c.m.describe(ch) }
func (c collector) Collect(ch chan<- prometheus.Metric) {
	c.m.collect(ch, []string{"p1", "p2"}, func() map[string]*projectJobs {
		for _, p := range []string{"p1", "p2"} {
			if c.state[p] == nil {
				c.state[p] = &projectJobs{byStatus: map[string]int{}}
			}
		}
		return c.state
	}, agentTestNow)
}

func newAgentTestMetrics(state map[string]*projectJobs) (*metrics, *prometheus.Registry) {
	m := newMetrics()
	m.series([]string{"p1", "p2"}, true)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(collector{m, state})
	return m, reg
}

// count is what the engine counts of project's jobs, "nope" not labelled.
func (m *metrics) countIn(project string, ev engine.Event) { m.count(project != "nope", project, ev) }

func TestMetricsGolden(t *testing.T) {
	t.Parallel()
	m, reg := newAgentTestMetrics(map[string]*projectJobs{
		"p1": {byStatus: map[string]int{"active": 2, "completed": 3, "waiting_for_review": 1, "lost": 1}, oldestActive: agentTestNow.Add(-90 * time.Second)},
		// Not configured: must not appear.
		"evil": {byStatus: map[string]int{"active": 9}},
	})
	m.countIn("p1", engine.Event{Mark: markSubmitted})
	m.countIn("p1", engine.Event{Mark: markSubmitted})
	m.countIn("p1", engine.Event{Finished: apiclient.StatusCompleted, Timed: true, Duration: 42 * time.Second})
	m.countIn("p1", engine.Event{Finished: apiclient.StatusArchived}) // archive after completion: counted, not observed
	m.countIn("p1", engine.Event{Mark: markPR})
	m.countIn("p1", engine.Event{Lost: true})
	m.countIn("p1", engine.Event{Mark: markMessage})
	// Unknown projects never become label values.
	m.countIn("nope", engine.Event{Mark: markSubmitted | markMessage | markPR, Finished: apiclient.StatusFailed, Timed: true, Duration: time.Second, Lost: true})

	want := `
# HELP mintlify_agent_job_messages_total Follow-up messages sent to agent jobs through the gateway and accepted upstream; each starts a new turn of its job.
# TYPE mintlify_agent_job_messages_total counter
mintlify_agent_job_messages_total{project="p1"} 1
mintlify_agent_job_messages_total{project="p2"} 0
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
		"mintlify_agent_job_pull_requests_total", "mintlify_agent_jobs_lost_total", "mintlify_agent_job_messages_total"}
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
		}
	}
	for name, want := range map[string]int{
		"mintlify_agent_jobs_finished_total":  2 * 3,
		"mintlify_agent_job_duration_seconds": 2 * 3,
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
	_, reg := newAgentTestMetrics(map[string]*projectJobs{"p1": {byStatus: by}})
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
	if len(statuses) != 5+bounded.MaxUnknownValues+1 {
		t.Errorf("got %d status values, want %d: %v", len(statuses), 5+bounded.MaxUnknownValues+1, statuses)
	}
	if statuses[bounded.Other] != 15 || statuses["weird_00"] != 1 || statuses["active"] != 1 {
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

// TestScrapeCountsWhatItShows: one scrape never shows a job terminal in
// the jobs gauge with its end not yet counted, even when the end lands
// during the scrape: the state is read before the counters. The
// collector's channel is read one metric at a time, each written as it
// arrives (as a registry may), and the end lands while the state is read.
func TestScrapeCountsWhatItShows(t *testing.T) {
	t.Parallel()
	m := newMetrics()
	m.series([]string{"p1"}, true)
	snapshot := func() map[string]*projectJobs {
		// The end is counted, then shown, as the engine does under its
		// lock: this scrape reads it shown.
		m.count(true, "p1", engine.Event{Finished: "failed"})
		return map[string]*projectJobs{"p1": {byStatus: map[string]int{"failed": 1}}}
	}
	ch := make(chan prometheus.Metric)
	go func() {
		m.collect(ch, []string{"p1"}, snapshot, agentTestNow)
		close(ch)
	}()
	var gauge, counter float64 = -1, -1
	for metric := range ch {
		pb := &dto.Metric{}
		if err := metric.Write(pb); err != nil {
			t.Fatal(err)
		}
		failed := false
		for _, lp := range pb.GetLabel() {
			failed = failed || (lp.GetName() == "status" && lp.GetValue() == "failed")
		}
		desc := metric.Desc().String()
		switch {
		case failed && strings.Contains(desc, `"mintlify_agent_jobs_finished_total"`):
			counter = pb.GetCounter().GetValue()
		case failed && strings.Contains(desc, `"mintlify_agent_jobs"`):
			gauge = pb.GetGauge().GetValue()
		}
	}
	if gauge != 1 || counter != 1 {
		t.Errorf("one scrape: mintlify_agent_jobs{status=failed} %v, finished_total{status=failed} %v; want 1 and 1", gauge, counter)
	}
}
