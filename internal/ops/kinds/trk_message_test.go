package kinds_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

func (e *env) message(project, id, key, prompt string) (Messaged, error) {
	return e.trk.Message(context.Background(), MessageRequest{Project: project, JobID: id, Prompt: prompt, IdempotencyKey: key})
}

// TestFollowUpStartsATurn: a follow-up makes a finished job active again,
// its turn is followed to its end and counted once, the histogram observes
// the turn from the message, and a restart in the middle of the turn
// neither loses it nor counts anything twice.
func TestFollowUpStartsATurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	e.open(e.config())
	job := e.create("p1", "add a page #fake:pr:1m")
	e.waitStatus("p1", job.ID, apiclient.StatusCompleted, 10)
	e.clock.Advance(10 * time.Minute)

	sentAt := e.clock.Now()
	m, err := e.message("p1", job.ID, "", "also fix the typo #fake:fail:2m")
	if err != nil {
		t.Fatal(err)
	}
	if m.Job.Status != apiclient.StatusActive || m.Job.Tracking.Turn != 2 || m.Job.Tracking.TurnStartedAt == nil ||
		!m.Job.Tracking.TurnStartedAt.Equal(sentAt) || m.Job.Tracking.TerminalAt != nil || m.Status != 200 {
		t.Fatalf("after the message: %+v (status %d), want an active job in turn 2 started at %v", m.Job, m.Status, sentAt)
	}
	if n := e.fake.Messages("p1", job.ID); n != 1 {
		t.Fatalf("the fake got %d messages", n)
	}
	e.checkMetrics([]metricCase{
		{"mintlify_agent_job_messages_total", []string{"project", "p1"}, 1},
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "active"}, 1},
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "completed"}, 0},
		{"mintlify_agent_jobs_finished_total", []string{"project", "p1", "status", "completed"}, 1},
	})
	// The oldest running turn is this one, not the job's creation.
	e.clock.Advance(30 * time.Second)
	if age := e.metric("mintlify_agent_job_oldest_active_age_seconds", "project", "p1"); age != 30 {
		t.Errorf("oldest active age %v, want 30 (from the message)", age)
	}

	// kill -9 during the turn: the state file already holds it.
	e.close()
	e.open(e.config())
	if v, _ := e.trk.Job("p1", job.ID); v.Status != apiclient.StatusActive || v.Tracking.Turn != 2 {
		t.Fatalf("after a restart: %+v, want turn 2 active", v)
	}
	v := e.waitStatus("p1", job.ID, apiclient.StatusFailed, 20)
	if v.Tracking.Turn != 2 {
		t.Errorf("turn %d after the end", v.Tracking.Turn)
	}
	e.checkMetrics([]metricCase{
		// Counted once, by the process that saw it; the first turn's
		// completion is not counted again.
		{"mintlify_agent_jobs_finished_total", []string{"project", "p1", "status", "failed"}, 1},
		{"mintlify_agent_jobs_finished_total", []string{"project", "p1", "status", "completed"}, 0},
		{"mintlify_agent_job_duration_seconds", []string{"project", "p1", "status", "failed"}, 1},
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "failed"}, 1},
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "active"}, 0},
	})
	// 2m from the message, up to one poll late: not 12m from createdAt.
	if d := e.histSum("mintlify_agent_job_duration_seconds", "project", "p1", "status", "failed"); d < 120 || d > 130 {
		t.Errorf("turn duration %vs, want 120-130s from the message", d)
	}
	e.runFor(time.Minute)
	e.close()
	e.open(e.config())
	e.runFor(time.Minute)
	e.noneFinished("after a second restart")
}

