package kinds_test

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

// unreadableStore fails the reads of one bucket while failBucket names it.
type unreadableStore struct {
	stateStore
	failBucket atomic.Pointer[string]
}

func (u *unreadableStore) ForEachIn(bucket string, fn func(key, value []byte) error) error {
	if b := u.failBucket.Load(); b != nil && *b == bucket {
		return fmt.Errorf("read %s: %w", bucket, os.ErrPermission)
	}
	return u.stateStore.ForEachIn(bucket, fn)
}

// TestAddProjectsThatCannotBeReadChangeNothing: when the state of a
// project a reload adds cannot be read (here its follow-up intents, read
// last), AddProjects fails and the tracker is as it was: the project is
// not followed, accepts no job, exports no series and none of its jobs is
// polled. A later AddProjects, with the state readable, follows it and its
// jobs, each once.
func TestAddProjectsThatCannotBeReadChangeNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	// An earlier run had p2, with a job that is still running.
	e.open(e.config("p1", "p2"))
	job := e.create("p2", "#fake:pr:1h")
	// This run starts without p2.
	trk := e.open(e.config("p1"))
	us := &unreadableStore{stateStore: trk.store.get()}
	trk.store.set(us)
	bucket := bucketMessageIntents
	us.failBucket.Store(&bucket)

	err := trk.AddProjects([]string{"p1", "p2"})
	if err == nil || !strings.Contains(err.Error(), "p2") || !strings.Contains(err.Error(), "message intents") {
		t.Fatalf("AddProjects with unreadable state: %v, want an error naming p2 and what could not be read", err)
	}
	if got := trk.Accepts([]string{"p1", "p2"}); len(got) != 1 || got[0] != "p1" {
		t.Errorf("accepts %v after the failure, want [p1]", got)
	}
	if _, ok := trk.Job("p2", job.ID); ok {
		t.Error("p2's job is tracked although its project's state could not be read")
	}
	for k := range e.series("mintlify_agent_jobs_submitted_total") {
		if strings.Contains(k, "p2") {
			t.Errorf("series %s of a project that is not followed", k)
		}
	}
	for _, p := range rowsOf[statusProject](trk.Status(), "projects") {
		if p.Project == "p2" {
			t.Error("the status page lists p2")
		}
	}
	polls := e.fake.Requests(fakeapi.GetJob)
	e.tick()
	if n := e.fake.Requests(fakeapi.GetJob) - polls; n != 0 {
		t.Errorf("%d polls after the failed AddProjects, want none (p1 has no job)", n)
	}

	us.failBucket.Store(nil)
	if err := trk.AddProjects([]string{"p1", "p2"}); err != nil {
		t.Fatalf("AddProjects with the state readable: %v", err)
	}
	if got := trk.Accepts([]string{"p2"}); len(got) != 1 {
		t.Errorf("accepts %v, want [p2]", got)
	}
	polls = e.fake.Requests(fakeapi.GetJob)
	e.tick()
	if v, ok := trk.Job("p2", job.ID); !ok || v.Status != "active" || e.fake.Requests(fakeapi.GetJob)-polls != 1 {
		t.Errorf("p2's job %+v (tracked %v), %d polls; want it active, polled once", v, ok, e.fake.Requests(fakeapi.GetJob)-polls)
	}
	e.checkMetrics([]metricCase{{"mintlify_agent_jobs_submitted_total", []string{"project", "p2"}, 0}})
}
