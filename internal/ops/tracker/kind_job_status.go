package tracker

import (
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
)

// statusLocked adds the jobs' rows of the status page: the poll furthest
// past its time. s.mu is held.
func (k jobKind) statusLocked(out *status.Jobs, now time.Time) {
	s := k.s
	for _, e := range s.entries {
		if !s.projects[e.rec.Project] || e.nextPoll.IsZero() || !e.nextPoll.Before(now) || !(e.pollPending || e.polled(now, &s.cfg)) {
			continue
		}
		if out.MostOverduePoll == nil || e.nextPoll.Before(out.MostOverduePoll.DueAt) {
			out.MostOverduePoll = &status.Poll{Project: e.rec.Project, JobID: e.rec.Job.ID, DueAt: e.nextPoll}
		}
	}
}
