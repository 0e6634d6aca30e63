package kinds_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

func TestLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{ArchiveAfter: 10 * time.Minute})
	cfg := e.config()
	e.open(cfg)

	pr := e.create("p1", "add a page #fake:pr:30s")
	if pr.Status != "active" || pr.PRLink != nil {
		t.Fatalf("new job: status %q prLink %v, want active and null", pr.Status, pr.PRLink)
	}
	nopr := e.create("p1", "nothing to change #fake:nopr:30s")
	failed := e.create("p1", "break #fake:fail:30s")
	archived := e.create("p1", "archive me later #fake:archive:30s")
	forced := e.create("p1", "archived by hand #fake:pr:30s")

	// Active jobs are visible as such while they run.
	if v, ok := e.trk.Job("p1", pr.ID); !ok || v.Status != "active" || v.Tracking.Origin != OriginGateway {
		t.Fatalf("right after create: %+v ok=%v", v, ok)
	}
	e.tick()
	e.checkMetrics([]metricCase{
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "active"}, 5},
		{"mintlify_agent_job_oldest_active_age_seconds", []string{"project", "p1"}, cfg.PollInterval.Seconds()},
	})

	v := e.waitStatus("p1", pr.ID, "completed", 3)
	if v.PRLink == nil || !strings.Contains(*v.PRLink, "/pull/") {
		t.Errorf("completed job has prLink %v", v.PRLink)
	}
	if v.Tracking.TerminalAt == nil || !v.Tracking.TerminalAt.Equal(t0.Add(30*time.Second)) {
		t.Errorf("completed job's terminalAt: %+v", v.Tracking)
	}
	if v, _ := e.trk.Job("p1", nopr.ID); v.Status != "completed" || v.PRLink != nil {
		t.Errorf("nopr job: status %q prLink %v", v.Status, v.PRLink)
	}
	if got := e.status("p1", failed.ID); got != "failed" {
		t.Errorf("failed job: %q", got)
	}
	if err := e.fake.SetJobStatus("p1", forced.ID, "archived"); err != nil {
		t.Fatal(err)
	}
	// Archives after completion are seen by the slow re-check (every 30
	// poll intervals at first).
	if v := e.waitStatus("p1", archived.ID, "archived", 200); v.ArchivedAt == nil {
		t.Error("archived job has no archivedAt")
	}
	e.waitStatus("p1", forced.ID, "archived", 200)

	e.checkMetrics([]metricCase{
		{"mintlify_agent_jobs_submitted_total", []string{"project", "p1"}, 5},
		// pr, nopr, archive and forced all completed first.
		{"mintlify_agent_jobs_finished_total", []string{"project", "p1", "status", "completed"}, 4},
		{"mintlify_agent_jobs_finished_total", []string{"project", "p1", "status", "failed"}, 1},
		{"mintlify_agent_jobs_finished_total", []string{"project", "p1", "status", "archived"}, 2},
		{"mintlify_agent_job_pull_requests_total", []string{"project", "p1"}, 3},
		{"mintlify_agent_job_duration_seconds", []string{"project", "p1", "status", "completed"}, 4},
		{"mintlify_agent_job_duration_seconds", []string{"project", "p1", "status", "failed"}, 1},
		// The archive is not a first terminal status: no duration sample.
		{"mintlify_agent_job_duration_seconds", []string{"project", "p1", "status", "archived"}, 0},
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "active"}, 0},
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "completed"}, 2},
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "failed"}, 1},
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "archived"}, 2},
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "lost"}, 0},
		{"mintlify_agent_job_oldest_active_age_seconds", []string{"project", "p1"}, 0},
		{"mintlify_agent_jobs_lost_total", []string{"project", "p1"}, 0},
	})
	// Every job was seen terminal by the poll at 30s: createdAt plus 30s.
	if got := e.histSum("mintlify_agent_job_duration_seconds", "project", "p1", "status", "completed"); got != 4*30 {
		t.Errorf("duration sum = %v, want 120", got)
	}

	// Failed and archived jobs are polled no more; completed ones only at
	// the slow cadence (at least 30 poll intervals apart).
	before := e.fake.Requests(fakeapi.GetJob)
	e.runFor(10 * cfg.PollInterval)
	if d := e.fake.Requests(fakeapi.GetJob) - before; d > 2 {
		t.Errorf("%d get-job calls in 10 poll intervals with only finished jobs", d)
	}
}

