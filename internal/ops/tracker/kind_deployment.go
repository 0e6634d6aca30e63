package tracker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

// Deployments are the tracker's second kind of operation: documentation
// builds triggered through the gateway (Deploy) or handed over with their
// status id (TrackDeployment), followed on the same poll rounds, state and
// rules as agent jobs: intent written before a trigger leaves, the
// deployment written before it is acknowledged, a final status written
// before it is counted, counted once across kill -9 and takeovers.

// Kinds of deployment (the kind label).
const (
	KindUpdate  = "update"  // POST /v1/project/update: the configured branch
	KindPreview = "preview" // POST /v1/project/preview: a branch's preview
)

// DeploymentKinds are the kinds, in label order.
var DeploymentKinds = []string{KindUpdate, KindPreview}

// DeploymentUpstream is the API of deployments: an *apiclient.Client, or
// one that picks each project's organization's client. An Upstream
// without it follows agent jobs only (Deploy and TrackDeployment fail).
type DeploymentUpstream interface {
	TriggerUpdate(ctx context.Context, project string) (*apiclient.Triggered, error)
	TriggerPreview(ctx context.Context, project, branch string) (*apiclient.Triggered, error)
	DeploymentStatus(ctx context.Context, project, statusID string) (*apiclient.Deployment, error)
	ThrottledUntil(endpoint string) time.Time
}

// errNoDeployments is the error of a deployment call on a tracker whose
// upstream has no deployment endpoints.
var errNoDeployments = errors.New("tracker: the upstream has no deployment endpoints")

// Tuning of deployment polling that is not worth a flag.
const (
	// maxQueuedPollInterval caps the backoff of a deployment that stays
	// queued: the poll interval doubles with each poll that finds it
	// queued, up to this.
	maxQueuedPollInterval = time.Minute
	// MaxBranchBytes bounds a preview's branch (the gateway refuses longer
	// ones; git refs are rarely longer than 100 bytes).
	MaxBranchBytes = 255
)

// deployEntry is a followed deployment in memory: its record and its
// scheduling state.
type deployEntry struct {
	rec deployRecord
	polling
	queuedPolls int
}

// DeploymentView is a followed deployment as the gateway shows it: the
// API's update-status field names for what the exporter keeps, plus kind,
// previewUrl and tracking.
type DeploymentView struct {
	ID         string            `json:"_id"`
	ProjectID  string            `json:"projectId"`
	Kind       string            `json:"kind"`
	Status     string            `json:"status"`
	CreatedAt  apiclient.APITime `json:"createdAt"`
	EndedAt    apiclient.APITime `json:"endedAt"`
	Commit     DeploymentCommit  `json:"commit"`
	PreviewURL string            `json:"previewUrl,omitempty"`
	Tracking   Followed          `json:"tracking"`
}

// DeploymentCommit is the commit as far as it is kept.
type DeploymentCommit struct {
	SHA string `json:"sha,omitempty"`
	Ref string `json:"ref,omitempty"`
}

func (e *deployEntry) view() DeploymentView {
	r := &e.rec
	v := DeploymentView{ID: r.ID, ProjectID: r.Project, Kind: r.Kind, Status: r.Status,
		CreatedAt: apiclient.APITime{Time: r.CreatedAt}, EndedAt: apiclient.APITime{Time: r.EndedAt},
		Commit: DeploymentCommit{SHA: r.SHA, Ref: r.Branch}, PreviewURL: r.PreviewURL,
		Tracking: Followed{Origin: r.Origin, TrackedAt: r.TrackedAt, LastError: e.lastErr, SubmittedBy: r.SubmittedBy}}
	if r.Status == "" {
		v.Status = apiclient.DeploymentQueued // triggered, not read yet
	}
	if r.Lost {
		v.Status, v.Tracking.LastUpstreamStatus = StatusLost, r.Status
	}
	v.Tracking = e.tracking(v.Tracking, r.TerminalAt, r.final())
	return v
}

// DeployRequest is a deployment to trigger.
type DeployRequest struct {
	Project string
	// Kind is KindUpdate or KindPreview; Branch is a preview's (1 to
	// MaxBranchBytes bytes), empty for an update.
	Kind, Branch string
	// IdempotencyKey, when not empty, makes retries safe as for jobs
	// (Create): a key already used in the project is not sent again.
	IdempotencyKey string
	// Admit, when not nil, is called once the request is known to be a
	// new trigger, before anything is written or sent (the gateway's local
	// limits); its error is returned as it is.
	Admit func() error
}

// validate refuses what must never be sent (the gateway checks it first):
// nothing is written or sent for it.
func (req *DeployRequest) validate() error {
	switch {
	case req.Project == "":
		return errors.New("deploy: empty project")
	case req.Kind == KindUpdate && req.Branch != "":
		return errors.New("deploy: an update deploys the project's configured branch; give no branch")
	case req.Kind == KindPreview && (strings.TrimSpace(req.Branch) == "" || len(req.Branch) > MaxBranchBytes):
		return fmt.Errorf("deploy: a preview needs a branch of 1 to %d bytes", MaxBranchBytes)
	case req.Kind != KindUpdate && req.Kind != KindPreview:
		return fmt.Errorf("deploy: unknown deployment kind %q", req.Kind)
	}
	return nil
}

// Deployed is the answer to a trigger.
type Deployed struct {
	Deployment DeploymentView
	// Code is the HTTP status of the API's answer (for a replay, of the
	// first answer).
	Code     int
	Replayed bool
}

// DeployOutcomeUnknownError: a trigger was perhaps sent but its answer
// never recorded (Err is the failure, nil when met again through its
// key). Its Idempotency-Key answers 409 until the trigger is settled
// (ResolveTrigger, DismissTrigger) or Retention has passed.
type DeployOutcomeUnknownError struct {
	Project, Intent string
	StartedAt       time.Time
	Err             error
}

