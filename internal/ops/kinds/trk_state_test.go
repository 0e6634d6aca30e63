package kinds_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

// TestStateFileOfRelease1 loads testdata/state-v1.db, written by the
// release before the tracker had a record type of its own (see
// testdata/README.md): every job comes back as it was, nothing is counted
// again, and what the tracker writes for those jobs is byte for byte what
// that release wrote.
func TestStateFileOfRelease1(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("testdata", "state-v1.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "agent.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}

	// The values re-encode to the same bytes.
	cfg0 := Defaults()
	cfg0.LockTimeout = time.Second
	st, err := store.Open(path, storeOptions(cfg0))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = st.ForEach(func(k, v []byte) error {
		n++
		rec, err := decodeRecord(v)
		if err != nil {
			t.Errorf("%q: %v", k, err)
			return nil
		}
		if got := storeKey(rec.Project, rec.Job.ID); got != string(k) {
			t.Errorf("key %q holds %q", k, got)
		}
		again, err := encodeRecord(&rec)
		if err != nil || !bytes.Equal(again, v) {
			t.Errorf("%q re-encodes differently (%v):\n got %s\nwant %s", k, err, again, v)
		}
		return nil
	})
	if err != nil || n != 8 {
		t.Fatalf("%d records (%v), want 8", n, err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	// The tracker loads them.
	now := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	up := stubUpstream{jobs: map[string]*apiclient.Job{}, gets: &atomic.Int64{}}
	cfg := Defaults()
	cfg.Projects, cfg.StatePath, cfg.Now = []string{"p1"}, path, clock
	reg := prometheus.NewPedanticRegistry()
	trk, err := newTracker(up, reg, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, trk: trk, reg: reg}
	views := map[string]JobView{}
	for _, v := range trk.Jobs("p1", "") {
		views[v.ID] = v
		j := v.Job
		if v.Status == StatusLost {
			j.Status = v.Tracking.LastUpstreamStatus
		}
		up.jobs[v.ID] = &j // the API still says what the file says
	}
	t9 := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	for id, want := range map[string]struct {
		status, origin string
		pr, archived   bool
		terminalAt     time.Duration // after 09:00; -1 none
	}{
		"job_000001": {"active", OriginGateway, false, false, -1},
		"job_000002": {"completed", OriginGateway, true, false, 20 * time.Minute},
		"job_000003": {"failed", OriginGateway, false, false, 5 * time.Minute},
		"job_000004": {"archived", OriginGateway, true, true, 10 * time.Minute},
		"job_000005": {StatusLost, OriginGateway, false, false, 40 * time.Minute},
		"job_000006": {"completed", OriginTrack, false, false, time.Minute},
		"job_000007": {"waiting_for_review", OriginTrack, false, false, -1},
	} {
		v, ok := views[id]
		switch {
		case !ok:
			t.Errorf("%s not loaded", id)
			continue
		case v.Status != want.status || v.Tracking.Origin != want.origin || (v.PRLink != nil) != want.pr || (v.ArchivedAt != nil) != want.archived:
			t.Errorf("%s: %+v", id, v)
		case want.terminalAt < 0 && v.Tracking.TerminalAt != nil,
			want.terminalAt >= 0 && (v.Tracking.TerminalAt == nil || !v.Tracking.TerminalAt.Equal(t9.Add(want.terminalAt))):
			t.Errorf("%s: terminalAt %v", id, v.Tracking.TerminalAt)
		}
	}
	if len(views) != 7 {
		t.Errorf("%d jobs of p1, want 7 (p2's stays in the file, unloaded)", len(views))
	}
	if v := views["job_000005"]; v.Tracking.LastUpstreamStatus != "active" {
		t.Errorf("lost job's last upstream status %q", v.Tracking.LastUpstreamStatus)
	}
	e.checkMetrics([]metricCase{
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "active"}, 1},
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "completed"}, 2},
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "failed"}, 1},
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "archived"}, 1},
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "lost"}, 1},
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "waiting_for_review"}, 1},
		// job_000007 (created 09:01) is older than job_000001 (09:50).
		{"mintlify_agent_job_oldest_active_age_seconds", []string{"project", "p1"}, 59 * 60},
	})

	// Polled past every archive re-check: what was counted is not counted
	// again, and what was deliberately not counted stays so.
	now = now.Add(2 * time.Hour)
	trk.round(context.Background())
	if up.gets.Load() == 0 {
		t.Error("nothing polled")
	}
	e.noneFinished("counted again")
	e.checkMetrics([]metricCase{{"mintlify_agent_job_pull_requests_total", []string{"project", "p1"}, 0}})
	if err := trk.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestUnreadableRecord: a job record with one byte changed makes the
