package tracker

import "github.com/mintlify-exporter/mintlify_exporter/internal/status"

// Status is the status page's view of the operations of every kind: the
// metrics' view of each project, and each kind's own rows (statusLocked:
// the most overdue job poll, the deployments followed last).
func (s *Tracker) Status() *status.Jobs {
	out := &status.Jobs{}
	for _, pj := range s.snapshot() {
		out.Projects = append(out.Projects, status.ProjectJobs{Project: pj.project, ByStatus: pj.byStatus,
			UnknownCreates: pj.unknownCreates, UnknownTriggers: pj.unknownTriggers(), OldestActiveAt: pj.oldestActive})
	}
	now := s.cfg.Now()
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, k := range s.kinds {
		k.statusLocked(out, now)
	}
	return out
}

// unknownTriggers counts the project's deployment triggers of unknown
// outcome, of every kind of deployment.
func (pj *projectJobs) unknownTriggers() int {
	n := 0
	for _, g := range pj.deploy {
		n += g.unknown
	}
	return n
}
