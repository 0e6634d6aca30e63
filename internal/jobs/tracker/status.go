package tracker

import (
	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
)

// Status is the tracked jobs by project and status, and the poll furthest
// past its time, for the status page: the metrics' view of the jobs, plus
// which job is the most overdue.
func (s *Tracker) Status() *status.Jobs {
	out := &status.Jobs{}
	for _, pj := range s.snapshot() {
		out.Projects = append(out.Projects, status.ProjectJobs{Project: pj.project, ByStatus: pj.byStatus,
			UnknownCreates: pj.unknownCreates, OldestActiveAt: pj.oldestActive})
	}
	now := s.cfg.Now()
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, e := range s.entries {
		if !s.projects[e.rec.Project] || e.nextPoll.IsZero() || !e.nextPoll.Before(now) || !(e.pollPending || e.polled(now, &s.cfg)) {
			continue
		}
		if out.MostOverduePoll == nil || e.nextPoll.Before(out.MostOverduePoll.DueAt) {
			out.MostOverduePoll = &status.Poll{Project: e.rec.Project, JobID: e.rec.Job.ID, DueAt: e.nextPoll}
		}
	}
	return out
}
