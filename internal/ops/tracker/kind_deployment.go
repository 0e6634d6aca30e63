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
	"github.com/prometheus/client_golang/prometheus"
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

// DeploymentDurationBuckets are the classic buckets of
// mintlify_deployment_duration_seconds: 10s to 1h.
var DeploymentDurationBuckets = []float64{10, 20, 30, 45, 60, 90, 120, 180, 300, 600, 1200, 3600}

// newDeployMetrics are the mintlify_deployment* families (the engine's,
// opMetrics), by kind of deployment.
func newDeployMetrics() *opMetrics {
	return newOpMetrics(opFamilies{stem: "mintlify_deployment", noun: "deployment", requests: "deployment triggers", route: "unknown-triggers",
		ended: "endedAt", labels: []string{"kind"}, values: [][]string{{KindUpdate}, {KindPreview}},
		finals: []string{apiclient.DeploymentSuccess, apiclient.DeploymentFailure}, buckets: DeploymentDurationBuckets})
}

// deployGauges are a project's deployments of kind at scrape time.
func (pj *projectJobs) deployGauges(kind string) *opGauges {
	if pj.deploy == nil {
		pj.deploy = map[string]*opGauges{}
	}
	g := pj.deploy[kind]
	if g == nil {
		g = &opGauges{}
		pj.deploy[kind] = g
	}
	return g
}

// addDeployment adds r to the scrape-time state of its project.
func (pj *projectJobs) addDeployment(r *deployRecord) {
	pj.deployGauges(r.Kind).add(&r.opState, r.final(), r.Status == apiclient.DeploymentSuccess, r.EndedAt)
}

// unknownDeploy counts a trigger of kind of unknown outcome.
func (pj *projectJobs) unknownDeploy(kind string) { pj.deployGauges(kind).unknown++ }

// collectDeployments sends the deployments' gauges of project p as of now.
func (m *metrics) collectDeployments(ch chan<- prometheus.Metric, p string, pj *projectJobs, now time.Time) {
	for _, k := range DeploymentKinds {
		if g := pj.deployGauges(k); m.deploy.shown(g) {
			m.deploy.collect(ch, g, now, p, k)
		}
	}
}

// What a read of a deployment changes, and when it is read again.

// maxQueuedPollInterval caps the backoff of a deployment that stays
// queued: the poll interval doubles with each poll that finds it queued,
// up to this.
const maxQueuedPollInterval = time.Minute

// deployTransition computes the record after reading d at time at, and
// the event to count (the engine's rule, opState.sawFinal), with the
// build's duration.
func deployTransition(old deployRecord, d *apiclient.Deployment, at time.Time, how sighting) (deployRecord, finishEvent) {
	rec := old
	rec.Status = intern(bounded.Label(d.Status))
	if !d.CreatedAt.IsZero() {
		rec.CreatedAt = d.CreatedAt.UTC()
	}
	if !d.EndedAt.IsZero() {
		rec.EndedAt = d.EndedAt.UTC()
	}
	if d.Commit.SHA != "" {
		rec.SHA = bounded.Label(d.Commit.SHA)
	}
	if d.Commit.Ref != "" {
		rec.Branch = bounded.Label(d.Commit.Ref)
	}
	rec.Lost = false
	ev := rec.sawFinal(apiclient.IsDeploymentFinal(rec.Status), rec.Status, at, how)
	if ev.finished != "" && !rec.CreatedAt.IsZero() && !rec.EndedAt.IsZero() {
		ev.observeDur, ev.duration = true, rec.EndedAt.Sub(rec.CreatedAt)
	}
	return rec, ev
}

// scheduleDeploy sets e's next poll after a read of rec at at: none once
// final, the poll interval while it runs, and backing off while it stays
// queued (the interval doubled per poll that found it queued, up to a
// minute), so that one stuck in the queue costs a request a minute.
func scheduleDeploy(cfg *Config, e *deployEntry, rec *deployRecord, at time.Time) {
	switch {
	case rec.final():
		e.nextPoll = time.Time{}
		return
	case rec.Status == apiclient.DeploymentQueued:
		e.queuedPolls++
	default:
		e.queuedPolls = 0
	}
	d := cfg.PollInterval
	for i := 1; i < e.queuedPolls && d < maxQueuedPollInterval; i++ {
		d *= 2
	}
	e.nextPoll = at.Add(max(min(d, maxQueuedPollInterval), cfg.PollInterval))
}

