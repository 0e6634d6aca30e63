package tracker

import (
	"context"
	"fmt"
	"time"
)

// Following deployments: handing one over by its status id, and reading
// those followed (the engine's opKind does both).

// TrackDeployment follows a deployment started elsewhere (its status id
// handed over) after one read upstream, which must name project. One
// final when first seen is kept but not counted (this exporter did not see
// it end). One followed already is returned as it is, AlreadyTracked,
// without asking upstream. kind is KindUpdate or KindPreview: the status
// does not say.
func (s *Tracker) TrackDeployment(ctx context.Context, project, kind, id string) (DeploymentView, TrackResult, error) {
	if !validDeployKind(kind) {
		return DeploymentView{}, NewlyTracked, fmt.Errorf("unknown deployment kind %q", kind)
	}
	return s.deployOps.track(ctx, project, id, deployRecord{Kind: kind, ID: id}, seenAfterTheFact)
}

// Deployment returns the followed deployment with status id id, of any
// project of projects (nil: any).
func (s *Tracker) Deployment(id string, projects map[string]bool) (DeploymentView, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, e := range s.deploys {
		if e.rec.ID == id && (projects == nil || projects[e.rec.Project]) {
			return e.rec.view(&e.polling), true
		}
	}
	return DeploymentView{}, false
}

// RecentDeployments returns, per project, when triggers of kind were sent
// within window: what the gateway's local limits count after a restart.
func (s *Tracker) RecentDeployments(kind string, window time.Duration) map[string][]time.Time {
	return s.deployOps.startedRecently(window, func(r *deployRecord) bool { return r.Kind == kind },
		func(in *deployIntent) bool { return in.Kind == kind })
}
