package tracker

import (
	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
)

// Status is the tracked jobs by project and status, and the poll furthest
// past its time, for the status page.
func (s *Tracker) Status() *status.Jobs {
	now := s.cfg.Now()
	s.mu.RLock()
	defer s.mu.RUnlock()
	by := map[string]*status.ProjectJobs{}
	out := &status.Jobs{}
	for _, p := range s.cfg.Projects {
		out.Projects = append(out.Projects, status.ProjectJobs{Project: p, ByStatus: map[string]int{}})
	}
	for i := range out.Projects {
		by[out.Projects[i].Project] = &out.Projects[i]
	}
	for _, e := range s.entries {
		pj := by[e.rec.Project]
		if pj == nil {
			continue
		}
		st := e.rec.viewStatus()
		pj.ByStatus[st]++
		if !e.rec.Lost && !apiclient.IsTerminal(st) {
			c := e.rec.turnStart()
			if c.IsZero() {
				c = e.rec.TrackedAt
			}
			if pj.OldestActiveAt.IsZero() || c.Before(pj.OldestActiveAt) {
				pj.OldestActiveAt = c
			}
		}
		if !e.nextPoll.IsZero() && e.nextPoll.Before(now) && (e.pollPending || e.polled(now, &s.cfg)) &&
			(out.MostOverduePoll == nil || e.nextPoll.Before(out.MostOverduePoll.DueAt)) {
			out.MostOverduePoll = &status.Poll{Project: e.rec.Project, JobID: e.rec.Job.ID, DueAt: e.nextPoll}
		}
	}
	for _, in := range s.intents {
		if pj := by[in.rec.Project]; pj != nil && !in.inFlight {
			pj.UnknownCreates++
		}
	}
	return out
}
