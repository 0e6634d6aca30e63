package tracker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
)

// Deployments are the tracker's second kind of operation: documentation
// builds triggered through the gateway (Deploy) or handed over with their
// status id (TrackDeployment), followed on the same poll rounds, state and
// rules as agent jobs: intent written before a trigger leaves, the
// deployment written before it is acknowledged, a final status written
// before it is counted, counted once across kill -9 and takeovers. The
// engine does all of that (opKind): this kind declares its record, its
// calls and its metrics.

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

// MaxBranchBytes bounds a preview's branch (the gateway refuses longer
// ones; git refs are rarely longer than 100 bytes).
const MaxBranchBytes = 255

// deployEntry is a followed deployment in memory.
type deployEntry = followed[deployRecord]

// deployments is the deployments in a tracker (the engine's opKind).
type deployments = opKind[deployRecord, *deployRecord, DeploymentView, *deployIntent]

// deploySpec declares the deployments to the engine.
var deploySpec = &opSpec[deployRecord, *deployRecord, DeploymentView, *deployIntent]{
	name: OpDeployment, what: "deployment", idKey: "deployment", idName: "status id", missing: "kind",
	bucket: bucketDeployments, intents: triggerIntents, decodeIntent: triggerCodec.decode,
	settle: "a deployment may have been started upstream; find it in the Mintlify dashboard (there is no API that lists deployments) " +
		"and, with its status id, follow it with POST /api/v1/project/%[1]s/update-status/{statusId}/track?intent=%[2]s, " +
		"or if none was started dismiss the trigger with DELETE /api/v1/project/%[1]s/unknown-triggers/%[2]s",
	// The trigger's kind is the deployment's: its status does not say.
	base:     func(in *deployIntent, id string) deployRecord { return deployRecord{Kind: in.Kind, ID: id} },
	endpoint: apiclient.EndpointDeploymentStatus, schedule: scheduleDeploy,
	metrics:   func(m *metrics) opCounter { return m.deploy },
	labels:    func(r *deployRecord) []string { return []string{r.Kind} },
	finishKV:  func(r *deployRecord) []any { return []any{"kind", r.Kind} },
	addTo:     func(pj *projectJobs, e *deployEntry) { pj.addDeployment(&e.rec) },
	unknownTo: func(pj *projectJobs, in *deployIntent) { pj.unknownDeploy(in.Kind) },
	rows: func(out *status.Jobs, newest []*deployEntry, _ time.Time, _ func(*deployEntry) DeploymentView) {
		out.Deployments = deploymentRows(newest[:min(status.MaxDeployments, len(newest))])
	},
}

// newDeployments are the deployments of s, read with its upstream's
// deployment endpoints (none: it follows no deployment).
func newDeployments(s *Tracker) *deployments {
	api := s.deployAPI
	read := func(ctx context.Context, project, id string, _ sighting) (seen[deployRecord], error) {
		d, err := api.DeploymentStatus(ctx, project, id)
		return func(old deployRecord, at time.Time, how sighting) (deployRecord, finishEvent) {
			return deployTransition(old, d, at, how)
		}, err
	}
	return &deployments{opSpec: deploySpec, s: s, records: s.deploys, on: func() bool { return api != nil }, get: read,
		throttled: func(endpoint string) time.Time { return api.ThrottledUntil(endpoint) }}
}

// DeploymentView is a followed deployment as the gateway shows it: the
// API's update-status field names for what the exporter keeps (the
// engine's OpView, and the status id, end and commit), plus kind and
// previewUrl.
type DeploymentView struct {
	ID         string            `json:"_id"`
	Kind       string            `json:"kind"`
	EndedAt    apiclient.APITime `json:"endedAt"`
	Commit     DeploymentCommit  `json:"commit"`
	PreviewURL string            `json:"previewUrl,omitempty"`
	OpView
}

// DeploymentCommit is the commit as far as it is kept.
type DeploymentCommit struct {
	SHA string `json:"sha,omitempty"`
	Ref string `json:"ref,omitempty"`
}

func (r *deployRecord) view(p *polling) DeploymentView {
	// Queued until the first read: the trigger's answer has no status.
	return DeploymentView{ID: r.ID, Kind: r.Kind, EndedAt: apiclient.APITime{Time: r.EndedAt}, Commit: DeploymentCommit{SHA: r.SHA, Ref: r.Branch},
		PreviewURL: r.PreviewURL, OpView: opView(&r.opState, p, r.final(), apiclient.DeploymentQueued)}
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
	case !validDeployKind(req.Kind):
		return fmt.Errorf("deploy: unknown deployment kind %q", req.Kind)
	}
	return checkIdempotencyKey(req.IdempotencyKey)
}

// Deployed is the answer to a trigger (the engine's Started).
type Deployed = Started[DeploymentView]

func triggerEndpoint(kind string) string {
	if kind == KindPreview {
		return apiclient.EndpointTriggerPreview
	}
	return apiclient.EndpointTriggerUpdate
}

// Deploy triggers a deployment upstream and follows it, crash-safely (the
// engine's start): an intent is written before the trigger is sent, and
// the deployment (with the intent deleted) before Deploy returns, so a 202
// answered for it means it survives kill -9. Idempotency keys work as for
// Create. A trigger refused because the API's Retry-After still runs
// returns an *apiclient.ThrottledError without sending anything.
func (s *Tracker) Deploy(ctx context.Context, req DeployRequest) (Deployed, error) {
	if err := req.validate(); err != nil {
		return Deployed{}, err
	}
	in := &deployIntent{opIntent: newOpIntent(s, "di_", req.Project, req.IdempotencyKey, req.Kind, req.Branch), Kind: req.Kind}
	send := func() (deployRecord, finishEvent, int, error) {
		var t *apiclient.Triggered
		var err error
		if req.Kind == KindPreview {
			t, err = s.deployAPI.TriggerPreview(ctx, req.Project, req.Branch)
		} else {
			t, err = s.deployAPI.TriggerUpdate(ctx, req.Project)
		}
		if err != nil {
			return deployRecord{}, finishEvent{}, 0, err
		}
		return deployRecord{Kind: req.Kind, ID: t.StatusID, Branch: bounded.Label(req.Branch), PreviewURL: bounded.Label(t.PreviewURL)}, finishEvent{}, t.Code, nil
	}
	return s.deployOps.start(ctx, startReq[deployRecord, *deployIntent]{in: in, admit: req.Admit, endpoint: triggerEndpoint(req.Kind), send: send,
		verb: "triggering a deployment", kv: []any{"kind", req.Kind}})
}
