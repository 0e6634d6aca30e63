package tracker

import (
	"slices"
	"strings"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
)

// statusLocked adds the deployments' rows of the status page: those
// followed last. s.mu is held.
func (k deploymentKind) statusLocked(out *status.Jobs, _ time.Time) {
	out.Deployments = k.s.recentDeploymentsLocked(status.MaxDeployments)
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
