package tracker

import (
	"fmt"
	"slices"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
)

// Accepts returns the ids of projects the tracker follows.
func (s *Tracker) Accepts(ids []string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return !s.projects[id] })
}

// AddProjects starts following projects added to the configuration while
// the tracker runs (a reload): their jobs, create intents and idempotency
// keys are read from the state as New reads those of the projects it
// starts with, so a project added by a reload takes jobs at once, and jobs
// it had in an earlier run are followed again, each by one entry. Projects
// followed already are left as they are (jobs are never dropped: a project
// removed from the configuration keeps its tracked jobs until they end).
// When their state cannot be read it fails and changes nothing: they are
// not followed, accept no job and export no series. Reloads call it one at
// a time.
func (s *Tracker) AddProjects(ids []string) error {
	s.mu.RLock()
	var added []string
	for _, id := range ids {
		if !s.projects[id] && !slices.Contains(added, id) {
			added = append(added, id)
		}
	}
	s.mu.RUnlock()
	if len(added) == 0 {
		return nil
	}
	if err := config.Projects(added); err != nil {
		return fmt.Errorf("agent jobs: %w", err)
	}
	// Their series first, so that a job loaded below and counted at
	// once is not missed.
	s.metrics.addProjects(added)
	want := map[string]bool{}
	for _, id := range added {
		want[id] = true
	}
	if err := s.load(func(p string) bool { return want[p] }); err != nil {
		// Nothing was merged: the projects stay unfollowed, without
		// series, until a later reload reads them.
		s.metrics.dropProjects(added)
		return fmt.Errorf("agent jobs of %v: %w", added, err)
	}
	s.mu.Lock()
	for _, id := range added {
		s.projects[id] = true
	}
	s.projectList = append(s.projectList, added...)
	s.mu.Unlock()
	return nil
}