// TestFollowUpToAnUntrackedJob tracks it first; a job the API does not
// know fails with nothing sent and nothing tracked.
func TestFollowUpToAnUntrackedJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	e.open(e.config())
	elsewhere, err := e.client.CreateJob(context.Background(), "p1", "#fake:nopr:1m")
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * time.Minute)
	m, err := e.message("p1", elsewhere.ID, "", "once more #fake:pr:1m")
	if err != nil {
		t.Fatal(err)
	}
	if m.Job.Tracking.Origin != OriginTrack || m.Job.Tracking.Turn != 2 || m.Job.Status != apiclient.StatusActive {
		t.Errorf("%+v, want a tracked job in turn 2", m.Job)
	}
	e.waitStatus("p1", elsewhere.ID, apiclient.StatusCompleted, 20)
	e.checkMetrics([]metricCase{
		{"mintlify_agent_jobs_finished_total", []string{"project", "p1", "status", "completed"}, 1},
		{"mintlify_agent_job_pull_requests_total", []string{"project", "p1"}, 1},
	})

	_, err = e.message("p1", "job_999999", "k1", "x")
	var notSent *NotSentError
	if !errors.As(err, &notSent) || apiclient.StatusCode(err) != 404 {
		t.Fatalf("unknown job: %v, want a NotSentError with the API's 404", err)
	}
	if _, ok := e.trk.Job("p1", "job_999999"); ok {
		t.Error("an unknown job is tracked")
	}
	if e.fake.Requests(fakeapi.SendMessage) != 1 {
		t.Errorf("%d messages sent, want 1", e.fake.Requests(fakeapi.SendMessage))
	}
	// Its key was given back.
	if _, err := e.message("p1", elsewhere.ID, "k1", "x"); err != nil {
		t.Errorf("the key of a message that was not sent: %v", err)
	}
}

// TestFollowUpSentElsewhereIsNoticed: a job found active again by the
// archive re-checks starts a new turn, followed to its end.
func TestFollowUpSentElsewhereIsNoticed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	e.open(e.config())
	job := e.create("p1", "#fake:pr:1m")
	e.waitStatus("p1", job.ID, apiclient.StatusCompleted, 10)
	// Sent with the API key, not through the gateway.
	if _, _, err := e.client.SendMessage(context.Background(), "p1", job.ID, "#fake:nopr:30m"); err != nil {
		t.Fatal(err)
	}
	// The next archive re-check is 5m (30 poll intervals) after completion.
	v := e.waitStatus("p1", job.ID, apiclient.StatusActive, 40)
	if v.Tracking.Turn != 2 || v.Tracking.TurnStartedAt == nil || v.Tracking.TerminalAt != nil {
		t.Fatalf("%+v, want turn 2 started when it was seen", v)
	}
	seen := *v.Tracking.TurnStartedAt
	e.waitStatus("p1", job.ID, apiclient.StatusCompleted, 200)
	e.checkMetrics([]metricCase{
		{"mintlify_agent_jobs_finished_total", []string{"project", "p1", "status", "completed"}, 2},
		{"mintlify_agent_job_duration_seconds", []string{"project", "p1", "status", "completed"}, 2},
		// Not sent through the gateway.
		{"mintlify_agent_job_messages_total", []string{"project", "p1"}, 0},
	})
	v, _ = e.trk.Job("p1", job.ID)
	if got := v.Tracking.TerminalAt.Sub(seen); got > 30*time.Minute+e.trk.cfg.PollInterval || got < 25*time.Minute {
		t.Errorf("turn 2 lasted %v from when it was seen", got)
	}
}

// TestFollowUpIdempotencyKey: a retry gets the first answer and sends
// nothing; another body, or a create's key, is a conflict.
func TestFollowUpIdempotencyKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	e.open(e.config())
	job := e.create("p1", "#fake:pr:1m")
	if _, err := e.keyed("p1", "create-key", "#fake:pr:1m"); err != nil {
		t.Fatal(err)
	}
	first, err := e.message("p1", job.ID, "m-1", "more")
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.message("p1", job.ID, "m-1", "more")
	if err != nil || !again.Replayed || again.Status != first.Status || again.Job.Tracking.Turn != 2 {
		t.Fatalf("retry: %+v %v, want a replay of turn 2", again, err)
	}
	for _, c := range []struct{ id, key, prompt string }{
		{job.ID, "m-1", "other words"},
		{"job_000002", "m-1", "more"}, // another job
		{job.ID, "create-key", "more"},
	} {
		if _, err := e.message("p1", c.id, c.key, c.prompt); !errors.Is(err, ErrIdempotencyKeyReused) {
			t.Errorf("%+v: %v, want ErrIdempotencyKeyReused", c, err)
		}
	}
	// A create with a message's key is a conflict too.
	if _, err := e.keyed("p1", "m-1", "more"); !errors.Is(err, ErrIdempotencyKeyReused) {
		t.Errorf("create with a message's key: %v", err)
	}
	if n := e.fake.Messages("p1", job.ID); n != 1 {
		t.Errorf("the fake got %d messages, want 1", n)
	}
	// Keys survive a restart.
	e.close()
	e.open(e.config())
	if again, err := e.message("p1", job.ID, "m-1", "more"); err != nil || !again.Replayed {
		t.Errorf("retry after a restart: %+v %v", again, err)
	}
	if n := e.fake.Messages("p1", job.ID); n != 1 {
		t.Errorf("the fake got %d messages after a restart, want 1", n)
	}
}

