package kinds_test

import (
	"context"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// TestAFinalRecordWhoseWriteFailedIsCounted: an operation final at its
// first read (here a run settled with an id get-job does not know:
// not_followed at once) whose write fails is written again by the poll
// rounds and counted then, once. The rounds skipped final records, so such
// a run was never counted (a review of the engine found it).
func TestAFinalRecordWhoseWriteFailedIsCounted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	fz := &testutil.Freezer{}
	defer fz.Thaw()
	cfg := e.config()
	cfg.Automations = func(string) ([]string, bool) { return []string{fakeapi.AutomationUnfollowed}, true }
	cfg.StateWriteTimeout = 2 * time.Second // generous: the writes before the freeze sync on a loaded machine
	cfg.beforeStateWrite = fz.Hook
	trk := e.open(cfg)
	ctx := context.Background()

	e.fake.SetFault(fakeapi.TriggerAutomation, fakeapi.Fault{DropAnswer: true, Remaining: 1})
	if _, err := trk.TriggerAutomation(ctx, AutomationRequest{Project: "p1", Automation: fakeapi.AutomationUnfollowed, IdempotencyKey: "k1"}); err == nil {
		t.Fatal("a trigger whose answer was dropped succeeded")
	}
	unknown := trk.AutomationOps().Unknown("p1")
	jobs := e.fake.AutomationJobIDs("p1")
	if len(unknown) != 1 || len(jobs) != 1 {
		t.Fatalf("%d unknown triggers, %d runs upstream; want 1 and 1", len(unknown), len(jobs))
	}
	runs := func() float64 {
		return e.metric("mintlify_automation_runs_total", "project", "p1", "automation", fakeapi.AutomationUnfollowed, "follow", FollowNone)
	}

	fz.Freeze()
	if _, _, err := trk.AutomationOps().Resolve(ctx, "p1", unknown[0].ID, jobs[0]); err == nil {
		t.Fatal("a settle whose write timed out succeeded")
	}
	if n := runs(); n != 0 {
		t.Fatalf("runs counted before their record was written: %v", n)
	}
	fz.Thaw()
	testutil.Eventually(t, 0, "the write blocked by the freeze to return", func() bool { return !trk.store.Stalled() })
	for range 3 { // the rounds write it again, and count it once
		trk.round(ctx)
	}
	if n := runs(); n != 1 {
		t.Errorf("runs_total{follow=not_followed} = %v after the rounds, want 1", n)
	}
}