func TestDurationWithinOnePollInterval(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	cfg := e.config()
	e.open(cfg)
	const jobDur = 75 * time.Second
	j := e.create("p1", "#fake:pr:75s")
	e.waitStatus("p1", j.ID, "completed", 10)
	if n := e.metric("mintlify_agent_job_duration_seconds", "project", "p1", "status", "completed"); n != 1 {
		t.Fatalf("histogram count = %v, want 1", n)
	}
	// The poll at 80s is the first to see the job completed.
	got := e.histSum("mintlify_agent_job_duration_seconds", "project", "p1", "status", "completed")
	if lo, hi := jobDur.Seconds(), (jobDur + cfg.PollInterval).Seconds(); got < lo || got > hi {
		t.Errorf("duration = %vs, want within [%v, %v] (the job's %s plus at most one poll interval)", got, lo, hi, jobDur)
	}
}

func TestUpstream404MeansLost(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	cfg := e.config()
	e.open(cfg)
	j := e.create("p1", "#fake:pr:1h")
	e.tick()
	if err := e.fake.ForgetJob("p1", j.ID); err != nil {
		t.Fatal(err)
	}
	v := e.waitStatus("p1", j.ID, StatusLost, 100)
	if v.Tracking.LastUpstreamStatus != "active" || v.Tracking.LastError == "" || v.Tracking.TerminalAt == nil {
		t.Errorf("lost job tracking: %+v", v.Tracking)
	}
	if got := jobIDs(e.trk.Jobs("p1", StatusLost)); !slices.Equal(got, []string{j.ID}) {
		t.Errorf("status=lost: %v", got)
	}
	e.checkMetrics([]metricCase{
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "lost"}, 1},
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "active"}, 0},
		{"mintlify_agent_jobs_lost_total", []string{"project", "p1"}, 1},
		{"mintlify_agent_job_oldest_active_age_seconds", []string{"project", "p1"}, 0},
	})
	e.noneFinished("lost job counted as finished")
	// One good poll, then lostAfter404s 404s in a row; never again.
	n := e.fake.Requests(fakeapi.GetJob)
	if n != 1+lostAfter404s {
		t.Errorf("declared lost after %d gets, want 1 + %d 404s in a row", n, lostAfter404s)
	}
	e.runFor(time.Hour)
	if d := e.fake.Requests(fakeapi.GetJob) - n; d != 0 {
		t.Errorf("lost job polled %d more times", d)
	}
}

func TestUnknownStatus(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	e.open(e.config())
	j := e.create("p1", "#fake:unknown:10s")
	e.waitStatus("p1", j.ID, "waiting_for_review", 2)
	e.checkMetrics([]metricCase{
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "waiting_for_review"}, 1},
		{"mintlify_agent_job_oldest_active_age_seconds", []string{"project", "p1"}, 10},
	})
	// Still polled, every round: not terminal.
	n := e.fake.Requests(fakeapi.GetJob)
	for range 3 {
		e.tick()
	}
	if got := e.fake.Requests(fakeapi.GetJob) - n; got != 3 {
		t.Errorf("%d polls in 3 rounds, want 3", got)
	}
	e.noneFinished("unknown status counted as finished")
	if err := e.fake.SetJobStatus("p1", j.ID, "completed"); err != nil {
		t.Fatal(err)
	}
	e.waitStatus("p1", j.ID, "completed", 1)
	e.checkMetrics([]metricCase{{"mintlify_agent_jobs_finished_total", []string{"project", "p1", "status", "completed"}, 1}})
	if _, ok := e.series("mintlify_agent_jobs")["project=p1,status=waiting_for_review"]; ok {
		t.Error("the unknown status series stays after no job has it")
	}
}

