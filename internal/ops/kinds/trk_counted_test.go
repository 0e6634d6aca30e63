package kinds_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

// shownObserver is the tracker's logger: when the tracker logs a job's
// end ("agent job finished", "agent job lost"), the job is shown
// terminal, so it reads the job's view and scrapes the registry there and
// then, as a client of the gateway or Prometheus could at that moment,
// and keeps what it saw.
type shownObserver struct {
	e *env

	mu   sync.Mutex
	seen []string // one line per logged end: what a reader saw
}

func (o *shownObserver) Log(keyvals ...any) error {
	kv := map[string]string{}
	for i := 0; i+1 < len(keyvals); i += 2 {
		kv[fmt.Sprint(keyvals[i])] = fmt.Sprint(keyvals[i+1])
	}
	msg := kv["msg"]
	if msg != "agent job finished" && msg != "agent job lost: the API no longer knows it" {
		return nil
	}
	v, _ := o.e.trk.Job(kv["project"], kv["job"])
	mfs, err := o.e.reg.Gather()
	line := fmt.Sprintf("%s: view %s", msg, v.Status)
	if err != nil {
		line += " gather error " + err.Error()
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			ls := map[string]string{}
			for _, lp := range m.GetLabel() {
				ls[lp.GetName()] = lp.GetValue()
			}
			if ls["project"] != kv["project"] || (ls["status"] != "" && ls["status"] != v.Status) {
				continue
			}
			switch mf.GetName() {
			case "mintlify_agent_jobs", "mintlify_agent_jobs_finished_total", "mintlify_agent_jobs_lost_total":
				line += fmt.Sprintf(", %s %v", mf.GetName(), m.GetGauge().GetValue()+m.GetCounter().GetValue())
			case "mintlify_agent_job_duration_seconds":
				line += fmt.Sprintf(", %s %d", mf.GetName(), m.GetHistogram().GetSampleCount())
			}
		}
	}
	o.mu.Lock()
	o.seen = append(o.seen, line)
	o.mu.Unlock()
	return nil
}

// TestCountedBeforeShown: whoever reads a job terminal reads it counted.
// A poll that sees a job end writes the record, then shows it (Job, Jobs,
// the jobs gauge) and counts it; counted after it was shown, a reader
// between the two saw a failed job with finished_total and the duration's
// count at 0 (TestAgentKill9DuringSecondTurn failed so about once a run).
// The log line of the end comes after the state is shown: the observer
// reads there.
func TestCountedBeforeShown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	obs := &shownObserver{e: e}
	e.reg = prometheus.NewPedanticRegistry()
	trk, err := New(e.client, e.reg, e.config(), obs)
	if err != nil {
		t.Fatal(err)
	}
	e.trk = trk

	failed := e.create("p1", "break #fake:fail:30s")
	lost := e.create("p1", "#fake:pr:1h")
	e.waitStatus("p1", failed.ID, "failed", 5)
	if err := e.fake.ForgetJob("p1", lost.ID); err != nil {
		t.Fatal(err)
	}
	e.waitStatus("p1", lost.ID, StatusLost, 100)

	obs.mu.Lock()
	defer obs.mu.Unlock()
	want := []string{
		"agent job finished: view failed, mintlify_agent_job_duration_seconds 1, mintlify_agent_jobs 1, mintlify_agent_jobs_finished_total 1, mintlify_agent_jobs_lost_total 0",
		"agent job lost: the API no longer knows it: view lost, mintlify_agent_jobs 1, mintlify_agent_jobs_lost_total 1",
	}
	if fmt.Sprint(obs.seen) != fmt.Sprint(want) {
		t.Errorf("what a reader saw when each end was logged:\n got %q\nwant %q", obs.seen, want)
	}
}
