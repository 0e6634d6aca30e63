package tracker

import (
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
)

// What a read of a deployment changes, and when it is read again.

// maxQueuedPollInterval caps the backoff of a deployment that stays
// queued: the poll interval doubles with each poll that finds it queued,
// up to this.
const maxQueuedPollInterval = time.Minute

// deployTransition computes the record after reading d at time at, and
// the event to count (the engine's rule, opState.sawFinal), with the
// build's duration.
func deployTransition(old deployRecord, d *apiclient.Deployment, at time.Time, how sighting) (deployRecord, finishEvent) {
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
	ev := rec.sawFinal(apiclient.IsDeploymentFinal(rec.Status), rec.Status, at, how)
	if ev.finished != "" && !rec.CreatedAt.IsZero() && !rec.EndedAt.IsZero() {
		ev.observeDur, ev.duration = true, rec.EndedAt.Sub(rec.CreatedAt)
	}
	return rec, ev
}

// scheduleDeploy sets e's next poll after a read of rec at at: none once
// final, the poll interval while it runs, and backing off while it stays
// queued (the interval doubled per poll that found it queued, up to a
// minute), so that one stuck in the queue costs a request a minute.
func scheduleDeploy(cfg *Config, e *deployEntry, rec *deployRecord, at time.Time) {
	switch {
	case rec.final():
		e.nextPoll = time.Time{}
		return
	case rec.Status == apiclient.DeploymentQueued:
		e.queuedPolls++
	default:
		e.queuedPolls = 0
	}
	d := cfg.PollInterval
	for i := 1; i < e.queuedPolls && d < maxQueuedPollInterval; i++ {
		d *= 2
	}
	e.nextPoll = at.Add(max(min(d, maxQueuedPollInterval), cfg.PollInterval))
}