func (e *DeployOutcomeUnknownError) Error() string {
	return withCause(fmt.Sprintf("the outcome of deployment trigger %s of project %s (started %s) is unknown: a deployment may have been started upstream; "+
		"find it in the Mintlify dashboard (there is no API that lists deployments) and, with its status id, follow it with POST "+
		"/api/v1/project/%s/update-status/{statusId}/track?intent=%s, or if none was started dismiss the trigger with DELETE /api/v1/project/%s/unknown-triggers/%s",
		e.Intent, e.Project, e.StartedAt.UTC().Format(time.RFC3339), e.Project, e.Intent, e.Project, e.Intent), e.Err)
}

func (e *DeployOutcomeUnknownError) Unwrap() error { return e.Err }

func deployRequestHash(kind, branch string) string {
	sum := sha256.Sum256([]byte(kind + "\x00" + branch))
	return hex.EncodeToString(sum[:])
}

func triggerEndpoint(kind string) string {
	if kind == KindPreview {
		return apiclient.EndpointTriggerPreview
	}
	return apiclient.EndpointTriggerUpdate
}

// Deploy triggers a deployment upstream and follows it, crash-safely: an
// intent is written before the trigger is sent, and the deployment (with
// the intent deleted) before Deploy returns, so a 202 answered for it
// means it survives kill -9. Idempotency keys work as for Create. A
// trigger refused because the API's Retry-After still runs returns an
// *apiclient.ThrottledError without sending anything.
func (s *Tracker) Deploy(ctx context.Context, req DeployRequest) (Deployed, error) {
	s.inflight.Add(1)
	defer s.inflight.Done()
	if s.deployAPI == nil {
		return Deployed{}, errNoDeployments
	}
	if err := req.validate(); err != nil {
		return Deployed{}, err
	}
	key := req.IdempotencyKey
	if key != "" && !ValidIdempotencyKey(key) {
		return Deployed{}, errors.New("invalid idempotency key: 1 to 255 printable ASCII characters")
	}
	in := &deployIntent{ID: "di_" + strings.TrimPrefix(newIntentID(), "ci_"), Project: req.Project, Kind: req.Kind, IdemKey: key,
		RequestHash: deployRequestHash(req.Kind, req.Branch), StartedAt: s.cfg.Now(), inFlight: true}
	ikey := storeKey(in.Project, in.ID)
	replay := func(ref keyRef) (Deployed, error) { return s.replayDeployLocked(ref, in.RequestHash) }
	if d, done, err := openIntent(s, triggerIntents, ikey, in, req.Admit, replay, s.deployAPI.ThrottledUntil, triggerEndpoint(req.Kind)); done || err != nil {
		return d, err
	}
	var (
		t   *apiclient.Triggered
		err error
	)
	if req.Kind == KindPreview {
		t, err = s.deployAPI.TriggerPreview(ctx, req.Project, req.Branch)
	} else {
		t, err = s.deployAPI.TriggerUpdate(ctx, req.Project)
	}
	if err == nil {
		err = unkeepableID("status id", t.StatusID)
	}
	if err != nil {
		if sentFailed(s, triggerIntents, ikey, in, err, "kind", req.Kind) {
			return Deployed{}, &DeployOutcomeUnknownError{Project: req.Project, Intent: in.ID, StartedAt: in.StartedAt, Err: err}
		}
		return Deployed{}, fmt.Errorf("triggering a deployment of project %s: %w", req.Project, err)
	}
	at := s.cfg.Now()
	rec := deployRecord{Project: req.Project, Kind: req.Kind, ID: t.StatusID, Origin: OriginGateway, TrackedAt: at,
		Branch: bounded.Label(req.Branch), PreviewURL: bounded.Label(t.PreviewURL), IdemKey: key, RequestHash: in.RequestHash,
		Code: t.Code, SubmittedBy: userFrom(ctx)}
	dkey := storeKey(rec.Project, rec.ID)
	v, err := followStarted(s, startedOp[*deployEntry, DeploymentView, *deployIntent]{records: s.deploys, key: dkey, e: &deployEntry{rec: rec},
		k: triggerIntents, in: in, ikey: ikey, idemKey: key, ref: keyRef{deploy: dkey},
		persist:  func(extra ...store.Op) error { return s.persistDeploy(dkey, &rec, extra...) },
		stateErr: func(err error) error { return &StateError{JobID: rec.ID, Err: err, Intent: ikey, Deployment: true} }})
	if err != nil {
		return Deployed{}, err
	}
	return Deployed{Deployment: v, Code: t.Code}, nil
}

// replayDeployLocked answers a trigger whose key is known. s.mu is held.
func (s *Tracker) replayDeployLocked(ref keyRef, hash string) (Deployed, error) {
	switch in := ref.deployIntent; {
	case in != nil:
		return Deployed{}, replayIntentLocked(in, hash, func() error {
			return &DeployOutcomeUnknownError{Project: in.Project, Intent: in.ID, StartedAt: in.StartedAt}
		})
	case ref.deploy == "":
		// The key of a job, a follow-up or their intents: another request.
		return Deployed{}, ErrIdempotencyKeyReused
	}
	e := s.deploys[ref.deploy]
	if err := replayRecordLocked(e != nil, func() (string, string) { return e.rec.RequestHash, e.intentKey }, hash,
		func() error {
			return &StateError{JobID: e.rec.ID, Err: errNotWrittenYet, Intent: e.intentKey, Deployment: true}
		}); err != nil {
		return Deployed{}, err
	}
	return Deployed{Deployment: e.view(), Code: e.rec.Code, Replayed: true}, nil
}
