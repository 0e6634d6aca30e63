package kinds_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// TestFrozenStateFile: with the state file's filesystem frozen, a create
// is refused within the write timeout naming its intent, nothing is sent
// upstream, polls go on, and Close returns instead of hanging; after the
// thaw creates work again.
func TestFrozenStateFile(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	fz := &testutil.Freezer{}
	cfg := e.config()
	cfg.StateWriteTimeout = 2 * time.Second // generous: writes before the freeze sync on a loaded machine
	cfg.beforeStateWrite = fz.Hook
	trk := e.open(cfg)
	running := e.create("p1", "#fake:nopr:1m")

	fz.Freeze()
	defer fz.Thaw()
	for i, want := range []string{"did not finish within 2s", "an earlier write has been blocked"} {
		_, err := trk.Create(context.Background(), CreateRequest{Project: "p1", Prompt: "frozen #fake:pr:1m", IdempotencyKey: "k"})
		var ie *IntentError
		var te *store.WriteTimeoutError
		if !errors.As(err, &ie) || !errors.As(err, &te) || !strings.HasPrefix(ie.Intent, "ci_") ||
			!strings.Contains(err.Error(), ie.Intent) || !strings.Contains(err.Error(), want) {
			t.Fatalf("create %d on a frozen filesystem: %v", i, err)
		}
	}
	if n := e.fake.JobCount(); n != 1 {
		t.Errorf("%d jobs upstream, want 1: nothing may be sent without its intent", n)
	}
	if e.metric("mintlify_agent_state_write_stalled") != 1 {
		t.Error("mintlify_agent_state_write_stalled is not 1")
	}
	// A poll that sees the job end cannot write it: kept in memory, not
	// counted, retried.
	e.clock.Advance(time.Minute)
	e.trk.round(context.Background())
	if v, _ := trk.Job("p1", running.ID); !strings.HasPrefix(v.Tracking.LastError, "state:") {
		t.Errorf("poll on a frozen filesystem: %+v", v.Tracking)
	}
	e.noneFinished("nothing written")
	if err := trk.Close(); err == nil || !strings.Contains(err.Error(), "still blocked") {
		t.Errorf("Close on a frozen filesystem: %v", err)
	}
	e.trk = nil // closed (as far as a frozen filesystem allows)

	fz.Thaw()
	// The write that timed out lands after the thaw; the exporter is
	// restarted on the file.
	waitIdle(t, trk)
	e.open(cfg)
	if _, err := e.trk.Create(context.Background(), CreateRequest{Project: "p1", Prompt: "thawed #fake:pr:1m", IdempotencyKey: "k2"}); err != nil {
		t.Fatalf("create after the thaw: %v", err)
	}
}

