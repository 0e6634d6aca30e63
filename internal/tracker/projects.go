package tracker

import "slices"

// Accepts returns the ids of projects the tracker follows: a project added
// to the configuration by a reload accepts jobs after the next restart,
// which loads its jobs from the state file.
func (s *Tracker) Accepts(ids []string) []string {
	return slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return !s.projects[id] })
}
