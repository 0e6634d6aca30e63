package tracker

import (
	"context"
	"net/http"
	"time"

	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

// Deployment triggers of unknown outcome: seen, listed and settled as the
// creates of agent jobs are (UnknownCreates, ResolveIntent, DismissIntent).
// Issue 36 (4.2): after a kill -9 during a trigger, only a start log line
// said so, and its Idempotency-Key answered 409 for the whole retention.

// UnknownTrigger is a deployment trigger whose outcome is unknown, as
// listed to operators.
type UnknownTrigger struct {
	ID             string    `json:"id"`
	Project        string    `json:"project"`
	Kind           string    `json:"kind"`
	IdempotencyKey string    `json:"idempotencyKey,omitempty"`
	StartedAt      time.Time `json:"startedAt"`
}

// UnknownTriggers lists project's deployment triggers of unknown outcome,
// oldest first (triggers under way are not listed).
func (s *Tracker) UnknownTriggers(project string) []UnknownTrigger {
	return unknownIntents(s, triggerIntents, project, func(in *deployIntent) UnknownTrigger {
		return UnknownTrigger{ID: in.ID, Project: in.Project, Kind: in.Kind, IdempotencyKey: in.IdemKey, StartedAt: in.StartedAt}
	})
}

// DismissTrigger deletes a deployment trigger of unknown outcome: the
// operator found that no deployment was started (or gives it up). Its
// Idempotency-Key is free again.
func (s *Tracker) DismissTrigger(project, id string) error {
	return dismissIntent(s, triggerIntents, project, id)
}

// ResolveTrigger settles a deployment trigger of unknown outcome with the
// deployment the operator found it started: the deployment is followed
// (as by TrackDeployment, of the trigger's kind) and takes the trigger's
// Idempotency-Key, so that a retry with the key is answered with it, and
// the intent is deleted, in one write.
func (s *Tracker) ResolveTrigger(ctx context.Context, project, intentID, statusID string) (DeploymentView, TrackResult, error) {
	// Triggered through the gateway and never counted: its final status
	// is counted even when it is final at this first read.
	follow := func(in *deployIntent) (DeploymentView, TrackResult, error) {
		return s.trackDeployment(ctx, project, in.Kind, statusID, seenLive)
	}
	return settleIntent(s, triggerIntents, project, intentID, follow, func(ikey string, in *deployIntent) (DeploymentView, error) {
		return s.adoptTriggerKey(ikey, in, intentID, statusID)
	})
}

// adoptTriggerKey gives the deployment statusID, followed, the
// Idempotency-Key of the trigger intent in (under ikey), and the answer
// the trigger would have had, and writes it with the intent's deletion.
// s.wmu is held (settleIntent).
func (s *Tracker) adoptTriggerKey(ikey string, in *deployIntent, intentID, statusID string) (DeploymentView, error) {
	dkey := storeKey(in.Project, statusID)
	e := lockFollowed(s, s.deploys, dkey)
	if e == nil {
		return DeploymentView{}, errOtherKey("deployment", statusID)
	}
	rec := e.rec
	if rec.IdemKey != "" && rec.IdemKey != in.IdemKey {
		s.mu.Unlock()
		return DeploymentView{}, errOtherKey("deployment", statusID)
	}
	rec.IdemKey, rec.RequestHash = in.IdemKey, in.RequestHash
	if rec.Code == 0 {
		rec.Code = http.StatusAccepted // what the trigger would have been answered
	}
	s.mu.Unlock()
	if err := s.persistDeploy(dkey, &rec, store.Op{Bucket: bucketDeployIntents, Key: ikey}); err != nil {
		return DeploymentView{}, &StateError{JobID: statusID, Err: err, Deployment: true}
	}
	s.mu.Lock()
	e.rec.IdemKey, e.rec.RequestHash, e.rec.Code = rec.IdemKey, rec.RequestHash, rec.Code
	settledLocked(s, triggerIntents, ikey, in, in.Project, rec.IdemKey, keyRef{deploy: dkey})
	v := e.view()
	s.mu.Unlock()
	level.Info(s.logger).Log("msg", "deployment trigger of unknown outcome resolved", "project", in.Project, "intent", intentID, "deployment", statusID)
	return v, nil
}