func TestRestartRecovery(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	cfg := e.config()
	e.open(cfg)
	done := e.create("p1", "#fake:pr:10s")
	failed := e.create("p1", "#fake:fail:10s")
	running := e.create("p1", "#fake:pr:60s")
	e.waitStatus("p1", done.ID, "completed", 1)
	if e.status("p1", failed.ID) != "failed" {
		t.Fatalf("failed job: %q", e.status("p1", failed.ID))
	}
	e.checkMetrics([]metricCase{{"mintlify_agent_jobs_finished_total", []string{"project", "p1", "status", "completed"}, 1}})

	// Restart on the same state file, as a new process would.
	e.open(cfg)
	if v, ok := e.trk.Job("p1", done.ID); !ok || v.Status != "completed" || v.PRLink == nil {
		t.Errorf("finished job after restart: %+v %v", v, ok)
	}
	if got := e.status("p1", running.ID); got != "active" {
		t.Errorf("running job after restart: %q", got)
	}
	e.checkMetrics([]metricCase{{"mintlify_agent_jobs", []string{"project", "p1", "status", "completed"}, 1}})
	e.waitStatus("p1", running.ID, "completed", 6)
	e.checkMetrics([]metricCase{
		// Only the job that finished after the restart counts in the new process.
		{"mintlify_agent_jobs_finished_total", []string{"project", "p1", "status", "completed"}, 1},
		{"mintlify_agent_jobs_finished_total", []string{"project", "p1", "status", "failed"}, 0},
		{"mintlify_agent_job_pull_requests_total", []string{"project", "p1"}, 1},
		{"mintlify_agent_job_duration_seconds", []string{"project", "p1", "status", "completed"}, 1},
		{"mintlify_agent_jobs_submitted_total", []string{"project", "p1"}, 0},
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "completed"}, 2},
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "failed"}, 1},
	})

	// A third start: everything terminal, nothing counted, even after the
	// archive re-checks.
	e.open(cfg)
	e.runFor(2 * time.Hour)
	e.noneFinished("counted again after restart")
}

func TestStateFileLocked(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	cfg := e.config()
	e.open(cfg)
	if _, err := New(e.client, nil, cfg, nil); err == nil || !strings.Contains(err.Error(), "locked") {
		t.Errorf("second Tracker on the same state file: err = %v, want locked", err)
	}
}

func TestConcurrentCreates(t *testing.T) {
	t.Parallel()
	// 200 creates at once over two projects: the API's limit is 100 per
	// hour per project.
	e := newEnv(t, fakeapi.Options{})
	trk := e.open(e.config("p1", "p2"))
	var (
		mu  sync.Mutex
		ids = map[string]string{}
		wg  sync.WaitGroup
	)
	for i := range 200 {
		project := []string{"p1", "p2"}[i%2]
		wg.Go(func() {
			c, err := trk.Create(context.Background(), CreateRequest{Project: project, Prompt: fmt.Sprintf("job %d #fake:pr:30s", i)})
			j := c.Job
			if err != nil {
				t.Errorf("create %d: %v", i, err)
				return
			}
			mu.Lock()
			ids[j.ID] = project
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(ids) != 200 {
		t.Fatalf("%d distinct jobs created, want 200", len(ids))
	}
	// Every created job is in the state file already.
	if n, err := trk.store.Len(); err != nil || n != 200 {
		t.Errorf("state file holds %d jobs (%v), want 200", n, err)
	}
	e.runFor(30 * time.Second)
	for _, p := range []string{"p1", "p2"} {
		e.checkMetrics([]metricCase{
			{"mintlify_agent_jobs", []string{"project", p, "status", "completed"}, 100},
			{"mintlify_agent_jobs_submitted_total", []string{"project", p}, 100},
			{"mintlify_agent_jobs_finished_total", []string{"project", p, "status", "completed"}, 100},
			{"mintlify_agent_job_pull_requests_total", []string{"project", p}, 100},
		})
	}
	for id, p := range ids {
		if got := e.status(p, id); got != "completed" {
			t.Errorf("job %s/%s: %q", p, id, got)
		}
	}
}

func TestTrack(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	trk := e.open(e.config())
	ctx := t.Context()
	elsewhere, err := e.client.CreateJob(ctx, "p1", "made elsewhere #fake:pr:30s")
	if err != nil {
		t.Fatal(err)
	}
	gets := e.fake.Requests(fakeapi.GetJob)
	v, res, err := trk.Track(ctx, "p1", elsewhere.ID)
	if err != nil || res != NewlyTracked || v.Tracking.Origin != OriginTrack || v.Status != "active" {
		t.Fatalf("track: %+v %v %v", v, res, err)
	}
	if d := e.fake.Requests(fakeapi.GetJob) - gets; d != 1 {
		t.Errorf("track made %d get requests, want 1", d)
	}
	// Tracking again is a no-op.
	if _, res, err := trk.Track(ctx, "p1", elsewhere.ID); err != nil || res != AlreadyTracked {
		t.Errorf("track again: %v %v", res, err)
	}
	if d := e.fake.Requests(fakeapi.GetJob) - gets; d != 1 {
		t.Errorf("track again made a request")
	}
	// Unknown upstream: the API's 404, nothing tracked.
	_, _, err = trk.Track(ctx, "p1", "job_999999")
	if apiclient.StatusCode(err) != http.StatusNotFound {
		t.Errorf("track unknown: %v, want the API's 404", err)
	}
	if _, ok := trk.Job("p1", "job_999999"); ok {
		t.Error("unknown job got tracked")
	}

	// A job that already finished elsewhere is tracked but not counted.
	finished, err := e.client.CreateJob(ctx, "p1", "#fake:fail:1s")
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * time.Second)
	if v, res, err := trk.Track(ctx, "p1", finished.ID); err != nil || res != NewlyTracked || v.Status != "failed" {
		t.Fatalf("track finished: %+v %v %v", v, res, err)
	}

	e.waitStatus("p1", elsewhere.ID, "completed", 3)
	e.checkMetrics([]metricCase{
		{"mintlify_agent_jobs_finished_total", []string{"project", "p1", "status", "completed"}, 1},
		{"mintlify_agent_jobs_finished_total", []string{"project", "p1", "status", "failed"}, 0},
		{"mintlify_agent_job_pull_requests_total", []string{"project", "p1"}, 1},
		{"mintlify_agent_jobs_submitted_total", []string{"project", "p1"}, 0},
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "failed"}, 1},
	})
}