// TestFollowUpOfUnknownOutcome: a message whose answer is lost re-checks
// the job (a new turn from the message's time) and its key is never sent
// again; so does one left by a crash, at the next start.
func TestFollowUpOfUnknownOutcome(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	e.open(e.config())
	job := e.create("p1", "#fake:fail:1m")
	e.waitStatus("p1", job.ID, apiclient.StatusFailed, 10)
	e.fake.SetFault(fakeapi.SendMessage, fakeapi.Fault{DropAnswer: true, Remaining: 1})
	sentAt := e.clock.Now()
	_, err := e.message("p1", job.ID, "lost", "#fake:pr:1m")
	var unknown *MessageOutcomeUnknownError
	if !errors.As(err, &unknown) || unknown.Err == nil {
		t.Fatalf("%v, want a MessageOutcomeUnknownError", err)
	}
	// A failed job is not polled, but this one is re-checked.
	e.clock.Advance(5 * time.Second)
	e.trk.round(context.Background())
	v, _ := e.trk.Job("p1", job.ID)
	if v.Status != apiclient.StatusActive || v.Tracking.Turn != 2 || !v.Tracking.TurnStartedAt.Equal(sentAt) {
		t.Fatalf("after the re-check: %+v, want turn 2 active from %v", v, sentAt)
	}
	if _, err := e.message("p1", job.ID, "lost", "#fake:pr:1m"); !errors.As(err, &unknown) || unknown.Err != nil {
		t.Errorf("retry with the key: %v, want a MessageOutcomeUnknownError without a send", err)
	}
	if n := e.fake.Messages("p1", job.ID); n != 1 {
		t.Errorf("the fake got %d messages", n)
	}
	e.waitStatus("p1", job.ID, apiclient.StatusCompleted, 20)

	// A crash after the intent was written, before the message was sent:
	// the job is re-checked at the next start, and stays as it is.
	other := e.create("p1", "#fake:fail:1m")
	e.waitStatus("p1", other.ID, apiclient.StatusFailed, 10)
	mi := &messageIntent{ID: "mi_1", Project: "p1", JobID: other.ID, IdemKey: "crashed", RequestHash: messageHash(other.ID, "x"), StartedAt: e.clock.Now()}
	data, err := encodeMessageIntent(mi)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.trk.store.Apply(store.Op{Bucket: bucketMessageIntents, Key: storeKey("p1", mi.ID), Value: data}); err != nil {
		t.Fatal(err)
	}
	e.close()
	// No archive re-checks: the completed job's would fall due at a
	// random time after the start.
	cfg := e.config()
	cfg.ArchiveWatch = 0
	e.open(cfg)
	gets := e.fake.Requests(fakeapi.GetJob)
	e.tick()
	if d := e.fake.Requests(fakeapi.GetJob) - gets; d != 1 {
		t.Errorf("%d polls after the restart, want 1 (the re-check of the failed job)", d)
	}
	if v, _ := e.trk.Job("p1", other.ID); v.Status != apiclient.StatusFailed || v.Tracking.Turn != 1 {
		t.Errorf("%+v, want failed in turn 1: the message never reached it", v)
	}
	if _, err := e.message("p1", other.ID, "crashed", "x"); !errors.As(err, &unknown) {
		t.Errorf("retry with the crashed message's key: %v", err)
	}
	n := 0
	if err := e.trk.store.ForEachIn(bucketMessageIntents, func(_, _ []byte) error { n++; return nil }); err != nil || n != 0 {
		t.Errorf("%d message intents left (%v)", n, err)
	}
}

