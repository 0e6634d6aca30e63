// Package tracker is the engine that follows operations of every kind
// (agent jobs, deployments: Kinds) to their end. It starts them (for the
// gateway) and follows those started elsewhere, polls every one not final,
// keeps each one's state crash-safely in its kind's record format in a
// bbolt file (package store) or Redis, and owns the metrics that describe
// what it sees. A kind's own code is in its kind_<name>*.go files; the
// engine's (rounds, intents, state, limits, handover) names no kind. It
// knows no HTTP routes: internal/ops/gateway serves it.
//
// Counting rules, which hold within a process and across restarts:
//   - a create intent is written (fsync) before a create is sent upstream,
//     so a create whose answer a crash hides is reported (UnknownCreates)
//     rather than forgotten; an Idempotency-Key is kept with its job, so a
//     retry with it never creates a second job (kind_job.go);
//   - a job's state is written (fsync) before Create returns it, so a job
//     whose creation was acknowledged is never lost;
//   - a terminal transition is written before it is counted, and the
//     statuses already counted are part of the written state, so a crash
//     between the two under-counts by one but never counts twice, and jobs
//     that were terminal before a restart are not counted again;
//   - it is counted under the lock that makes it visible, so whoever reads
//     a job terminal (Job, Jobs, the jobs gauge) reads it counted.
package tracker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

// upstream is the part of *apiclient.Client the tracker uses.
type upstream interface {
	CreateJobWithStatus(ctx context.Context, project, prompt string) (*apiclient.Job, int, error)
	GetJob(ctx context.Context, project, id string) (*apiclient.Job, error)
	SendMessage(ctx context.Context, project, id, prompt string) (*apiclient.Job, int, error)
	ThrottledUntil(endpoint string) time.Time
}

// StateStore is the part of *store.Store the tracker uses: the bbolt file,
// or the shared Redis of replicas (tests inject a failing one).
type StateStore = stateStore

type stateStore interface {
	Apply(ops ...store.Op) error
	ForEachIn(bucket string, fn func(key, value []byte) error) error
	Len() (int, error)
	Path() string
	CheckFile() error
	Replaced() bool
	Stalled() bool
	Close() error
}

// Tracker is the agent job tracker with its state store and metrics.
type Tracker struct {
	cfg     Config
	api     upstream
	store   stateStore
	metrics *metrics
	logger  log.Logger

	mu sync.RWMutex
	// projects are the projects followed (cfg.Projects, and those a
	// reload added: AddProjects), as a set and in order.
	projects    map[string]bool
	projectList []string
	entries     map[string]*entry // by storeKey
	// intents are the creates under way and those of unknown outcome, by
	// storeKey(project, intent id).
	intents map[string]*intent
	// keys are the idempotency keys in use, by storeKey(project, key):
	// of jobs, follow-ups and deployments alike.
	keys map[string]keyRef
	// deployAPI is api's deployment endpoints (nil: it has none).
	deployAPI DeploymentUpstream
	// deploys are the followed deployments, by storeKey(project, status
	// id); deployIntents the triggers under way or of unknown outcome.
	deploys       map[string]*deployEntry
	deployIntents map[string]*deployIntent
	deployOps     *deployments
	// exportAPI is api's static export endpoints (nil: it has none);
	// exports the followed exports by storeKey(project, job id),
	// exportIntents the starts under way or of unknown outcome.
	exportAPI     ExportUpstream
	exports       map[string]*exportEntry
	exportIntents map[string]*exportIntent
	exportOps     *exports
	// autoAPI is api's automation trigger (nil: it has none); autos the
	// automation runs by storeKey(project, run id), autoIntents the
	// triggers under way or of unknown outcome.
	autoAPI     AutomationUpstream
	autos       map[string]*autoEntry
	autoIntents map[string]*autoIntent
	autoOps     *automations
	// kinds are the engine's parts of the kinds (Kinds), in order.
	kinds []kindEngine

	// wmu serializes the writes that derive a job's record from the one in
	// memory (polls, follow-ups), so that none writes an older turn over a
	// newer one. bbolt serializes writes anyway, so this costs no
	// throughput.
	wmu sync.Mutex

	running atomic.Bool
	// fileReplaced is what checkStateFile last logged.
	fileReplaced atomic.Bool
	// inflight counts creates and tracks under way: they outlive their HTTP
	// request (an upstream create must be recorded even if the client hangs
	// up), so Close waits for them before closing the store.
	inflight sync.WaitGroup
}

