package kinds_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

// gatedUpstream is the env's client with creates that can be held (gate)
// or failed with a transport error (netErr), and counted.
type gatedUpstream struct {
	*apiclient.Client
	mu      sync.Mutex
	gate    chan struct{} // when not nil, creates wait for it to close
	started chan struct{} // a create reached the gate
	netErr  bool
	creates atomic.Int64
}

func (g *gatedUpstream) CreateJobWithStatus(ctx context.Context, project, prompt string) (*apiclient.Job, int, error) {
	g.creates.Add(1)
	g.mu.Lock()
	gate, started, netErr := g.gate, g.started, g.netErr
	g.mu.Unlock()
	if netErr {
		return nil, 0, &net.OpError{Op: "read", Net: "tcp", Err: io.ErrUnexpectedEOF}
	}
	if gate != nil {
		started <- struct{}{}
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
	}
	return g.Client.CreateJobWithStatus(ctx, project, prompt)
}

func (g *gatedUpstream) hold() (release func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gate, g.started = make(chan struct{}), make(chan struct{}, 16)
	gate := g.gate
	return func() {
		g.mu.Lock()
		g.gate = nil
		g.mu.Unlock()
		close(gate)
	}
}

// openWith starts a Tracker on cfg with api as its upstream.
func (e *env) openWith(cfg Config, api upstream) *Tracker {
	e.t.Helper()
	e.close()
	e.reg = prometheus.NewPedanticRegistry()
	trk, err := newTracker(api, e.reg, cfg, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	e.trk = trk
	return trk
}

func (e *env) keyed(project, key, prompt string) (Created, error) {
	return e.trk.Create(context.Background(), CreateRequest{Project: project, Prompt: prompt, IdempotencyKey: key})
}

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	cfg := e.config("p1", "p2")
	cfg.Retention = time.Hour
	e.open(cfg)
	creates := func() int64 { return e.fake.Requests(fakeapi.CreateJob) }

	first, err := e.keyed("p1", "order-42", "fix the typo #fake:nopr:1m")
	if err != nil || first.Replayed || first.Status != http.StatusCreated && first.Status != http.StatusOK {
		t.Fatalf("first: %+v %v", first, err)
	}
	again, err := e.keyed("p1", "order-42", "fix the typo #fake:nopr:1m")
	if err != nil || !again.Replayed || again.Job.ID != first.Job.ID || again.Status != first.Status {
		t.Fatalf("same key, same body: %+v %v (first %+v)", again, err, first)
	}
	if _, err := e.keyed("p1", "order-42", "something else"); !errors.Is(err, ErrIdempotencyKeyReused) {
		t.Fatalf("same key, other body: %v", err)
	}
	if n := creates(); n != 1 {
		t.Fatalf("%d creates upstream, want 1", n)
	}
	// Keys are per project; no key is today's behaviour.
	other, err := e.keyed("p2", "order-42", "fix the typo #fake:nopr:1m")
	if err != nil || other.Replayed || other.Job.ID == first.Job.ID {
		t.Fatalf("other project: %+v %v", other, err)
	}
	e.create("p1", "no key")
	e.create("p1", "no key")
	if n := creates(); n != 4 {
		t.Fatalf("%d creates upstream, want 4", n)
	}

	// A restart (the key is in the state file with its job).
	e.open(cfg)
	again, err = e.keyed("p1", "order-42", "fix the typo #fake:nopr:1m")
	if err != nil || !again.Replayed || again.Job.ID != first.Job.ID || again.Status != first.Status {
		t.Fatalf("after restart: %+v %v", again, err)
	}
	if _, err := e.keyed("p1", "order-42", "something else"); !errors.Is(err, ErrIdempotencyKeyReused) {
		t.Fatalf("after restart, other body: %v", err)
	}
	if n := creates(); n != 4 {
		t.Fatalf("%d creates upstream after the restart, want 4", n)
	}
	// The key lives as long as its job: once the job is forgotten past
	// retention, the key creates a new job.
	e.waitStatus("p1", first.Job.ID, apiclient.StatusCompleted, 20)
	e.runFor(cfg.Retention + time.Minute)
	if e.status("p1", first.Job.ID) != "" {
		t.Fatal("job not forgotten past retention")
	}
	fresh, err := e.keyed("p1", "order-42", "fix the typo #fake:nopr:1m")
	if err != nil || fresh.Replayed || fresh.Job.ID == first.Job.ID {
		t.Fatalf("after retention: %+v %v", fresh, err)
	}
	// Invalid keys are refused before anything happens.
	for _, k := range []string{strings.Repeat("k", 256), "tab\there", "é"} {
		if _, err := e.keyed("p1", k, "x"); err == nil {
			t.Errorf("key %q accepted", k)
		}
	}
}