// writeMessageIntent writes a message intent to job id of p1 sent now, as
// Message does before it sends, and returns it.
func (e *env) writeMessageIntent(id, key, prompt string) *messageIntent {
	e.t.Helper()
	mi := &messageIntent{ID: newIntentID("ci_"), Project: "p1", JobID: id, IdemKey: key, RequestHash: messageHash(id, prompt), StartedAt: e.clock.Now()}
	data, err := encodeMessageIntent(mi)
	if err == nil {
		err = e.trk.store.Apply(store.Op{Bucket: bucketMessageIntents, Key: storeKey("p1", mi.ID), Value: data})
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return mi
}

// TestFollowUpOfUnknownOutcomeToARunningJob: a follow-up sent while the
// tracker believes the job's first turn still runs (it ended upstream
// unseen, between two polls), whose answer is lost to a crash after the
// API took it: the restart re-checks the job, finds it running and
// follows the turn the follow-up started, from the time it was sent; the
// turn is counted once when it ends, and the message is never sent again.
// So does a message whose answer a dropped connection lost, without a
// restart.
func TestFollowUpOfUnknownOutcomeToARunningJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	e.open(e.config())
	job := e.create("p1", "quick #fake:nopr:2s")
	e.clock.Advance(3 * time.Second) // the first turn ended upstream; no poll saw it
	if v, _ := e.trk.Job("p1", job.ID); v.Status != apiclient.StatusActive {
		t.Fatalf("%+v, want active as last seen", v)
	}
	// Killed during the send: the intent is written, the API takes the
	// message, the answer is never recorded.
	mi := e.writeMessageIntent(job.ID, "turn-2", "more #fake:pr:1m")
	if _, _, err := e.client.SendMessage(context.Background(), "p1", job.ID, "more #fake:pr:1m"); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Second)
	e.close()
	e.open(e.config())
	e.tick()
	v, _ := e.trk.Job("p1", job.ID)
	if v.Status != apiclient.StatusActive || v.Tracking.Turn != 2 || v.Tracking.TurnStartedAt == nil ||
		!v.Tracking.TurnStartedAt.Equal(mi.StartedAt) || !v.Tracking.TurnInferred {
		t.Fatalf("after the restart and a poll: %+v, want turn 2 active from %v, inferred", v.Tracking, mi.StartedAt)
	}
	if _, err := e.message("p1", job.ID, "turn-2", "more #fake:pr:1m"); !errorsAsUnknownMessage(err) {
		t.Errorf("retry with the key: %v, want a MessageOutcomeUnknownError", err)
	}
	v = e.waitStatus("p1", job.ID, apiclient.StatusCompleted, 20)
	if v.Tracking.Turn != 2 || e.fake.Messages("p1", job.ID) != 1 {
		t.Errorf("turn %d, %d messages upstream; want 2 and 1", v.Tracking.Turn, e.fake.Messages("p1", job.ID))
	}
	e.checkMetrics([]metricCase{
		{"mintlify_agent_jobs_finished_total", []string{"project", "p1", "status", "completed"}, 1},
		{"mintlify_agent_job_duration_seconds", []string{"project", "p1", "status", "completed"}, 1},
		{"mintlify_agent_job_pull_requests_total", []string{"project", "p1"}, 1},
	})
	// From the message to the first poll that saw the turn end: 1m and at
	// most a poll interval, not the job's age.
	if d := e.histSum("mintlify_agent_job_duration_seconds", "project", "p1", "status", "completed"); d < 60 || d > 70 {
		t.Errorf("turn duration %vs, want 60-70s from the message", d)
	}
	// Settled: a restart neither re-checks it nor counts it again.
	e.open(e.config())
	e.tick()
	if v, _ := e.trk.Job("p1", job.ID); v.Tracking.Turn != 2 || v.Status != apiclient.StatusCompleted {
		t.Errorf("after a second restart: %+v", v.Tracking)
	}
	e.noneFinished("after a second restart")

	// Without a crash: the answer lost to a dropped connection.
	other := e.create("p1", "quick #fake:nopr:2s")
	e.clock.Advance(3 * time.Second)
	e.fake.SetFault(fakeapi.SendMessage, fakeapi.Fault{DropAnswer: true, Remaining: 1})
	if _, err := e.message("p1", other.ID, "", "more #fake:pr:1m"); !errorsAsUnknownMessage(err) {
		t.Fatalf("%v, want a MessageOutcomeUnknownError", err)
	}
	e.tick()
	if v, _ := e.trk.Job("p1", other.ID); v.Tracking.Turn != 2 || v.Status != apiclient.StatusActive {
		t.Errorf("after the re-check: %+v, want turn 2 active", v.Tracking)
	}
}

