// Package agent tracks Mintlify agent jobs to their end: it creates jobs
// for the gateway, polls every active job, persists each job's state
// crash-safely, and turns what it sees into the mintlify_agent_* metrics.
//
// Counting rules, which hold within a process and across restarts:
//   - a job's state is written (fsync) before the gateway answers 2xx for
//     it, so a job whose creation was acknowledged is never lost;
//   - a terminal transition is written before it is counted, and the
//     statuses already counted are part of the written state, so a crash
//     between the two under-counts by one but never counts twice, and jobs
//     that were terminal before a restart are not counted again.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/collector"
	"github.com/mintlify-exporter/mintlify_exporter/internal/agent/store"
	"github.com/mintlify-exporter/mintlify_exporter/internal/gateway"
)

// upstream is the part of *apiclient.Client the service uses.
type upstream interface {
	CreateJobWithStatus(ctx context.Context, project, prompt string) (*apiclient.Job, int, error)
	GetJob(ctx context.Context, project, id string) (*apiclient.Job, error)
	ThrottledUntil(endpoint string) time.Time
}

// Service is the agent job tracker with its state store, metrics and
// gateway.
type Service struct {
	cfg      Config
	api      upstream
	store    *store.Store
	metrics  *collector.AgentMetrics
	gateway  *gateway.Gateway
	logger   log.Logger
	projects map[string]bool

	mu      sync.RWMutex
	entries map[string]*entry // by storeKey

	running atomic.Bool
	// inflight counts gateway creates and tracks under way: they outlive
	// their HTTP request (an upstream create must be recorded even if the
	// client hangs up), so Close waits for them before closing the store.
	inflight sync.WaitGroup
}

// New opens (or creates) the state file, loads the tracked jobs, registers
// the metrics with reg and builds the gateway. It fails when the state file
// cannot be opened (unreadable, locked by another process, unknown layout).
// Polling starts with Run.
func New(client *apiclient.Client, reg prometheus.Registerer, cfg Config, logger log.Logger) (*Service, error) {
	if client == nil {
		return nil, errors.New("agent: nil API client")
	}
	return newService(client, reg, cfg, logger)
}

func newService(api upstream, reg prometheus.Registerer, cfg Config, logger log.Logger) (*Service, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = log.NewNopLogger()
	}
	st, err := store.Open(cfg.StatePath)
	if err != nil {
		return nil, err
	}
	s := &Service{
		cfg:      cfg,
		api:      api,
		store:    st,
		logger:   logger,
		projects: map[string]bool{},
		entries:  map[string]*entry{},
	}
	for _, p := range cfg.Projects {
		s.projects[p] = true
	}
	if err := s.load(); err != nil {
		_ = st.Close()
		return nil, err
	}
	s.metrics = collector.NewAgentMetrics(cfg.Projects, s.snapshot, cfg.Now)
	if reg != nil {
		if err := reg.Register(s.metrics); err != nil {
			_ = st.Close()
			return nil, fmt.Errorf("agent: registering metrics: %w", err)
		}
	}
	s.gateway = gateway.New(backend{s}, gateway.Options{
		Projects:       cfg.Projects,
		MaxPromptBytes: cfg.MaxPromptBytes,
		CreateLimit:    cfg.CreateLimitPerHour,
		CreateWindow:   time.Hour,
		RecentCreates:  s.recentCreates(time.Hour),
		Rejected:       s.metrics.Rejected,
		Now:            cfg.Now,
		Logger:         logger,
	})
	return s, nil
}

// load reads every record of a configured project into memory.
func (s *Service) load() error {
	now := s.cfg.Now()
	var bad, foreign, active, watched int
	err := s.store.ForEach(func(k, v []byte) error {
		var rec record
		if err := json.Unmarshal(v, &rec); err != nil || rec.Job.ID == "" || rec.Project == "" {
			bad++
			level.Warn(s.logger).Log("msg", "skipping unreadable record in the agent state file", "key", strings.ReplaceAll(string(k), "\x00", "/"), "err", err)
			return nil
		}
		if !s.projects[rec.Project] {
			foreign++
			return nil
		}
		internJob(&rec.Job)
		e := &entry{rec: rec}
		if e.polled(now, &s.cfg) {
			if apiclient.IsTerminal(rec.Job.Status) {
				// Spread the re-checks of watched jobs instead of
				// re-checking them all at once after a restart.
				iv := s.cfg.archiveCheckInterval(now.Sub(rec.TerminalAt))
				e.nextPoll = now.Add(rand.N(iv))
				watched++
			} else {
				active++
			}
		}
		s.entries[string(k)] = e
		return nil
	})
	if err != nil {
		return fmt.Errorf("agent state file %s: reading: %w", s.store.Path(), err)
	}
	level.Info(s.logger).Log("msg", "agent state loaded", "path", s.store.Path(), "jobs", len(s.entries),
		"active", active, "archive_watch", watched, "other_projects", foreign, "unreadable", bad)
	return nil
}

