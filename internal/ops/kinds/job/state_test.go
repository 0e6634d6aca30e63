package job

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

var t0 = time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)

// TestClassifyAndPickKnowTurns: salvage sorts loose message intents into
// their bucket (not the create intents'), and of two versions of a job
// keeps the later turn.
func TestClassifyAndPickKnowTurns(t *testing.T) {
	t.Parallel()
	mi, err := json.Marshal(&messageIntent{IntentBase: engine.IntentBase{ID: "mi_1", Project: "p1", RequestHash: "h", StartedAt: t0}, JobID: "job_1"})
	if err != nil {
		t.Fatal(err)
	}
	ci, err := json.Marshal(&Intent{IntentBase: engine.IntentBase{ID: "ci_1", Project: "p1", RequestHash: "h", StartedAt: t0}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key    string
		value  []byte
		bucket string
	}{
		{engine.Key("p1", "mi_1"), mi, bucketMessageIntents},
		{engine.Key("p1", "ci_1"), ci, bucketIntents},
	} {
		if b, ok := engine.Classify("", []byte(c.key), c.value); !ok || b != c.bucket {
			t.Errorf("%s: classified %q %v, want %q", c.key, b, ok, c.bucket)
		}
	}
	if _, ok := engine.Classify(bucketMessageIntents, []byte(engine.Key("p1", "ci_1")), ci); ok {
		t.Error("a create intent accepted as a message intent")
	}

	done := Record{Op: engine.Op{Project: "p1", Status: apiclient.StatusCompleted, TerminalAt: t0}, Job: apiclient.Job{ID: "job_1"},
		Counts: countedCompleted, PRCounted: true}
	next := done
	next.startTurn(t0.Add(time.Hour))
	next.Status = apiclient.StatusActive
	a, err := json.Marshal(&done)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(&next)
	if err != nil {
		t.Fatal(err)
	}
	for _, pair := range [][2][]byte{{a, b}, {b, a}} {
		var got Record
		if err := json.Unmarshal(engine.Pick(store.Jobs, pair[0], pair[1]), &got); err != nil || got.turn() != 2 {
			t.Errorf("picked turn %d (%v), want the second turn over the finished first", got.turn(), err)
		}
	}
}
