package tracker

import (
	"slices"
	"strings"

	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
)

// Status is the tracked jobs by project and status, and the poll furthest
// past its time, for the status page: the metrics' view of the jobs, plus
// which job is the most overdue.
func (s *Tracker) Status() *status.Jobs {
	out := &status.Jobs{}
	for _, pj := range s.snapshot() {
		out.Projects = append(out.Projects, status.ProjectJobs{Project: pj.project, ByStatus: pj.byStatus,
			UnknownCreates: pj.unknownCreates, UnknownTriggers: sumValues(pj.unknownTriggers), OldestActiveAt: pj.oldestActive})
	}
	now := s.cfg.Now()
	s.mu.RLock()
	defer s.mu.RUnlock()
	out.Deployments = s.recentDeploymentsLocked(status.MaxDeployments)
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

// recentDeploymentsLocked are the n deployments followed last (newest
// first) of the projects followed, for the status page. s.mu is held.
func (s *Tracker) recentDeploymentsLocked(n int) []status.Deployment {
	recent := make([]*deployEntry, 0, len(s.deploys))
	for _, e := range s.deploys {
		if s.projects[e.rec.Project] {
			recent = append(recent, e)
		}
	}
	slices.SortFunc(recent, func(a, b *deployEntry) int {
		if c := b.rec.TrackedAt.Compare(a.rec.TrackedAt); c != 0 {
			return c
		}
		return strings.Compare(b.rec.ID, a.rec.ID)
	})
	out := []status.Deployment{}
	for _, e := range recent[:min(n, len(recent))] {
		v := e.view()
		out = append(out, status.Deployment{Project: v.ProjectID, Kind: v.Kind, StatusID: v.ID, Status: v.Status, Branch: v.Commit.Ref,
			SHA: v.Commit.SHA, PreviewURL: v.PreviewURL, CreatedAt: v.CreatedAt.Time, EndedAt: v.EndedAt.Time})
	}
	return out
}

// sumValues is the sum of m's values (deployment triggers of unknown
// outcome of every kind of deployment).
func sumValues(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