// New validates cfg, opens (or creates) the state file, loads the tracked
// jobs and registers the metrics with reg (when not nil). It fails when the
// state file cannot be opened (unreadable, locked by another process,
// unknown layout). Polling starts with Run.
func New(api Upstream, reg prometheus.Registerer, cfg Config, logger log.Logger) (*Tracker, error) {
	if api == nil || (reflect.ValueOf(api).Kind() == reflect.Pointer && reflect.ValueOf(api).IsNil()) {
		return nil, errors.New("tracker: nil API client")
	}
	return newTracker(api, reg, cfg, logger)
}

// Upstream is the API the tracker calls: an *apiclient.Client, or one
// that picks each project's organization's client.
type Upstream = upstream

func newTracker(api upstream, reg prometheus.Registerer, cfg Config, logger log.Logger) (*Tracker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("tracker config: %w", err)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if logger == nil {
		logger = log.NewNopLogger()
	}
	st := cfg.Store
	if st == nil {
		var err error
		if st, err = store.Open(cfg.StatePath, storeOptions(&cfg)); err != nil {
			return nil, err
		}
	}
	s := &Tracker{
		cfg:      cfg,
		api:      api,
		store:    st,
		logger:   logger,
		projects: map[string]bool{},
		entries:  map[string]*entry{},
		intents:  map[string]*intent{},
		keys:     map[string]keyRef{},

		deploys:       map[string]*deployEntry{},
		deployIntents: map[string]*deployIntent{},
		exports:       map[string]*exportEntry{},
		exportIntents: map[string]*exportIntent{},
		autos:         map[string]*autoEntry{},
		autoIntents:   map[string]*autoIntent{},
	}
	s.deployAPI, _ = api.(DeploymentUpstream)
	s.exportAPI = exportUpstream(api)
	s.autoAPI, _ = api.(AutomationUpstream)
	s.deployOps, s.exportOps, s.autoOps = newDeployments(s), newExports(s), newAutomations(s)
	for _, k := range Kinds() {
		s.kinds = append(s.kinds, k.engine(s))
	}
	for _, p := range cfg.Projects {
		s.projects[p] = true
	}
	s.projectList = slices.Clone(cfg.Projects)
	if err := refuseUnreadable(st); err != nil {
		_ = st.Close()
		return nil, err
	}
	if err := s.load(func(p string) bool { return s.projects[p] }); err != nil {
		_ = st.Close()
		return nil, err
	}
	s.metrics = newMetrics(cfg.Projects, s.snapshot, cfg.Now, cfg.PollInterval)
	s.metrics.deploy.enabled = cfg.Deployments
	s.metrics.deploy.addProjects(cfg.Projects)
	s.metrics.export.enabled = cfg.StaticExports
	s.metrics.export.addProjects(cfg.Projects)
	s.metrics.auto.configure(&cfg)
	s.metrics.auto.addProjects(cfg.Projects)
	s.metrics.file = func() fileHealth { return fileHealth{replaced: st.Replaced(), stalled: st.Stalled()} }
	if reg != nil {
		if err := reg.Register(s.metrics); err != nil {
			_ = st.Close()
			return nil, fmt.Errorf("tracker: registering metrics: %w", err)
		}
	}
	return s, nil
}

