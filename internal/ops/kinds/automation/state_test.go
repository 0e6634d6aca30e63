package automation

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
	_ "github.com/mintlify-exporter/mintlify_exporter/internal/ops/kinds/deployment"
	_ "github.com/mintlify-exporter/mintlify_exporter/internal/ops/kinds/staticexport"
)

// TestAutomationRunStateForm: a run's record is its own state form (the
// engine's Op and the run's ids), read back whole, recognized by the
// state tools under its own key only (engine.Classify), and of two
// versions the final one is kept (engine.Pick); a run whose follow value
// this release does not know is unreadable.
func TestAutomationRunStateForm(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	pending := Record{RunID: "job_1", Automation: "wf_docs_refresh", JobID: "job_1", InstanceID: "wfi_1",
		Op: engine.Op{Project: "p1", Origin: engine.OriginGateway, TrackedAt: at, Status: FollowPending, IdemKey: "k", Code: 202}}
	a, err := json.Marshal(&pending)
	if err != nil {
		t.Fatal(err)
	}
	var got Record
	if err := json.Unmarshal(a, &got); err != nil || got != pending {
		t.Fatalf("decode: %+v, %v; want %+v", got, err, pending)
	}
	done := pending
	if ev := done.follow(FollowAgentJob, at, engine.SeenLive); ev.Finished != FollowAgentJob || !done.Final() {
		t.Fatalf("follow: %+v, %+v", ev, done)
	}
	if ev := done.follow(FollowNone, at, engine.SeenLive); ev.Finished != "" || done.Status != FollowAgentJob {
		t.Errorf("a final run followed again: %+v, %+v", ev, done)
	}
	b, _ := json.Marshal(&done)
	if string(engine.Pick(decl.Records, a, b)) != string(b) || string(engine.Pick(decl.Records, b, a)) != string(b) {
		t.Errorf("pick does not keep the final version")
	}
	if _, ok := engine.Classify(decl.Records, []byte(engine.Key("p1", "job_1")), a); !ok {
		t.Errorf("a run is not recognized under its own key")
	}
	if _, ok := engine.Classify(decl.Records, []byte(engine.Key("p1", "job_2")), a); ok {
		t.Errorf("a run is recognized under another key")
	}
	odd := pending
	odd.Status = "sideways"
	c, _ := json.Marshal(&odd)
	if _, ok := engine.Classify(decl.Records, []byte(engine.Key("p1", "job_1")), c); ok {
		t.Errorf("a run with an unknown follow value was read")
	}
}