func errorsAsUnknownMessage(err error) bool {
	var unknown *MessageOutcomeUnknownError
	return errors.As(err, &unknown)
}

// slowUpstream makes every get-job take d on the test's clock, one at a
// time: a round of n polls takes n×d.
type slowUpstream struct {
	*apiclient.Client
	clock *testutil.Clock
	d     time.Duration
}

func (s *slowUpstream) GetJob(ctx context.Context, project, id string) (*apiclient.Job, error) {
	s.clock.Advance(s.d)
	return s.Client.GetJob(ctx, project, id)
}

// TestPollLagShows: with too many active jobs for one poll at a time,
// polls run late and the delay histogram and the overdue gauge say so;
// with few jobs they do not.
func TestPollLagShows(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		jobs     int
		wantLate bool
	}{{3, false}, {40, true}} {
		e := newEnv(t, fakeapi.Options{})
		cfg := e.config()
		cfg.MaxConcurrentPolls = 1
		e.openWith(cfg, &slowUpstream{Client: e.client, clock: e.clock, d: time.Second})
		for range c.jobs {
			e.create("p1", "#fake:pr:2h")
		}
		// Rounds start as Run's ticker starts them: every interval, or at
		// the next tick after a round that overran.
		start := e.clock.Now()
		for k := 1; k <= 5; k++ {
			next := start.Add(time.Duration(k) * cfg.PollInterval)
			for next.Before(e.clock.Now()) {
				k++
				next = start.Add(time.Duration(k) * cfg.PollInterval)
			}
			e.clock.Set(next)
			e.trk.round(context.Background())
		}
		overdue := e.metric("mintlify_agent_poll_max_overdue_seconds", "project", "p1")
		polls := e.metric("mintlify_agent_poll_delay_seconds")
		sum := e.histSum("mintlify_agent_poll_delay_seconds")
		if polls == 0 {
			t.Fatalf("%d jobs: no poll delay observed", c.jobs)
		}
		if interval := e.metric("mintlify_agent_poll_interval_seconds"); interval != 10 {
			t.Errorf("poll interval gauge %v", interval)
		}
		mean := sum / polls
		if c.wantLate {
			// A round takes 40s for a 10s interval: on average a poll is
			// about 20s late, and the last ones of a round about 30s.
			if mean < 10 || overdue < 20 {
				t.Errorf("%d jobs, 1 poll at a time, 1s each: mean delay %.1fs, overdue %.0fs; want them late", c.jobs, mean, overdue)
			}
		} else if mean > 2.5 || overdue > 0 || math.IsNaN(mean) {
			t.Errorf("%d jobs: mean delay %.1fs, overdue %.0fs; want on time", c.jobs, mean, overdue)
		}
	}
}

// TestFollowUpsRacingPolls sends follow-ups while poll rounds run: no poll
// writes an older turn over a newer one, in memory or in the state file.
func TestFollowUpsRacingPolls(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{CreateLimit: -1, MessageLimit: -1})
	cfg := e.config()
	cfg.MaxConcurrentPolls = 8
	e.open(cfg)
	var ids []string
	for range 8 {
		ids = append(ids, e.create("p1", "#fake:pr:1h").ID)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				e.trk.round(context.Background())
				e.clock.Advance(cfg.PollInterval)
			}
		}
	}()
	for i := range 40 {
		id := ids[i%len(ids)]
		if _, err := e.message("p1", id, "", "more #fake:pr:1h"); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	<-done
	check := func(when string) {
		for _, id := range ids {
			v, _ := e.trk.Job("p1", id)
			if want := e.fake.Messages("p1", id) + 1; v.Tracking.Turn != want || v.Status != apiclient.StatusActive {
				t.Errorf("%s: job %s in turn %d (%s), want %d active", when, id, v.Tracking.Turn, v.Status, want)
			}
		}
	}
	check("in memory")
	e.close()
	e.open(cfg)
	check("after a restart")
}

