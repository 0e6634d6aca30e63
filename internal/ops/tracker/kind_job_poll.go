package tracker

import (
	"context"
	"time"

	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

// The agent jobs' polling: their part of the engine's rounds (jobKind),
// what a read changes (applyJob, transition in kind_job_record.go), their
// schedule, their retention and their write.

// jobKind is the agent jobs' part of the engine (kindEngine).
type jobKind struct{ s *Tracker }

func (k jobKind) dueLocked(now, limit time.Time) []pollTask {
	s := k.s
	var tasks []pollTask
	for key, e := range s.entries {
		if e.pollPending || !e.polled(now, &s.cfg) || e.nextPoll.After(limit) {
			continue
		}
		e.pollPending = true
		tasks = append(tasks, pollTask{kind: k, key: key, project: e.rec.Project, id: e.rec.Job.ID, turn: e.rec.turn(), due: e.nextPoll})
	}
	return tasks
}

func (k jobKind) pollingLocked(key string) *polling {
	if e := k.s.entries[key]; e != nil {
		return &e.polling
	}
	return nil
}

func (k jobKind) throttledUntil() time.Time { return k.s.api.ThrottledUntil(apiclient.EndpointGetJob) }

func (k jobKind) read(ctx context.Context, t pollTask) (func(at, roundStart time.Time), error) {
	job, err := k.s.api.GetJob(ctx, t.project, t.id)
	if err != nil {
		return nil, err
	}
	return func(at, roundStart time.Time) { k.s.applyJob(t, job, at, roundStart) }, nil
}

func (k jobKind) applyError(t pollTask, err error, at time.Time) { k.s.applyError(t, err, at) }

func (k jobKind) forgetExpired(now time.Time) { k.s.forgetExpired(now) }

// unsavedLocked adds the jobs created upstream whose record is not
// written yet. s.mu is held.
func (k jobKind) unsavedLocked(out []Unsaved) []Unsaved {
	for _, e := range k.s.entries {
		if e.intentKey != "" {
			out = append(out, Unsaved{Kind: OpJob, Project: e.rec.Project, ID: e.rec.Job.ID, Intent: intentID(e.rec.Project, e.intentKey)})
		}
	}
	return out
}

// forgetExpired deletes jobs that have been terminal (or lost) for longer
// than Retention: from the state file first, then from memory.
func (s *Tracker) forgetExpired(now time.Time) {
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
	ops := make([]store.Op, len(keys))
	for i, k := range keys {
		ops[i] = store.Op{Bucket: store.Jobs, Key: k}
	}
	if err := s.store.Apply(ops...); err != nil {
		s.writeFailed(err)
		level.Error(s.logger).Log("msg", "could not forget expired agent jobs", "jobs", len(keys), "err", err)
		return
	}
	s.mu.Lock()
	for _, k := range keys {
		if e := s.entries[k]; e != nil {
			s.forgetKeysLocked(k, e)
		}
		delete(s.entries, k)
	}
	s.mu.Unlock()
	level.Debug(s.logger).Log("msg", "forgot agent jobs past retention", "jobs", len(keys))
}

// applyJob records a successful poll. s.wmu is held (pollOne).
func (s *Tracker) applyJob(t pollTask, job *apiclient.Job, at, roundStart time.Time) {
	j := *job
	j.ID = t.id // the key is what we asked for
	boundJob(&j)

	e := lockFollowed(s, s.entries, t.key)
	if e == nil {
		return
	}
	e.pollPending = false
	if e.rec.turn() != t.turn {
		// A follow-up started a new turn while this poll was under way:
		// what it read may predate the message.
		e.nextPoll = roundStart.Add(s.cfg.PollInterval)
		s.mu.Unlock()
		return
	}
	e.polledOK(at)
	changed := !sameJob(&e.rec.Job, &j)
	// A follow-up of unknown outcome is settled by a poll sent after it:
	// one that may have left before it read the job as it was.
	sentAt, pending := e.rec.pendingMessage()
	if !pending || sentAt.After(roundStart) {
		sentAt = time.Time{}
	}
	how := seenLive
	if e.rec.Job.Status == statusUnread {
		// Rebuilt by state salvage: whatever it reached, this tracker
		// may have counted it before.
		how = seenAfterTheFact
	}
	rec, ev := transition(e.rec, j, at, how, sentAt)
	_, e.recheck = rec.pendingMessage()
	s.schedule(e, &rec, at, roundStart)
	if e.recheck {
		e.nextPoll = roundStart.Add(s.cfg.PollInterval)
	}
	if !changed && !e.dirty && !ev.newTurn && sentAt.IsZero() {
		s.mu.Unlock()
		return
	}
	// A failed write is retried at the next round, not at the schedule of
	// the status that could not be written (5m and more for a completed
	// job).
	write := func(extra ...store.Op) error { return s.persist(t.key, &rec, extra...) }
	if !s.writePolledLocked(&e.polling, bucketIntents, write, roundStart.Add(s.cfg.PollInterval)) {
		_, e.recheck = e.rec.pendingMessage()
		s.mu.Unlock()
		return // memory unchanged: the next poll sees the change again
	}
	if e.rec.IdemKey != rec.IdemKey {
		// Resolved with a key while this poll was writing: written again
		// at the next poll.
		rec.IdemKey, rec.RequestHash = e.rec.IdemKey, e.rec.RequestHash
		e.rec, e.dirty = rec, true
	} else {
		e.rec, e.dirty = rec, false
	}
	// Counted with the state it belongs to, under the lock that shows
	// it: whoever reads the job terminal (its view, the jobs gauge, the
	// log line below) reads it counted. Still after the write: a crash
	// between the two under-counts, never counts twice.
	s.metrics.count(t.project, ev)
	s.mu.Unlock()
	switch {
	case ev.inferred:
		level.Info(s.logger).Log("msg", "agent job running after a follow-up of unknown outcome: following the turn it started", "project", t.project,
			"job", t.id, "turn", rec.Turns, "turn_started_at", rec.TurnStartedAt)
	case ev.newTurn:
		level.Info(s.logger).Log("msg", "agent job active again: following its new turn (a follow-up sent elsewhere)", "project", t.project,
			"job", t.id, "turn", rec.Turns)
	}
	s.logOutcome(&rec, ev)
}

// logOutcome logs, at info, a turn seen ending or a pull request seen
// opened: what the audit trail of submissions does not show. Never the
// prompt.
func (s *Tracker) logOutcome(rec *record, ev events) {
	if ev.finished == "" && !ev.pr {
		return
	}
	msg := "agent job finished"
	if ev.finished == "" {
		msg = "agent job opened a pull request"
	}
	pr := "no"
	if rec.PRCounted && rec.Job.PRLink != nil && *rec.Job.PRLink != "" {
		pr = "yes"
	}
	kv := []any{"msg", msg, "project", rec.Project, "job", bounded.Label(rec.Job.ID), "status", bounded.Label(rec.viewStatus()), "turn", rec.turn(), "pr", pr}
	if ev.observeDur {
		kv = append(kv, "duration", ev.duration.Round(time.Millisecond))
	}
	level.Info(s.logger).Log(kv...)
}

// schedule sets e's next poll for a job whose record will be rec.
func (s *Tracker) schedule(e *entry, rec *record, at, roundStart time.Time) {
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
// ends). s.wmu is held (pollOne).
func (s *Tracker) applyError(t pollTask, err error, at time.Time) {
	e := lockFollowed(s, s.entries, t.key)
	if e == nil {
		return
	}
	_, e.recheck = e.rec.pendingMessage()
	notFound, lost := s.pollFailed(&e.polling, err, at)

	var rec record
	var ev events
	write := false
	switch {
	case notFound && apiclient.IsTerminal(e.rec.Job.Status):
		rec, write = e.rec, true
		rec.WatchEnded = true
	case lost:
		rec, write = e.rec, true
		rec.Lost = true
		rec.TerminalAt = at
		ev.lost = true
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
	s.metrics.count(t.project, ev) // with the state it belongs to (applyJob)
	s.mu.Unlock()
	if ev.lost {
		level.Warn(s.logger).Log("msg", "agent job lost: the API no longer knows it", "project", t.project, "job", bounded.Label(t.id), "last_status", bounded.Label(rec.Job.Status))
	}
}

// persist writes rec durably, with extra in the same transaction.
func (s *Tracker) persist(key string, rec *record, extra ...store.Op) error {
	data, err := encodeRecord(rec)
	if err == nil {
		err = s.store.Apply(append([]store.Op{{Bucket: store.Jobs, Key: key, Value: data}}, extra...)...)
	}
	if err != nil {
		s.writeFailed(err)
		level.Error(s.logger).Log("msg", "could not write agent job to the state file", "project", rec.Project, "job", rec.Job.ID, "err", err)
	}
	return err
}

// snapshotLocked adds the jobs and their creates of unknown outcome to the
// projects of by, for the metrics and the status page. s.mu is held.
func (k jobKind) snapshotLocked(by map[string]*projectJobs, now time.Time) {
	s := k.s
	for _, e := range s.entries {
		pj := by[e.rec.Project]
		if pj == nil {
			continue
		}
		st := e.rec.viewStatus()
		pj.byStatus[st]++
		if e.rec.Rebuilt {
			pj.rebuilt++
		}
		if !e.rec.Lost && !apiclient.IsTerminal(st) {
			c := e.rec.turnStart()
			if c.IsZero() {
				c = e.rec.TrackedAt
			}
			if pj.oldestActive.IsZero() || c.Before(pj.oldestActive) {
				pj.oldestActive = c
			}
		}
		// A poll picked by a round but not sent yet is late as well.
		if !e.nextPoll.IsZero() && (e.pollPending || e.polled(now, &s.cfg)) {
			pj.maxOverdue = max(pj.maxOverdue, now.Sub(e.nextPoll))
		}
	}
	for _, in := range s.intents {
		if pj := by[in.rec.Project]; pj != nil && !in.inFlight {
			pj.unknownCreates++
		}
	}
}