// recentCreates returns, per project, when jobs were created through the
// gateway within window, to seed the local create limit after a restart.
func (s *Service) recentCreates(window time.Duration) map[string][]time.Time {
	now := s.cfg.Now()
	out := map[string][]time.Time{}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, e := range s.entries {
		if e.rec.Origin == originGateway && now.Sub(e.rec.TrackedAt) < window {
			out[e.rec.Project] = append(out[e.rec.Project], e.rec.TrackedAt)
		}
	}
	for _, ts := range out {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	}
	return out
}

// Handler is the gateway. Mount it at "/api/": its routes include /api.
func (s *Service) Handler() http.Handler { return s.gateway }

// Close waits for gateway creates and tracks under way (each bounded by
// its upstream timeout), then closes the state file. Call it after Run has
// returned and the HTTP server has stopped taking requests.
func (s *Service) Close() error {
	s.inflight.Wait()
	return s.store.Close()
}

// claim inserts e under key unless the key is tracked already, in which
// case it returns the existing entry. The entry is inserted pollPending, so
// no poll writes it before its first write has landed; claiming before
// writing keeps two concurrent tracks (or a track and a create) of one job
// from writing an older record over a newer one.
func (s *Service) claim(key string, e *entry) (existing *entry) {
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
func (s *Service) release(e *entry, writeErr error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.pollPending = false
	e.dirty = writeErr != nil
	if writeErr != nil {
		e.lastErr = "state file: " + writeErr.Error()
	}
}

// Run polls until ctx is done, then returns once every poll it started has
// finished. The first round starts at once, so jobs tracked before a
// restart resume immediately.
func (s *Service) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return errors.New("agent: Run called twice")
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

// pollTask is one job to poll.
type pollTask struct{ key, project, id string }

// round forgets expired jobs and polls every due job, at most
// MaxConcurrentPolls at a time, and returns when all polls are done.
func (s *Service) round(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	now := s.cfg.Now()
	s.forgetExpired(now)
	tasks := s.due(now)
	// A fixed pool of workers rather than a goroutine per job: cheaper
	// with thousands of jobs, and the bound is the same.
	work := make(chan pollTask)
	var wg sync.WaitGroup
	for range min(s.cfg.MaxConcurrentPolls, len(tasks)) {
		wg.Go(func() {
			for t := range work {
				s.poll(ctx, t, now)
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
			if e := s.entries[t.key]; e != nil {
				e.pollPending = false
			}
		}
		s.mu.Unlock()
	}
}

// due picks the jobs to poll in a round starting at now. Half a poll
// interval of slack keeps a job scheduled for "next round" from slipping
// one more round because the ticker fired a hair early.
func (s *Service) due(now time.Time) []pollTask {
	limit := now.Add(s.cfg.PollInterval / 2)
	s.mu.Lock()
	defer s.mu.Unlock()
	var tasks []pollTask
	for k, e := range s.entries {
		if e.pollPending || !e.polled(now, &s.cfg) || e.nextPoll.After(limit) {
			continue
		}
		e.pollPending = true
		tasks = append(tasks, pollTask{key: k, project: e.rec.Project, id: e.rec.Job.ID})
	}
	return tasks
}

// forgetExpired deletes jobs that have been terminal (or lost) for longer
// than Retention: from the state file first, then from memory.
func (s *Service) forgetExpired(now time.Time) {
	s.mu.RLock()
	var keys []string
	for k, e := range s.entries {
		r := &e.rec
		if (r.Lost || apiclient.IsTerminal(r.Job.Status)) && !r.TerminalAt.IsZero() && now.Sub(r.TerminalAt) >= s.cfg.Retention {
			keys = append(keys, k)
		}
	}
	s.mu.RUnlock()
	if len(keys) == 0 {
		return
	}
	if err := s.store.Delete(keys...); err != nil {
		s.metrics.StateWriteError()
		level.Error(s.logger).Log("msg", "could not forget expired agent jobs", "jobs", len(keys), "err", err)
		return
	}
	s.mu.Lock()
	for _, k := range keys {
		delete(s.entries, k)
	}
	s.mu.Unlock()
	level.Debug(s.logger).Log("msg", "forgot agent jobs past retention", "jobs", len(keys))
}

// poll reads one job and applies what it learned.
func (s *Service) poll(ctx context.Context, t pollTask, roundStart time.Time) {
	if until := s.api.ThrottledUntil(apiclient.EndpointGetJob); !until.IsZero() {
		// The API asked for a pause (Retry-After): no request, and no
		// worker blocked waiting for it.
		s.mu.Lock()
		if e := s.entries[t.key]; e != nil {
			e.pollPending = false
			e.nextPoll = until
		}
		s.mu.Unlock()
		return
	}
	pctx, cancel := context.WithTimeout(ctx, s.cfg.PollTimeout)
	job, err := s.api.GetJob(pctx, t.project, t.id)
	cancel()
	at := s.cfg.Now()
	if err != nil && ctx.Err() != nil {
		// Shutting down: not the job's fault.
		s.mu.Lock()
		if e := s.entries[t.key]; e != nil {
			e.pollPending = false
		}
		s.mu.Unlock()
		return
	}
	if err != nil {
		s.applyError(t, err, at)
		return
	}
	s.applyJob(t, job, at, roundStart)
}

// events are the metric updates of one state change, applied only after
// the change is persisted.
type events struct {
	finished string
	observe  bool
	duration time.Duration
	pr       bool
	lost     bool
}

func (s *Service) emit(project string, ev events) {
	if ev.finished != "" {
		s.metrics.Finished(project, ev.finished, ev.duration, ev.observe)
	}
	if ev.pr {
		s.metrics.PullRequest(project)
	}
	if ev.lost {
		s.metrics.Lost(project)
	}
}

// transition computes the record after seeing job at time at, and the
// events to count. first says the job was never seen non-terminal by this
// exporter (tracked after the fact): its terminal status and pull request
// are recorded as counted without counting them.
func transition(old record, job apiclient.Job, at time.Time, first bool) (record, events) {
	rec := old
	rec.Job = job
	var ev events
	if bit := countedBit(job.Status); bit != 0 && rec.Counted&bit == 0 {
		rec.Counted |= bit
		firstTerminal := rec.TerminalAt.IsZero()
		if firstTerminal {
			rec.TerminalAt = at
		}
		if !first {
			ev.finished = job.Status
			if firstTerminal && !job.CreatedAt.IsZero() {
				ev.observe = true
				ev.duration = at.Sub(job.CreatedAt)
			}
		}
	}
	// A PR counts once its job completed (or was archived after that); a
	// link on a job that is active or failed is not a finished change.
	prDone := job.Status == apiclient.StatusCompleted || job.Status == apiclient.StatusArchived
	if prDone && job.PRLink != nil && *job.PRLink != "" && !rec.PRCounted {
		rec.PRCounted = true
		ev.pr = !first
	}
	return rec, ev
}

// applyJob records a successful poll.
func (s *Service) applyJob(t pollTask, job *apiclient.Job, at, roundStart time.Time) {
	j := *job
	j.ID = t.id // the key is what we asked for
	internJob(&j)

	s.mu.Lock()
	e := s.entries[t.key]
	if e == nil {
		s.mu.Unlock()
		return
	}
	e.pollPending = false
	e.lastPolled = at
	e.errors, e.notFound, e.lastErr = 0, 0, ""
	changed := !sameJob(&e.rec.Job, &j)
	rec, ev := transition(e.rec, j, at, false)
	s.schedule(e, &rec, at, roundStart)
	if !changed && !e.dirty {
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()

	if err := s.persist(t.key, &rec); err != nil {
		s.mu.Lock()
		e.dirty = true
		e.lastErr = "state file: " + err.Error()
		s.mu.Unlock()
		return // memory unchanged: the next poll sees the change again
	}
	s.mu.Lock()
	e.rec, e.dirty = rec, false
	s.mu.Unlock()
	s.emit(t.project, ev)
}

// schedule sets e's next poll for a job whose record will be rec.
func (s *Service) schedule(e *entry, rec *record, at, roundStart time.Time) {
	switch {
	case !apiclient.IsTerminal(rec.Job.Status):
		e.nextPoll = roundStart.Add(s.cfg.PollInterval)
	case rec.Job.Status == apiclient.StatusCompleted:
		e.nextPoll = at.Add(s.cfg.archiveCheckInterval(at.Sub(rec.TerminalAt)))
	default:
		e.nextPoll = time.Time{}
	}
}

func sameJob(a, b *apiclient.Job) bool {
	return a.Status == b.Status && a.Model == b.Model && a.Source == b.Source &&
		a.CreatedAt.Equal(b.CreatedAt) && sameString(a.PRLink, b.PRLink) && sameTime(a.ArchivedAt, b.ArchivedAt)
}

func sameString(a, b *string) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

func sameTime(a, b *time.Time) bool {
	return (a == nil) == (b == nil) && (a == nil || a.Equal(*b))
}

// applyError records a failed poll: backoff, and after repeated 404s the
// job is lost (or, for a completed job under archive watch, the watch
// ends).
func (s *Service) applyError(t pollTask, err error, at time.Time) {
	s.mu.Lock()
	e := s.entries[t.key]
	if e == nil {
		s.mu.Unlock()
		return
	}
	e.pollPending = false
	e.errors++
	msg := err.Error()
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	e.lastErr = msg
	e.nextPoll = at.Add(s.backoff(e.errors, err))

	var rec record
	var ev events
	write := false
	if apiclient.StatusCode(err) == http.StatusNotFound {
		e.notFound++
		switch {
		case apiclient.IsTerminal(e.rec.Job.Status):
			rec, write = e.rec, true
			rec.WatchEnded = true
		case e.notFound >= lostAfter404s:
			rec, write = e.rec, true
			rec.Lost = true
			rec.TerminalAt = at
			ev.lost = true
		}
	} else {
		e.notFound = 0
	}
	nErrors := e.errors
	s.mu.Unlock()
	level.Debug(s.logger).Log("msg", "polling agent job failed", "project", t.project, "job", t.id, "consecutive_errors", nErrors, "err", err)
	if !write {
		return
	}
	if perr := s.persist(t.key, &rec); perr != nil {
		return // retried at the next poll, which will 404 again
	}
	s.mu.Lock()
	e.rec, e.dirty = rec, false
	s.mu.Unlock()
	if ev.lost {
		level.Warn(s.logger).Log("msg", "agent job lost: the API no longer knows it", "project", t.project, "job", t.id, "last_status", rec.Job.Status)
	}
	s.emit(t.project, ev)
}

// backoff is the wait after n consecutive errors: PollInterval doubled per
// error, capped at 5m, jittered by ±20%, and never shorter than what the
// API asked for.
func (s *Service) backoff(n int, err error) time.Duration {
	d := s.cfg.PollInterval
	for i := 1; i < n && d < maxPollBackoff; i++ {
		d *= 2
	}
	d = min(d, maxPollBackoff)
	d = d*4/5 + rand.N(d*2/5+1)
	var throttled *apiclient.ThrottledError
	var apiErr *apiclient.APIError
	if errors.As(err, &throttled) {
		d = max(d, time.Until(throttled.Until))
	} else if errors.As(err, &apiErr) && apiErr.RetryAfter > 0 {
		d = max(d, apiErr.RetryAfter)
	}
	return d
}

// persist writes rec durably.
func (s *Service) persist(key string, rec *record) error {
	data, err := json.Marshal(rec)
	if err == nil {
		err = s.store.Put(key, data)
	}
	if err != nil {
		s.metrics.StateWriteError()
		level.Error(s.logger).Log("msg", "could not write agent job to the state file", "project", rec.Project, "job", rec.Job.ID, "err", err)
	}
	return err
}

// snapshot is the metrics' view at scrape time.
func (s *Service) snapshot() []collector.AgentProjectJobs {
	s.mu.RLock()
	defer s.mu.RUnlock()
	by := make(map[string]*collector.AgentProjectJobs, len(s.cfg.Projects))
	out := make([]collector.AgentProjectJobs, len(s.cfg.Projects))
	for i, p := range s.cfg.Projects {
		out[i] = collector.AgentProjectJobs{Project: p, ByStatus: map[string]int{}}
		by[p] = &out[i]
	}
	for _, e := range s.entries {
		pj := by[e.rec.Project]
		if pj == nil {
			continue
		}
		st := e.rec.viewStatus()
		pj.ByStatus[st]++
		if !e.rec.Lost && !apiclient.IsTerminal(st) {
			c := e.rec.Job.CreatedAt
			if c.IsZero() {
				c = e.rec.TrackedAt
			}
			if pj.OldestActive.IsZero() || c.Before(pj.OldestActive) {
				pj.OldestActive = c
			}
		}
	}
	return out
}