// TestSubmitterIsKept: who created a job and who started its turn survive
// a restart.
func TestSubmitterIsKept(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	e.open(e.config())
	c, err := e.trk.Create(WithUser(context.Background(), "alice"), CreateRequest{Project: "p1", Prompt: "#fake:pr:1m"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.trk.Message(WithUser(context.Background(), "bob"), MessageRequest{Project: "p1", JobID: c.Job.ID, Prompt: "more"}); err != nil {
		t.Fatal(err)
	}
	e.close()
	e.open(e.config())
	if v, _ := e.trk.Job("p1", c.Job.ID); v.Tracking.SubmittedBy != "alice" || v.Tracking.TurnStartedBy != "bob" {
		t.Errorf("after a restart: %+v, want submitted by alice, turn 2 started by bob", v.Tracking)
	}
}

// TestTrackAgainRechecks: a failed job is no longer polled, so a follow-up
// sent to it elsewhere is seen when it is tracked again: one re-check, and
// its new turn is followed.
func TestTrackAgainRechecks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	e.open(e.config())
	job := e.create("p1", "#fake:fail:1m")
	e.waitStatus("p1", job.ID, apiclient.StatusFailed, 10)
	gets := e.fake.Requests(fakeapi.GetJob)
	e.runFor(time.Minute)
	if d := e.fake.Requests(fakeapi.GetJob) - gets; d != 0 {
		t.Fatalf("a failed job was polled %d times", d)
	}
	if _, _, err := e.client.SendMessage(context.Background(), "p1", job.ID, "#fake:pr:1m"); err != nil {
		t.Fatal(err)
	}
	if _, res, err := e.trk.Track(context.Background(), "p1", job.ID); err != nil || res != AlreadyTracked {
		t.Fatalf("track again: %v %v", res, err)
	}
	e.tick()
	if v, _ := e.trk.Job("p1", job.ID); v.Status != apiclient.StatusActive || v.Tracking.Turn != 2 {
		t.Fatalf("after the re-check: %+v, want turn 2 active", v)
	}
	e.waitStatus("p1", job.ID, apiclient.StatusCompleted, 20)
	e.checkMetrics([]metricCase{
		{"mintlify_agent_jobs_finished_total", []string{"project", "p1", "status", "failed"}, 1},
		{"mintlify_agent_jobs_finished_total", []string{"project", "p1", "status", "completed"}, 1},
	})
	// Still failed-and-done jobs are re-checked once, then left alone.
	other := e.create("p1", "#fake:fail:1m")
	e.waitStatus("p1", other.ID, apiclient.StatusFailed, 10)
	if _, _, err := e.trk.Track(context.Background(), "p1", other.ID); err != nil {
		t.Fatal(err)
	}
	gets = e.fake.Requests(fakeapi.GetJob)
	e.runFor(time.Minute)
	// (The completed job's next archive re-check is minutes away.)
	if d := e.fake.Requests(fakeapi.GetJob) - gets; d != 1 {
		t.Errorf("%d polls after tracking a failed job again, want 1", d)
	}
}

// TestManyFollowUpsOfUnknownOutcomeResumeAfterARestart: ten follow-ups'
// intents left by a crash are each settled at the next start (a message
// of unknown outcome on its job, re-checked), not the first few: the
// values the engine reads from the state at load are its own copies (the
// store's bytes change under them once the first settle writes; the
// restart of TestAgentKill9DuringFollowUpAfterAnUnseenEnd resumed 2 of
// 10).
func TestManyFollowUpsOfUnknownOutcomeResumeAfterARestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	e.open(e.config())
	var ids []string
	for i := range 10 {
		id := e.create("p1", fmt.Sprintf("job %d #fake:nopr:1h", i)).ID
		e.writeMessageIntent(id, fmt.Sprintf("key-%d", i), "again")
		ids = append(ids, id)
	}
	e.open(e.config())
	for i, id := range ids {
		if _, err := e.message("p1", id, fmt.Sprintf("key-%d", i), "again"); !errors.As(err, new(*MessageOutcomeUnknownError)) {
			t.Errorf("job %s: a retry with its crashed follow-up's key: %v, want its outcome unknown", id, err)
		}
	}
	n := 0
	if err := e.trk.store.ForEachIn(bucketMessageIntents, func(_, _ []byte) error { n++; return nil }); err != nil || n != 0 {
		t.Errorf("%d message intents left (%v)", n, err)
	}
}
