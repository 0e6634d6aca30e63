package tracker

import (
	"testing"
	"time"
)

// TestAutomationRunStateForm: a run's record is its own state form (the
// engine's opState and the run's ids), read back whole, recognized by the
// state tools under its own key only (forms), and of two versions the
// final one is kept (pick); a run whose follow value this release does not
// know is unreadable.
func TestAutomationRunStateForm(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	pending := autoRecord{ID: "job_1", Automation: "wf_docs_refresh", JobID: "job_1", InstanceID: "wfi_1",
		opState: opState{Project: "p1", Origin: OriginGateway, TrackedAt: at, Status: FollowPending, IdemKey: "k", Code: 202}}
	a, err := autoSpec.encode(&pending)
	if err != nil {
		t.Fatal(err)
	}
	got, err := autoSpec.decode(a)
	if err != nil || got != pending {
		t.Fatalf("decode: %+v, %v; want %+v", got, err, pending)
	}
	done := pending
	if ev := done.follow(FollowAgentJob, at, seenLive); ev.finished != FollowAgentJob || !done.final() {
		t.Fatalf("follow: %+v, %+v", ev, done)
	}
	if ev := done.follow(FollowNone, at, seenLive); ev.finished != "" || done.Status != FollowAgentJob {
		t.Errorf("a final run followed again: %+v, %+v", ev, done)
	}
	b, _ := autoSpec.encode(&done)
	if string(autoSpec.pick(a, b)) != string(b) || string(autoSpec.pick(b, a)) != string(b) {
		t.Errorf("pick does not keep the final version")
	}
	forms := autoSpec.forms()[bucketAutomations]
	if !forms([]byte(storeKey("p1", "job_1")), a) || forms([]byte(storeKey("p1", "job_2")), a) {
		t.Errorf("forms: a run under its own key only")
	}
	odd := pending
	odd.Status = "sideways"
	c, _ := autoSpec.encode(&odd)
	if _, err := autoSpec.decode(c); err == nil {
		t.Errorf("a run with an unknown follow value was read")
	}
}