func TestIdempotencyKeyInFlight(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	up := &gatedUpstream{Client: e.client}
	e.openWith(e.config(), up)
	release := up.hold()
	done := make(chan error, 1)
	go func() {
		_, err := e.keyed("p1", "k1", "prompt")
		done <- err
	}()
	<-up.started
	if _, err := e.keyed("p1", "k1", "prompt"); !errors.Is(err, ErrIdempotencyKeyInFlight) {
		t.Errorf("while in flight: %v", err)
	}
	if _, err := e.keyed("p1", "k1", "another prompt"); !errors.Is(err, ErrIdempotencyKeyReused) {
		t.Errorf("other body while in flight: %v", err)
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := up.creates.Load(); n != 1 {
		t.Errorf("%d creates upstream, want 1", n)
	}
	if c, err := e.keyed("p1", "k1", "prompt"); err != nil || !c.Replayed {
		t.Errorf("after: %+v %v", c, err)
	}
}

// crashDuringCreate holds a keyed create upstream and copies the state file
// meanwhile: the copy is what a kill -9 at that moment leaves behind.
func crashDuringCreate(t *testing.T, e *env, key, prompt string) (crashed string) {
	t.Helper()
	up := &gatedUpstream{Client: e.client}
	e.openWith(e.config(), up)
	release := up.hold()
	done := make(chan error, 1)
	go func() {
		_, err := e.keyed("p1", key, prompt)
		done <- err
	}()
	<-up.started
	data, err := os.ReadFile(e.statePath)
	if err != nil {
		t.Fatal(err)
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	crashed = filepath.Join(t.TempDir(), "crashed.db")
	if err := os.WriteFile(crashed, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return crashed
}

func TestCreateOfUnknownOutcomeAfterACrash(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	prompt := strings.Repeat("Document the new billing API. ", 10)
	crashed := crashDuringCreate(t, e, "retry-me", prompt)
	// The job was created upstream (the fake has it), but the crashed
	// file holds only the intent.
	jobs := e.trk.Jobs("p1", "")
	if len(jobs) != 1 {
		t.Fatalf("%d jobs", len(jobs))
	}
	jobID := jobs[0].ID
	e.close()

	cfg := e.config()
	cfg.StatePath = crashed
	e.open(cfg)
	unknown := e.trk.UnknownCreates("p1")
	if len(unknown) != 1 {
		t.Fatalf("unknown creates: %+v", unknown)
	}
	u := unknown[0]
	if u.IdempotencyKey != "retry-me" || !strings.HasPrefix(u.PromptExcerpt, "Document the new billing API.") ||
		len([]rune(u.PromptExcerpt)) > promptExcerptLen+1 || !u.StartedAt.Equal(t0) || u.Project != "p1" {
		t.Errorf("unknown create: %+v", u)
	}
	e.checkMetrics([]metricCase{{"mintlify_agent_create_unknown_outcomes", []string{"project", "p1"}, 1}})
	before := e.fake.Requests(fakeapi.CreateJob)

	// A retry with the key: never a silent duplicate.
	_, err := e.keyed("p1", "retry-me", prompt)
	var oe *OutcomeUnknownError
	if !errors.As(err, &oe) || oe.Intent != u.ID || oe.Err != nil ||
		!strings.Contains(err.Error(), "/unknown-creates/"+u.ID) || !strings.Contains(err.Error(), "track?intent="+u.ID) {
		t.Fatalf("retry: %v", err)
	}
	if _, err := e.keyed("p1", "retry-me", "other"); !errors.Is(err, ErrIdempotencyKeyReused) {
		t.Errorf("retry with another body: %v", err)
	}
	if n := e.fake.Requests(fakeapi.CreateJob); n != before {
		t.Fatalf("retries sent %d creates", n-before)
	}
	if err := e.trk.DismissIntent("p1", "ci_nope"); !errors.Is(err, ErrNoSuchIntent) {
		t.Errorf("dismiss unknown id: %v", err)
	}

	// The operator finds the job and tracks it with the intent.
	v, _, err := e.trk.ResolveIntent(context.Background(), "p1", u.ID, jobID)
	if err != nil || v.ID != jobID {
		t.Fatalf("resolve: %+v %v", v, err)
	}
	e.checkMetrics([]metricCase{{"mintlify_agent_create_unknown_outcomes", []string{"project", "p1"}, 0}})
	// ... and survives a restart: the key now replays the job.
	e.open(cfg)
	if n := len(e.trk.UnknownCreates("p1")); n != 0 {
		t.Errorf("%d unknown creates after resolving and a restart", n)
	}
	c, err := e.keyed("p1", "retry-me", prompt)
	if err != nil || !c.Replayed || c.Job.ID != jobID {
		t.Fatalf("retry after resolve: %+v %v", c, err)
	}
	if n := e.fake.Requests(fakeapi.CreateJob); n != before {
		t.Fatalf("sent %d creates", n-before)
	}
}

func TestDismissFreesTheKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	crashed := crashDuringCreate(t, e, "k", "p")
	cfg := e.config()
	cfg.StatePath = crashed
	e.open(cfg)
	u := e.trk.UnknownCreates("p1")
	if len(u) != 1 {
		t.Fatalf("%+v", u)
	}
	if err := e.trk.DismissIntent("p1", u[0].ID); err != nil {
		t.Fatal(err)
	}
	e.open(cfg)
	if n := len(e.trk.UnknownCreates("p1")); n != 0 {
		t.Fatalf("%d unknown after dismiss and restart", n)
	}
	c, err := e.keyed("p1", "k", "p")
	if err != nil || c.Replayed {
		t.Fatalf("after dismiss: %+v %v", c, err)
	}
}

func TestCreateFailuresAndTheirIntents(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	up := &gatedUpstream{Client: e.client}
	e.openWith(e.config(), up)

	// The API answered an error: nothing was created, the intent goes.
	e.fake.SetFault(fakeapi.CreateJob, fakeapi.Fault{Status: 400, Remaining: 1})
	if _, err := e.keyed("p1", "k400", "x"); apiclient.StatusCode(err) != 400 {
		t.Fatalf("400: %v", err)
	}
	if u := e.trk.UnknownCreates("p1"); len(u) != 0 {
		t.Fatalf("unknown after a 400: %+v", u)
	}
	if c, err := e.keyed("p1", "k400", "x"); err != nil || c.Replayed {
		t.Fatalf("key after a 400 is free: %+v %v", c, err)
	}

	// A transport error does not say whether the API created the job.
	up.mu.Lock()
	up.netErr = true
	up.mu.Unlock()
	_, err := e.keyed("p1", "knet", "y")
	var oe *OutcomeUnknownError
	if !errors.As(err, &oe) || oe.Err == nil {
		t.Fatalf("transport error: %v", err)
	}
	if u := e.trk.UnknownCreates("p1"); len(u) != 1 || u[0].IdempotencyKey != "knet" {
		t.Fatalf("unknown: %+v", u)
	}
	if _, err := e.keyed("p1", "knet", "y"); !errors.As(err, &oe) || oe.Err != nil {
		t.Fatalf("retry: %v", err)
	}
	e.open(e.config())
	if u := e.trk.UnknownCreates("p1"); len(u) != 1 {
		t.Fatalf("unknown after restart: %+v", u)
	}
}

// failingStore fails the writes it is told to.
type failingStore struct {
	stateStore
	failIntents, failJobs atomic.Bool
	// failDeployments fails the writes of deployments.
	failDeployments atomic.Bool
	failed          atomic.Int64
}

func (f *failingStore) Apply(ops ...store.Op) error {
	for _, op := range ops {
		if (op.Bucket == bucketIntents && op.Value != nil && f.failIntents.Load()) || (op.Bucket == store.Jobs && f.failJobs.Load()) ||
			(op.Bucket == bucketDeployments && f.failDeployments.Load()) {
			f.failed.Add(1)
			return fmt.Errorf("write %s: %w", f.Path(), os.ErrPermission)
		}
	}
	return f.stateStore.Apply(ops...)
}

// TestWriteErrorsKeepJobsAndRetry checks what docs/agent-gateway.md promises: a job
// whose state cannot be written is kept in memory and written again, and a
// create whose intent cannot be written is not sent.
func TestWriteErrorsKeepJobsAndRetry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	cfg := e.config()
	trk := e.open(cfg)
	fs := &failingStore{stateStore: trk.store.get()}
	trk.store.set(fs)

	// Intent not writable: 503-worthy, nothing sent.
	fs.failIntents.Store(true)
	before := e.fake.Requests(fakeapi.CreateJob)
	_, err := e.keyed("p1", "k", "#fake:nopr:1m")
	var ie *IntentError
	if !errors.As(err, &ie) || e.fake.Requests(fakeapi.CreateJob) != before {
		t.Fatalf("intent write failed: %v, %d sent", err, e.fake.Requests(fakeapi.CreateJob)-before)
	}
	// It names the store that refused (a file, or the shared Redis), not
	// "the state file" whatever the store (issue 46 §3).
	if ie.Store != fs.Path() || !strings.Contains(err.Error(), "the state "+fs.Path()) {
		t.Errorf("intent write failed: %q names store %q, want %q", err, ie.Store, fs.Path())
	}
	if c, err := e.keyed("p1", "k", "other"); err == nil || errors.Is(err, ErrIdempotencyKeyReused) {
		t.Fatalf("the key was kept after a refused create: %+v %v", c, err)
	}
	fs.failIntents.Store(false)

	// Job not writable: created upstream, kept in memory, written later.
	fs.failJobs.Store(true)
	_, err = e.keyed("p1", "k", "#fake:nopr:1m")
	var se *StateError
	if !errors.As(err, &se) {
		t.Fatalf("job write failed: %v", err)
	}
	id := se.ID
	if e.status("p1", id) != apiclient.StatusActive {
		t.Fatalf("job not tracked in memory: %q", e.status("p1", id))
	}
	// A retry with the key is answered as the create was, naming the same
	// job and sending nothing: never acknowledged while the job is in
	// memory alone (a restart, or another replica taking the gateway over,
	// would not know it).
	sent := e.fake.Requests(fakeapi.CreateJob)
	if c, err := e.keyed("p1", "k", "#fake:nopr:1m"); !errors.As(err, &se) || se.ID != id || c.Replayed || e.fake.Requests(fakeapi.CreateJob) != sent {
		t.Fatalf("replay of an unsaved job: %+v %v, %d sent; want its state error, nothing sent", c, err, e.fake.Requests(fakeapi.CreateJob)-sent)
	}
	// Polls go on while writes fail; the completion is seen but not
	// counted before it is written.
	e.runFor(2 * time.Minute)
	if e.status("p1", id) != apiclient.StatusActive {
		t.Errorf("status moved on without being written: %q", e.status("p1", id))
	}
	e.noneFinished("counted before written")
	if got := e.metric("mintlify_agent_state_write_errors_total"); got < 2 {
		t.Errorf("write errors counted: %v", got)
	}
	fs.failJobs.Store(false)
	e.tick()
	if e.status("p1", id) != apiclient.StatusCompleted {
		v, _ := e.trk.Job("p1", id)
		t.Fatalf("not written after the store recovered: %+v", v)
	}
	e.checkMetrics([]metricCase{{"mintlify_agent_jobs_finished_total", []string{"project", "p1", "status", "completed"}, 1}})
	if c, err := e.keyed("p1", "k", "#fake:nopr:1m"); err != nil || !c.Replayed || c.Job.ID != id {
		t.Errorf("replay once the job is written: %+v %v", c, err)
	}

	// After a restart: the job, its key, and no intent left behind.
	e.open(cfg)
	if e.status("p1", id) != apiclient.StatusCompleted {
		t.Errorf("after restart: %q", e.status("p1", id))
	}
	if u := e.trk.UnknownCreates("p1"); len(u) != 0 {
		t.Errorf("intent left behind: %+v", u)
	}
	if c, err := e.keyed("p1", "k", "#fake:nopr:1m"); err != nil || !c.Replayed || c.Job.ID != id {
		t.Errorf("replay after restart: %+v %v", c, err)
	}
}

// TestCreateWithAReusedID: an API that hands out the id of a job tracked
// from before (the sandbox did across restarts) never gets a success
// answered for a job that is not tracked: a finished old record is
// replaced by the new job, a running one makes the create fail, listed
// with the creates of unknown outcome.
func TestCreateWithAReusedID(t *testing.T) {
	t.Parallel()
	first := newEnv(t, fakeapi.Options{})
	first.open(first.config())
	running := first.create("p1", "#fake:pr:10h")
	old, err := first.keyed("p1", "old-key", "#fake:pr:1m")
	if err != nil {
		t.Fatal(err)
	}
	first.waitStatus("p1", old.Job.ID, apiclient.StatusCompleted, 10)
	first.close()

	// A new API whose ids start over, on the same state file.
	e := newEnv(t, fakeapi.Options{})
	e.statePath = first.statePath
	e.clock.Set(first.clock.Now().Add(time.Hour))
	e.open(e.config())

	// The first id is the running job's: not tracked, not a success.
	_, err = e.keyed("p1", "", "#fake:pr:1m")
	var collision *IDCollisionError
	if !errors.As(err, &collision) || collision.ID != running.ID {
		t.Fatalf("create with a running job's id: %v, want an IDCollisionError", err)
	}
	if u := e.trk.UnknownCreates("p1"); len(u) != 1 || u[0].ID != collision.Intent {
		t.Errorf("unknown creates %+v, want the colliding create listed", u)
	}
	if v, _ := e.trk.Job("p1", running.ID); !v.CreatedAt.Equal(running.CreatedAt) || v.Status != apiclient.StatusActive {
		t.Errorf("the running job's record changed: %+v", v)
	}

	// The second is the finished job's: replaced by the new job.
	c, err := e.keyed("p1", "new-key", "#fake:fail:1m")
	if err != nil || c.Job.ID != old.Job.ID {
		t.Fatalf("create: %+v %v, want job %s again", c, err, old.Job.ID)
	}
	v, ok := e.trk.Job("p1", old.Job.ID)
	if !ok || v.Status != apiclient.StatusActive || !v.CreatedAt.Equal(c.Job.CreatedAt) || v.Tracking.TerminalAt != nil {
		t.Fatalf("tracked: %+v, want the new job", v)
	}
	e.waitStatus("p1", old.Job.ID, apiclient.StatusFailed, 20)
	e.checkMetrics([]metricCase{
		{"mintlify_agent_jobs_finished_total", []string{"project", "p1", "status", "failed"}, 1},
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "failed"}, 1},
	})
	// The old job's key went with it; the new one replays.
	if r, err := e.keyed("p1", "new-key", "#fake:fail:1m"); err != nil || !r.Replayed {
		t.Errorf("retry with the new key: %+v %v", r, err)
	}
	if _, err := e.keyed("p1", "old-key", "#fake:pr:1m"); err != nil {
		t.Errorf("the replaced job's key is free again: %v", err)
	}
	// After a restart too.
	e.close()
	e.open(e.config())
	if v, _ := e.trk.Job("p1", old.Job.ID); v.Status != apiclient.StatusFailed || !v.CreatedAt.Equal(c.Job.CreatedAt) {
		t.Errorf("after a restart: %+v, want the new job", v)
	}
}