// load reads every record of the projects want accepts into memory, of
// every kind (kindEngine.load): at start those configured, at a reload
// those it adds (AddProjects). The state is read without holding mu, and
// merged under it; everything is read before anything is merged, so a
// load that fails leaves the tracker as it was.
func (s *Tracker) load(want func(project string) bool) error {
	now := s.cfg.Now()
	l := &loadedState{keys: map[string]keyRef{}}
	loaded := make([]loadedKind, 0, len(s.kinds))
	for _, k := range s.kinds {
		lk, err := k.load(l, want, now)
		if err != nil {
			return err
		}
		loaded = append(loaded, lk)
	}
	if len(l.resolved) > 0 {
		if err := s.store.Apply(l.resolved...); err != nil {
			level.Warn(s.logger).Log("msg", "could not delete intents whose operation is followed; retried at the next start", "err", err)
		}
	}
	s.mu.Lock()
	maps.Copy(s.keys, l.keys)
	for _, lk := range loaded {
		lk.mergeLocked()
	}
	s.mu.Unlock()
	kv := []any{"msg", "agent state loaded", "path", s.store.Path(), "other_projects", l.foreign, "unreadable", l.bad}
	for _, lk := range loaded {
		kv = append(kv, lk.logKV...)
	}
	level.Info(s.logger).Log(kv...)
	for _, lk := range loaded {
		if lk.after != nil {
			lk.after()
		}
	}
	return nil
}

// loadedState is what load read of the state, of every kind, before it is
// merged: the idempotency keys, the intents to delete because their
// operation is followed, and the counts logged.
type loadedState struct {
	keys map[string]keyRef
	// resolved deletes the intents whose operation is followed.
	resolved []store.Op
	// bad and foreign count unreadable records and intents, and records
	// of projects not wanted.
	bad, foreign int
}

// loadedKind is what a kind read of the state (kindEngine.load): how to
// merge it into memory (s.mu held), what it logs of it, and what it does
// once it is merged (without s.mu).
type loadedKind struct {
	mergeLocked func()
	logKV       []any
	after       func()
}

// skipUnreadable counts and logs a record or intent (what) of the state
// file that does not decode, under key k.
func (s *Tracker) skipUnreadable(l *loadedState, what string, k []byte, err error) {
	l.bad++
	level.Warn(s.logger).Log("msg", "skipping unreadable "+what+" in the agent state file", "key", strings.ReplaceAll(string(k), "\x00", "/"), "err", err)
}

// Close waits for creates and tracks under way (each bounded by its
// caller's context), then closes the state file. Call it after Run has
// returned and the HTTP server has stopped taking requests.
func (s *Tracker) Close() error {
	s.inflight.Wait()
	if err := s.store.Close(); err != nil {
		return fmt.Errorf("closing the agent state file: %w", err)
	}
	return nil
}

// claim inserts e under key unless the key is tracked already, in which
// case it returns the existing entry. The entry is inserted pollPending, so
// no poll writes it before its first write has landed; claiming before
// writing keeps two concurrent tracks (or a track and a create) of one job
// from writing an older record over a newer one.
func (s *Tracker) claim(key string, e *entry) (existing *entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.entries[key]; old != nil {
		return old
	}
	e.pollPending = true
	s.entries[key] = e
	return nil
}

// release ends a claim once the entry's first write is done.
func (s *Tracker) release(e *entry, writeErr error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.pollPending = false
	ikey := e.intentKey
	e.written(writeErr)
	e.intentKey = ikey // Create clears it once it has counted the job
}