// deployRecord is a followed deployment: its own state form (version
// 4), the engine's part (opState) and the deployment's. Its field names
// are the file format; they must not follow apiclient.Deployment.
type deployRecord struct {
	Kind string `json:"kind"`
	ID   string `json:"statusId"`
	// EndedAt is the API's (zero until it gives it).
	EndedAt time.Time `json:"endedAt,omitzero"`
	// Branch and SHA are the commit's ref and sha, PreviewURL the
	// preview's; each bounded (bounded.Label) when read.
	Branch     string `json:"branch,omitempty"`
	SHA        string `json:"sha,omitempty"`
	PreviewURL string `json:"previewUrl,omitempty"`
	// opState is the engine's part: project, origin, status, createdAt,
	// when it ended, whether it was counted or lost, and its trigger's
	// Idempotency-Key, hash, answer and user.
	opState
}

// final reports whether the deployment will not change any more.
func (r *deployRecord) final() bool { return r.Lost || apiclient.IsDeploymentFinal(r.Status) }

// The deployment's part of opRecord.
func (r *deployRecord) opID() string { return r.ID }
func (r *deployRecord) valid() bool  { return validDeployKind(r.Kind) }

// deployIntent is a trigger intent: written (fsync) before a trigger is
// sent upstream, deleted in the transaction that writes the deployment,
// or once the API's answer says nothing was started. One still there
// after a restart is a trigger of unknown outcome: its Idempotency-Key
// answers 409 until it is forgotten, Retention after it was sent (a
// deployment cannot be found by its branch: there is no list endpoint).
// It is its own state form (version 4): the engine's intent (opIntent)
// and the deployment's kind.
type deployIntent struct {
	opIntent
	Kind string `json:"kind"`
}

// triggerCodec reads and writes the trigger intents.
var triggerCodec = opIntentCodec[deployIntent, *deployIntent]{what: "deployment intent", missing: "kind",
	valid: func(in *deployIntent) bool { return validDeployKind(in.Kind) }}

// validDeployKind reports whether k is a kind of deployment the API has.
func validDeployKind(k string) bool { return k == KindUpdate || k == KindPreview }

// deploymentRows are the status page's rows of the deployments followed
// last (newest first).
func deploymentRows(recent []*deployEntry) []status.Deployment {
	out := []status.Deployment{}
	for _, e := range recent {
		v := e.rec.view(&e.polling)
		out = append(out, status.Deployment{Project: v.ProjectID, Kind: v.Kind, StatusID: v.ID, Status: v.Status, Branch: v.Commit.Ref,
			SHA: v.Commit.SHA, PreviewURL: v.PreviewURL, CreatedAt: v.CreatedAt.Time, EndedAt: v.EndedAt.Time})
	}
	return out
}

// Deployment triggers of unknown outcome: seen, listed and settled through
// the engine's intents, as every kind's. Issue 36 (4.2): after a kill -9
// during a trigger, only a start log line said so, and its Idempotency-Key
// answered 409 for the whole retention.

// UnknownTrigger is a deployment trigger whose outcome is unknown, as
// listed to operators: the engine's listing and the deployment's kind.
type UnknownTrigger struct {
	UnknownIntent
	Kind string `json:"kind"`
}

// DeploymentOps is the engine's part of the deployment routes: the
// followed deployments, and the triggers of unknown outcome (settled as
// TrackDeployment follows, of the trigger's kind).
func (s *Tracker) DeploymentOps() Ops[DeploymentView, UnknownTrigger] {
	return routesOf(s.deployOps, func(in *deployIntent) UnknownTrigger { return UnknownTrigger{unknownOf(&in.opIntent), in.Kind} })
}
