package tracker

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

// Following deployments: handing one over by its status id, reading them,
// and writing them to the state.

// TrackDeployment follows a deployment started elsewhere (its status id
// handed over) after one read upstream, which must name project. One
// final when first seen is kept but not counted (this exporter did not see
// it end). One followed already is returned as it is, AlreadyTracked,
// without asking upstream. kind is KindUpdate or KindPreview: the status
// does not say.
func (s *Tracker) TrackDeployment(ctx context.Context, project, kind, id string) (DeploymentView, TrackResult, error) {
	return s.trackDeployment(ctx, project, kind, id, seenAfterTheFact)
}

// trackDeployment is TrackDeployment; how is seenLive for a deployment
// this exporter triggered and never counted (ResolveTrigger, a handover of
// one whose record was not saved), whose final status is then counted.
func (s *Tracker) trackDeployment(ctx context.Context, project, kind, id string, how sighting) (DeploymentView, TrackResult, error) {
	s.inflight.Add(1)
	defer s.inflight.Done()
	if s.deployAPI == nil {
		return DeploymentView{}, NewlyTracked, errNoDeployments
	}
	if kind != KindUpdate && kind != KindPreview {
		return DeploymentView{}, NewlyTracked, fmt.Errorf("unknown deployment kind %q", kind)
	}
	if err := bounded.CheckID("status id", id); err != nil {
		return DeploymentView{}, NewlyTracked, &BadIDError{Err: err}
	}
	dkey := storeKey(project, id)
	s.mu.RLock()
	if e := s.deploys[dkey]; e != nil {
		v := e.view()
		s.mu.RUnlock()
		return v, AlreadyTracked, nil
	}
	s.mu.RUnlock()
	d, err := readOnce(s.deployAPI.ThrottledUntil, apiclient.EndpointDeploymentStatus, "deployment "+id+" of project "+project,
		func() (*apiclient.Deployment, error) { return s.deployAPI.DeploymentStatus(ctx, project, id) })
	if err != nil {
		return DeploymentView{}, NewlyTracked, err
	}
	at := s.cfg.Now()
	rec := deployRecord{Project: project, Kind: kind, ID: id, Origin: OriginTrack, TrackedAt: at, SubmittedBy: userFrom(ctx)}
	rec, ev := deployTransition(rec, d, at, how)
	e := &deployEntry{rec: rec, polling: polling{lastPolled: at, pollPending: true}}
	s.scheduleDeploy(e, at)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	if old := s.deploys[dkey]; old != nil { // followed concurrently
		v := old.view()
		s.mu.Unlock()
		return v, AlreadyTracked, nil
	}
	s.deploys[dkey] = e
	s.mu.Unlock()
	perr := s.persistDeploy(dkey, &rec)
	s.mu.Lock()
	defer s.mu.Unlock()
	e.pollPending = false
	e.written(perr)
	if perr != nil {
		return e.view(), NewlyTracked, &StateError{JobID: id, Err: perr, Deployment: true}
	}
	s.metrics.deploy.count(s.metrics.has, rec.Project, rec.Kind, ev) // after the write, under the lock that shows it
	return e.view(), NewlyTracked, nil
}

// Deployment returns the followed deployment with status id id, of any
// project of projects (nil: any).
func (s *Tracker) Deployment(id string, projects map[string]bool) (DeploymentView, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, e := range s.deploys {
		if e.rec.ID == id && (projects == nil || projects[e.rec.Project]) {
			return e.view(), true
		}
	}
	return DeploymentView{}, false
}

// Deployments lists a project's followed deployments, newest first
// (tracked, then status id).
func (s *Tracker) Deployments(project string) []DeploymentView {
	s.mu.RLock()
	out := []DeploymentView{}
	for _, e := range s.deploys {
		if e.rec.Project == project {
			out = append(out, e.view())
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b DeploymentView) int {
		if c := b.Tracking.TrackedAt.Compare(a.Tracking.TrackedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return out
}

// RecentDeployments returns, per project, when triggers of kind were sent
// within window: what the gateway's local limits count after a restart.
func (s *Tracker) RecentDeployments(kind string, window time.Duration) map[string][]time.Time {
	now := s.cfg.Now()
	out := map[string][]time.Time{}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, e := range s.deploys {
		if e.rec.Kind == kind && e.rec.Origin == OriginGateway && now.Sub(e.rec.TrackedAt) < window {
			out[e.rec.Project] = append(out[e.rec.Project], e.rec.TrackedAt)
		}
	}
	for _, in := range s.deployIntents {
		if in.Kind == kind && now.Sub(in.StartedAt) < window {
			out[in.Project] = append(out[in.Project], in.StartedAt)
		}
	}
	for _, ts := range out {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	}
	return out
}

// persistDeploy writes rec durably, with extra in the same transaction.
func (s *Tracker) persistDeploy(key string, rec *deployRecord, extra ...store.Op) error {
	data, err := encodeDeployRecord(rec)
	if err == nil {
		err = s.store.Apply(append([]store.Op{{Bucket: bucketDeployments, Key: key, Value: data}}, extra...)...)
	}
	if err != nil {
		s.writeFailed(err)
		level.Error(s.logger).Log("msg", "could not write a deployment to the state file", "project", rec.Project, "deployment", rec.ID, "err", err)
	}
	return err
}