// waitIdle waits until the writes of trk's store that outlived their
// timeout have returned, and closes it.
func waitIdle(t *testing.T, trk *Tracker) {
	t.Helper()
	testutil.Eventually(t, 0, "the write blocked by the freeze to return", func() bool { return !trk.store.Stalled() })
	if err := trk.store.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestStateFileDeleted: a state file deleted while running is noticed at
// the next poll round (logged once, mintlify_agent_state_file_replaced
// 1), and no create is acknowledged, or sent, until it is back.
func TestStateFileDeleted(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	trk := e.open(e.config())
	e.create("p1", "#fake:nopr:1m")
	if e.metric("mintlify_agent_state_file_replaced") != 0 {
		t.Fatal("replaced before anything happened")
	}
	moved := e.statePath + ".moved"
	if err := os.Rename(e.statePath, moved); err != nil {
		t.Fatal(err)
	}
	e.tick()
	e.tick()
	if got := strings.Count(e.logs.String(), "state file deleted or replaced while running"); got != 1 {
		t.Errorf("logged %d times, want once:\n%s", got, e.logs)
	}
	if e.metric("mintlify_agent_state_file_replaced") != 1 {
		t.Error("mintlify_agent_state_file_replaced is not 1")
	}
	jobs := e.fake.JobCount()
	_, err := trk.Create(context.Background(), CreateRequest{Project: "p1", Prompt: "#fake:pr:1m", IdempotencyKey: "after-rm"})
	var ie *IntentError
	var re *store.ReplacedError
	if !errors.As(err, &ie) || !errors.As(err, &re) {
		t.Fatalf("create after rm: %v, want an IntentError of a replaced file", err)
	}
	if e.fake.JobCount() != jobs {
		t.Error("a create was sent upstream with the state file gone")
	}
	if e.metric("mintlify_agent_state_write_errors_total") < 1 {
		t.Error("the refused write is not counted")
	}
	// Back in place: noticed, and creates are acknowledged again.
	if err := os.Rename(moved, e.statePath); err != nil {
		t.Fatal(err)
	}
	e.tick()
	if e.metric("mintlify_agent_state_file_replaced") != 0 || !strings.Contains(e.logs.String(), "back at its path") {
		t.Error("the file's return was not noticed")
	}
	if _, err := trk.Create(context.Background(), CreateRequest{Project: "p1", Prompt: "#fake:pr:1m", IdempotencyKey: "after-rm"}); err != nil {
		t.Fatalf("create once the file is back: %v", err)
	}
}

// TestOutcomesAreLogged: each turn seen ending (completed, failed,
// archived) and a pull request seen opened after its job's turn ended are
// logged at info, once each, with the job, project, status, turn, pr and
// the turn's duration when observed; never a prompt.
func TestOutcomesAreLogged(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	e.open(e.config())
	const secret = "the prompt text must stay out of the log"
	ok := e.create("p1", secret+" #fake:pr:1m")
	bad := e.create("p1", secret+" #fake:fail:2m")
	// Completes with a pull request, archived 30s later (the fake's
	// ArchiveAfter): the archive re-check 5m after completion sees it.
	arch := e.create("p1", secret+" #fake:archive:1m")
	// Completes without a pull request; a follow-up sent elsewhere then
	// opens one in a turn the tracker never sees running: the archive
	// re-check finds the job still completed, now with a pull request.
	late := e.create("p1", secret+" #fake:nopr:1m")
	e.waitStatus("p1", bad.ID, apiclient.StatusFailed, 20)
	e.waitStatus("p1", ok.ID, apiclient.StatusCompleted, 1)
	e.waitStatus("p1", late.ID, apiclient.StatusCompleted, 1)
	if _, _, err := e.client.SendMessage(context.Background(), "p1", late.ID, secret+" #fake:pr:10s"); err != nil {
		t.Fatal(err)
	}
	e.waitStatus("p1", arch.ID, apiclient.StatusArchived, 40)
	e.tickUntil(40, "the late pull request seen", func() bool {
		v, _ := e.trk.Job("p1", late.ID)
		return v.PRLink != nil
	})
	e.runFor(10 * time.Minute) // nothing is logged twice
	e.checkMetrics([]metricCase{{"mintlify_agent_job_pull_requests_total", []string{"project", "p1"}, 3}})

	var outcomes []string
	for _, l := range strings.Split(e.logs.String(), "\n") {
		if strings.Contains(l, `msg="agent job finished"`) || strings.Contains(l, `msg="agent job opened a pull request"`) {
			outcomes = append(outcomes, l[strings.Index(l, "msg="):])
		}
	}
	want := []string{
		`msg="agent job finished" project=p1 job=` + ok.ID + ` status=completed turn=1 pr=yes duration=1m0s`,
		`msg="agent job finished" project=p1 job=` + arch.ID + ` status=completed turn=1 pr=yes duration=1m0s`,
		`msg="agent job finished" project=p1 job=` + late.ID + ` status=completed turn=1 pr=no duration=1m0s`,
		`msg="agent job finished" project=p1 job=` + bad.ID + ` status=failed turn=1 pr=no duration=2m0s`,
		`msg="agent job finished" project=p1 job=` + arch.ID + ` status=archived turn=1 pr=yes`,
		`msg="agent job opened a pull request" project=p1 job=` + late.ID + ` status=completed turn=1 pr=yes`,
	}
	slices.Sort(outcomes)
	slices.Sort(want)
	if !slices.Equal(outcomes, want) {
		t.Errorf("outcome lines\n%s\nwant\n%s", strings.Join(outcomes, "\n"), strings.Join(want, "\n"))
	}
	if strings.Contains(e.logs.String(), secret) {
		t.Error("a prompt reached the log")
	}
}