func TestPollBackoff(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	cfg := e.config()
	e.open(cfg)
	j := e.create("p1", "#fake:pr:10s")
	e.fake.SetFault(fakeapi.GetJob, fakeapi.Fault{Status: 503})
	e.runFor(40 * cfg.PollInterval)
	// Without backoff: 40. With waits doubling from one poll interval
	// (±20%), polls land at about 10s, 20s, 40s, 80s, 160s and 320s: 6, and
	// between 4 and 7 whatever the jitter.
	if n := e.fake.Requests(fakeapi.GetJob); n < 4 || n > 7 {
		t.Errorf("%d polls in 40 poll intervals of errors, want backoff (about 6)", n)
	}
	v, _ := e.trk.Job("p1", j.ID)
	if v.Status != "active" || !strings.Contains(v.Tracking.LastError, "503") {
		t.Errorf("job during errors: status %q lastError %q", v.Status, v.Tracking.LastError)
	}
	e.fake.ClearFaults()
	v = e.waitStatus("p1", j.ID, "completed", 60)
	if v.Tracking.LastError != "" {
		t.Errorf("lastError not cleared: %q", v.Tracking.LastError)
	}
}

func TestRetention(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	cfg := e.config()
	cfg.Retention = time.Hour
	trk := e.open(cfg)
	j := e.create("p1", "#fake:fail:10s")
	keep := e.create("p1", "#fake:pr:100h")
	e.waitStatus("p1", j.ID, "failed", 1)
	e.clock.Advance(time.Hour - cfg.PollInterval)
	e.tick()
	if _, ok := trk.Job("p1", j.ID); ok {
		t.Error("failed job kept past retention")
	}
	if n, _ := trk.store.Len(); n != 1 {
		t.Errorf("state file holds %d jobs, want 1", n)
	}
	if _, ok := trk.Job("p1", keep.ID); !ok {
		t.Error("active job forgotten")
	}
	e.checkMetrics([]metricCase{
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "failed"}, 0},
		// Counters keep counting.
		{"mintlify_agent_jobs_finished_total", []string{"project", "p1", "status", "failed"}, 1},
	})
}

func TestArchiveWatchZeroDisablesIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	cfg := e.config()
	cfg.ArchiveWatch = 0
	e.open(cfg)
	j := e.create("p1", "#fake:pr:10s")
	e.waitStatus("p1", j.ID, "completed", 1)
	n := e.fake.Requests(fakeapi.GetJob)
	e.runFor(3 * time.Hour)
	if d := e.fake.Requests(fakeapi.GetJob) - n; d != 0 {
		t.Errorf("completed job re-checked %d times with the archive watch off", d)
	}
	if v, _ := e.trk.Job("p1", j.ID); v.Tracking.NextCheckAt != nil {
		t.Errorf("nextCheckAt %v with the archive watch off", v.Tracking.NextCheckAt)
	}
}