// Run polls until ctx is done, then returns once every poll it started has
// finished. The first round starts at once, so jobs tracked before a
// restart resume immediately.
func (s *Tracker) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return errors.New("tracker: Run called twice")
	}
	defer s.running.Store(false)
	t := time.NewTicker(s.cfg.PollInterval)
	defer t.Stop()
	for {
		s.round(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// checkStateFile checks, once per poll round, that the state file's path
// still names the open file, and logs when that changes. Writes check it
// themselves (store.Apply): this notices it while nothing is written, for
// the log and mintlify_agent_state_file_replaced.
func (s *Tracker) checkStateFile() {
	err := s.store.CheckFile()
	was := s.fileReplaced.Swap(err != nil)
	switch {
	case err != nil && !was:
		level.Error(s.logger).Log("msg", "agent state file deleted or replaced while running: no job is acknowledged until it is back "+
			"(creates and follow-ups answer 503); move it back, or copy the open file out of /proc/PID/fd and restart on it (alerts/RUNBOOK.md)", "err", err)
	case err == nil && was:
		level.Info(s.logger).Log("msg", "agent state file is back at its path: jobs are acknowledged again", "path", s.store.Path())
	}
}

// writeFailed counts a failed write of the state file (err), and logs a
// replaced state file the first time a write meets it.
func (s *Tracker) writeFailed(err error) {
	s.metrics.stateWriteError()
	var re *store.ReplacedError
	if errors.As(err, &re) {
		s.checkStateFile()
	}
}

// pollTask is one operation to poll: a job in turn, or a deployment;
// due at due (zero: at once).
type pollTask struct {
	key, project, id string
	turn             int
	due              time.Time
	// kind is the operation's kind.
	kind kindEngine
}

// round forgets what is past retention and polls every due operation, of
// every kind, at most MaxConcurrentPolls at a time, and returns when all
// polls are done.
func (s *Tracker) round(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	s.checkStateFile()
	now := s.cfg.Now()
	for _, k := range s.kinds {
		k.forgetExpired(now)
	}
	tasks := s.due(now)
	// A fixed pool of workers rather than a goroutine per operation:
	// cheaper with thousands of them, and the bound is the same.
	work := make(chan pollTask)
	var wg sync.WaitGroup
	for range min(s.cfg.MaxConcurrentPolls, len(tasks)) {
		wg.Go(func() {
			for t := range work {
				s.pollOne(ctx, t, now)
			}
		})
	}
	sent := 0
	for _, t := range tasks {
		if ctx.Err() != nil {
			break
		}
		work <- t
		sent++
	}
	close(work)
	wg.Wait()
	if sent < len(tasks) {
		s.mu.Lock()
		for _, t := range tasks[sent:] {
			if p := t.kind.pollingLocked(t.key); p != nil {
				p.pollPending = false
			}
		}
		s.mu.Unlock()
	}
}

// due picks the operations to poll in a round starting at now. Half a
// poll interval of slack keeps one scheduled for "next round" from
// slipping one more round because the ticker fired a hair early.
func (s *Tracker) due(now time.Time) []pollTask {
	limit := now.Add(s.cfg.PollInterval / 2)
	s.mu.Lock()
	defer s.mu.Unlock()
	var tasks []pollTask
	for _, k := range s.kinds {
		tasks = append(tasks, k.dueLocked(now, limit)...)
	}
	return tasks
}

// pollErrorText is a poll error as a job's or deployment's lastError
// shows it: at most 300 bytes.
func pollErrorText(err error) string {
	msg := err.Error()
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return msg
}

// backoff is the wait after n consecutive errors, the last at now:
// PollInterval doubled per error, capped at 5m, jittered by ±20%, and never
// shorter than what the API asked for.
func (s *Tracker) backoff(n int, err error, now time.Time) time.Duration {
	d := s.cfg.PollInterval
	for i := 1; i < n && d < maxPollBackoff; i++ {
		d *= 2
	}
	d = min(d, maxPollBackoff)
	d = d*4/5 + rand.N(d*2/5+1)
	var throttled *apiclient.ThrottledError
	var apiErr *apiclient.APIError
	if errors.As(err, &throttled) {
		d = max(d, throttled.Until.Sub(now))
	} else if errors.As(err, &apiErr) && apiErr.RetryAfter > 0 {
		d = max(d, apiErr.RetryAfter)
	}
	return d
}

// snapshot is the metrics' view at scrape time.
func (s *Tracker) snapshot() []projectJobs {
	now := s.cfg.Now()
	s.mu.RLock()
	defer s.mu.RUnlock()
	by := make(map[string]*projectJobs, len(s.projectList))
	out := make([]projectJobs, len(s.projectList))
	for i, p := range s.projectList {
		out[i] = projectJobs{project: p, byStatus: map[string]int{}}
		by[p] = &out[i]
	}
	for _, k := range s.kinds {
		k.snapshotLocked(by, now)
	}
	return out
}