// tracker refuse the file (its idempotency key cannot be told, so it must
// not become reusable), pointing at state salvage; the salvaged file
// tracks the job again, rebuilt from its id: re-read at the first poll,
// counted as nothing it had already reached, and shown as rebuilt.
func TestUnreadableRecord(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	e.open(e.config())
	c, err := e.trk.Create(context.Background(), CreateRequest{Project: "p1", Prompt: "#fake:pr:1m", IdempotencyKey: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	other := e.create("p1", "#fake:nopr:1h")
	key := storeKey("p1", c.Job.ID)
	var value []byte
	if err := e.trk.store.ForEachIn(store.Jobs, func(k, v []byte) error {
		if string(k) == key {
			value = bytes.Clone(v)
		}
		return nil
	}); err != nil || value == nil {
		t.Fatalf("record not found: %v", err)
	}
	value[bytes.IndexByte(value, '{')+1] ^= 0x01 // `"project"` loses its quote
	if err := e.trk.store.Apply(store.Op{Bucket: store.Jobs, Key: key, Value: value}); err != nil {
		t.Fatal(err)
	}
	e.close()

	_, err = New(e.client, nil, e.config(), nil)
	var de *store.DamagedError
	if !errors.As(err, &de) || !strings.Contains(err.Error(), "1 unreadable record(s)") || !strings.Contains(err.Error(), "state salvage") {
		t.Fatalf("start on a file with an unreadable record: %v", err)
	}
	rep, err := CheckState(e.statePath)
	if err != nil || rep.Healthy() || rep.Unreadable != 1 {
		t.Fatalf("check: %v\n%s", err, rep)
	}

	e.clock.Advance(2 * time.Minute) // the job completed meanwhile
	salvaged := e.statePath + ".salvaged"
	rep, err = SalvageState(e.statePath, salvaged)
	if err != nil || rep.Rebuilt[store.Jobs] != 1 || rep.Entries[store.Jobs] != 1 {
		t.Fatalf("salvage: %v\n%s", err, rep)
	}
	cfg := e.config()
	cfg.StatePath = salvaged
	e.open(cfg)
	if v, ok := e.trk.Job("p1", c.Job.ID); !ok || v.Status != statusUnread || !v.Tracking.Rebuilt {
		t.Fatalf("rebuilt job before its first poll: %+v", v)
	}
	if e.metric("mintlify_agent_state_unreadable_records", "project", "p1") != 1 {
		t.Error("mintlify_agent_state_unreadable_records is not 1")
	}
	e.tick()
	if v, _ := e.trk.Job("p1", c.Job.ID); v.Status != apiclient.StatusCompleted || v.PRLink == nil || !v.Tracking.Rebuilt {
		t.Errorf("rebuilt job after its first poll: %+v", v)
	}
	if v, _ := e.trk.Job("p1", other.ID); v.Status != apiclient.StatusActive || v.Tracking.Rebuilt {
		t.Errorf("the readable job: %+v", v)
	}
	// It may have been counted before: not again.
	e.noneFinished("a rebuilt job's first poll")
	e.checkMetrics([]metricCase{{"mintlify_agent_job_pull_requests_total", []string{"project", "p1"}, 0}})
}