func TestJobsNewestFirstAndFiltered(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	trk := e.open(e.config("p1", "p2"))
	var ids []string
	for i := range 3 {
		ids = append(ids, e.create("p1", fmt.Sprintf("job %d #fake:pr:1h", i)).ID)
		e.clock.Advance(time.Second) // distinct createdAt
	}
	failed := e.create("p1", "#fake:fail:1s")
	e.create("p2", "other project")
	e.waitStatus("p1", failed.ID, "failed", 1)
	if got := jobIDs(trk.Jobs("p1", "")); !slices.Equal(got, []string{failed.ID, ids[2], ids[1], ids[0]}) {
		t.Errorf("jobs not newest first: %v", got)
	}
	if got := jobIDs(trk.Jobs("p1", "active")); !slices.Equal(got, []string{ids[2], ids[1], ids[0]}) {
		t.Errorf("status=active: %v", got)
	}
	if got := trk.Jobs("p1", "archived"); len(got) != 0 {
		t.Errorf("status=archived: %v", jobIDs(got))
	}
}

func TestRecentCreates(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	trk := e.open(e.config("p1", "p2"))
	e.create("p1", "old")
	e.clock.Advance(30 * time.Minute)
	a := e.create("p1", "a")
	e.clock.Advance(time.Minute)
	b := e.create("p2", "b")
	elsewhere, err := e.client.CreateJob(t.Context(), "p1", "elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := trk.Track(t.Context(), "p1", elsewhere.ID); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(30 * time.Minute)
	got := trk.RecentCreates(time.Hour)
	if len(got) != 2 || !slices.Equal(got["p1"], []time.Time{a.CreatedAt}) || !slices.Equal(got["p2"], []time.Time{b.CreatedAt}) {
		t.Errorf("recent creates = %v, want p1 %v and p2 %v only (the hour's gateway creates)", got, a.CreatedAt, b.CreatedAt)
	}
}

// TestRunPollsUntilCancelled runs the real ticker: the only test on the
// wall clock, with no bound on how fast the machine is.
func TestRunPollsUntilCancelled(t *testing.T) {
	t.Parallel()
	fake := fakeapi.New(fakeapi.Options{APIKey: testKey})
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	client, err := apiclient.New(apiclient.Config{BaseURL: srv.URL, APIKey: testKey, MaxRetries: 0})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Defaults()
	cfg.Projects = []string{"p1"}
	cfg.StatePath = filepath.Join(t.TempDir(), "agent.db")
	cfg.PollInterval = 10 * time.Millisecond
	trk, err := New(client, nil, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := trk.Create(t.Context(), CreateRequest{Project: "p1", Prompt: "#fake:fail:1ms"})
	j := c.Job
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- trk.Run(ctx) }()
	var v JobView
	testutil.Eventually(t, 0, "Run to poll the job to its end", func() bool {
		v, _ = trk.Job("p1", j.ID)
		return v.Status == "failed"
	}, func() string { return fmt.Sprintf("job still %q", v.Status) })
	if err := trk.Run(ctx); err == nil {
		t.Error("a second Run did not fail")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	if err := trk.Close(); err != nil {
		t.Error(err)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	good := Defaults()
	good.Projects = []string{"p1", "p2"}
	if err := good.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	off := good
	off.ArchiveWatch = 0
	if err := off.Validate(); err != nil {
		t.Errorf("ArchiveWatch 0 (off): %v", err)
	}
	for field, mutate := range map[string]func(*Config){
		"Projects":           func(c *Config) { c.Projects = []string{"p1", "p1"} },
		"PollInterval":       func(c *Config) { c.PollInterval = time.Millisecond },
		"MaxConcurrentPolls": func(c *Config) { c.MaxConcurrentPolls = 0 },
		"ArchiveWatch":       func(c *Config) { c.ArchiveWatch = -time.Second },
		"Retention":          func(c *Config) { c.Retention = 0 },
		"StatePath":          func(c *Config) { c.StatePath = "" },
		"LockTimeout":        func(c *Config) { c.LockTimeout = 0 },
		"PollTimeout":        func(c *Config) { c.PollTimeout = 0 },
	} {
		c := good
		mutate(&c)
		var fe *config.FieldError
		if err := c.Validate(); !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("bad %s: %v", field, err)
		}
	}
}
