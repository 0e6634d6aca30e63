package tracker

import (
	"context"
	"time"

	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

// deployEvent is the metric update of one deployment's state change
// (the engine's finishEvent).
type deployEvent = finishEvent

// deployTransition computes the record after reading d at time at, and
// the event to count: a final status not counted yet is counted when seen
// live, recorded as counted without counting when seen after the fact.
func deployTransition(old deployRecord, d *apiclient.Deployment, at time.Time, how sighting) (deployRecord, deployEvent) {
	rec := old
	rec.Status = intern(bounded.Label(d.Status))
	if !d.CreatedAt.IsZero() {
		rec.CreatedAt = d.CreatedAt.UTC()
	}
	if !d.EndedAt.IsZero() {
		rec.EndedAt = d.EndedAt.UTC()
	}
	if d.Commit.SHA != "" {
		rec.SHA = bounded.Label(d.Commit.SHA)
	}
	if d.Commit.Ref != "" {
		rec.Branch = bounded.Label(d.Commit.Ref)
	}
	rec.Lost = false
	var ev deployEvent
	if !apiclient.IsDeploymentFinal(rec.Status) || rec.Counted {
		return rec, ev
	}
	rec.Counted, rec.TerminalAt = true, at
	if how != seenLive {
		return rec, ev
	}
	ev.finished = rec.Status
	if !rec.CreatedAt.IsZero() && !rec.EndedAt.IsZero() {
		ev.observeDur, ev.duration = true, rec.EndedAt.Sub(rec.CreatedAt)
	}
	return rec, ev
}

// scheduleDeploy sets e's next poll after a read at: none once final, the
// poll interval while it runs, and backing off while it stays queued (the
// interval doubled per poll that found it queued, up to a minute), so that
// one stuck in the queue costs a request a minute.
func (s *Tracker) scheduleDeploy(e *deployEntry, at time.Time) {
	switch {
	case e.rec.final():
		e.nextPoll = time.Time{}
		return
	case e.rec.Status == apiclient.DeploymentQueued:
		e.queuedPolls++
	default:
		e.queuedPolls = 0
	}
	d := s.cfg.PollInterval
	for i := 1; i < e.queuedPolls && d < maxQueuedPollInterval; i++ {
		d *= 2
	}
	e.nextPoll = at.Add(max(min(d, maxQueuedPollInterval), s.cfg.PollInterval))
}

// deploymentKind is the deployments' part of the engine (kindEngine).
type deploymentKind struct{ s *Tracker }

// dueLocked picks the deployments to poll (none when the API client has
// no deployment endpoints). s.mu is held.
func (k deploymentKind) dueLocked(_, limit time.Time) []pollTask {
	if k.s.deployAPI == nil {
		return nil
	}
	return dueOf(k, k.s.deploys, limit)
}

func (k deploymentKind) pollingLocked(key string) *polling { return pollingOf(k.s.deploys, key) }

func (k deploymentKind) throttledUntil() time.Time {
	return k.s.deployAPI.ThrottledUntil(apiclient.EndpointDeploymentStatus)
}

func (k deploymentKind) read(ctx context.Context, t pollTask) (func(at, roundStart time.Time), error) {
	d, err := k.s.deployAPI.DeploymentStatus(ctx, t.project, t.id)
	if err != nil {
		return nil, err
	}
	return func(at, _ time.Time) { k.s.applyDeployment(t, d, at) }, nil
}

func (k deploymentKind) applyError(t pollTask, err error, at time.Time) {
	k.s.applyDeployError(t, err, at)
}

func (k deploymentKind) forgetExpired(now time.Time) { k.s.forgetExpiredDeployments(now) }

// applyDeployment records a successful read. s.wmu is held (pollOne).
func (s *Tracker) applyDeployment(t pollTask, d *apiclient.Deployment, at time.Time) {
	e := lockFollowed(s, s.deploys, t.key)
	if e == nil {
		return
	}
	e.polledOK(at)
	rec, ev := deployTransition(e.rec, d, at, seenLive)
	changed := rec != e.rec
	next := *e
	next.rec = rec
	s.scheduleDeploy(&next, at)
	e.nextPoll, e.queuedPolls = next.nextPoll, next.queuedPolls
	if !changed && !e.dirty {
		s.mu.Unlock()
		return
	}
	write := func(extra ...store.Op) error { return s.persistDeploy(t.key, &rec, extra...) }
	if !s.writePolledLocked(&e.polling, bucketDeployIntents, write, at.Add(s.cfg.PollInterval)) {
		s.mu.Unlock()
		return // memory unchanged
	}
	e.rec, e.dirty = rec, false
	// Counted under the lock that shows it, after the write: a crash
	// between the two under-counts, never counts twice (as applyJob).
	s.metrics.deploy.count(s.metrics.has, rec.Project, rec.Kind, ev)
	s.mu.Unlock()
	if ev.finished != "" {
		kv := []any{"msg", "deployment finished", "project", rec.Project, "kind", rec.Kind, "deployment", bounded.Label(rec.ID), "status", ev.finished}
		if ev.observeDur {
			kv = append(kv, "duration", ev.duration)
		}
		level.Info(s.logger).Log(kv...)
	}
}

// applyDeployError records a failed read: backoff as for jobs, and after
// repeated 404s the deployment is lost. s.wmu is held (pollOne).
func (s *Tracker) applyDeployError(t pollTask, err error, at time.Time) {
	e := lockFollowed(s, s.deploys, t.key)
	if e == nil {
		return
	}
	_, lost := s.pollFailed(&e.polling, err, at)
	rec, nErrors := e.rec, e.errors
	s.mu.Unlock()
	level.Debug(s.logger).Log("msg", "polling deployment failed", "project", t.project, "deployment", t.id, "consecutive_errors", nErrors, "err", err)
	if !lost {
		return
	}
	rec.Lost, rec.TerminalAt = true, at
	if perr := s.persistDeploy(t.key, &rec); perr != nil {
		return // retried at the next poll, which will 404 again
	}
	s.mu.Lock()
	e.rec, e.dirty = rec, false
	s.mu.Unlock()
	level.Warn(s.logger).Log("msg", "deployment lost: the API no longer knows it", "project", t.project, "deployment", bounded.Label(t.id),
		"last_status", rec.Status)
}

// load reads the deployments and their trigger intents
// (kindEngine.load, through the engine's loadOf).
func (k deploymentKind) load(l *loadedState, want func(project string) bool, _ time.Time) (loadedKind, error) {
	s := k.s
	return loadOf(s, l, want, kindLoad[*deployEntry, *deployIntent]{what: "deployment", whatIntent: "deployment intent",
		bucket: bucketDeployments, intents: triggerIntents,
		decode: func(v []byte) (*deployEntry, error) {
			rec, err := decodeDeployRecord(v)
			rec.Status = intern(rec.Status)
			return &deployEntry{rec: rec}, err
		},
		decodeIntent: func(v []byte) (*deployIntent, error) { in, err := decodeDeployIntent(v); return &in, err },
		ref:          func(key string) keyRef { return keyRef{deploy: key} },
		recordOf:     func(ref keyRef) string { return ref.deploy },
		into:         func() map[string]*deployEntry { return s.deploys },
		logKeys:      [2]string{"deployments", "unknown_deploy_triggers"}})
}

// forgetExpiredDeployments deletes deployments final (or lost) for longer
// than Retention, and trigger intents of unknown outcome as old (the
// engine's retention).
func (s *Tracker) forgetExpiredDeployments(now time.Time) {
	forgetExpiredOf(s, s.deploys, bucketDeployments, triggerIntents, func(ref keyRef, key string) bool { return ref.deploy == key }, "deployments", now)
}

// snapshotLocked adds the deployments and their triggers of
// unknown outcome to the projects of by. s.mu is held.
func (k deploymentKind) snapshotLocked(by map[string]*projectJobs, now time.Time) {
	s := k.s
	for _, in := range s.deployIntents {
		if pj := by[in.Project]; pj != nil && !in.inFlight {
			if pj.unknownTriggers == nil {
				pj.unknownTriggers = map[string]int{}
			}
			pj.unknownTriggers[in.Kind]++
		}
	}
	for _, e := range s.deploys {
		if pj := by[e.rec.Project]; pj != nil {
			pj.addDeployment(e)
			if !e.nextPoll.IsZero() && !e.rec.final() {
				pj.maxOverdue = max(pj.maxOverdue, now.Sub(e.nextPoll))
			}
		}
	}
}
