// Package deployment is a kind of operation (engine.Kind): documentation
// builds triggered through the gateway (POST .../update/{project},
// .../preview/{project}) or handed over with their status id, followed on
// the engine's rounds to success or failure. The engine writes, counts,
// replays and settles them as every kind's; this package declares the
// record, the API's calls, the routes, the metric families and the status
// page's rows.
package deployment

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
)

// Kinds of deployment (the kind label).
const (
	KindUpdate  = "update"  // POST /v1/project/update: the configured branch
	KindPreview = "preview" // POST /v1/project/preview: a branch's preview
)

// MaxBranchBytes bounds a preview's branch (the gateway refuses longer
// ones; git refs are rarely longer than 100 bytes).
const MaxBranchBytes = 255

// validKind reports whether k is a kind of deployment the API has.
func validKind(k string) bool { return k == KindUpdate || k == KindPreview }

// Record is a followed deployment: its own state form (schema version
// 4), the engine's part (engine.Op) and the deployment's. Its field names
// are the file format; they must not follow apiclient.Deployment.
type Record struct {
	Kind     string `json:"kind"`
	StatusID string `json:"statusId"`
	// EndedAt is the API's (zero until it gives it).
	EndedAt time.Time `json:"endedAt,omitzero"`
	// Branch and SHA are the commit's ref and sha, PreviewURL the
	// preview's; each bounded (bounded.Label) when read.
	Branch     string `json:"branch,omitempty"`
	SHA        string `json:"sha,omitempty"`
	PreviewURL string `json:"previewUrl,omitempty"`
	engine.Op
	// queued counts the polls in a row that found it queued (not kept).
	queued int
}

// Intent is a trigger's intent: its own state form (version 4), the
// engine's and the deployment's kind.
type Intent struct {
	engine.IntentBase
	Kind string `json:"kind"`
}

func (in *Intent) Valid() bool { return validKind(in.Kind) }

// Record is the deployment the operator found the trigger started: the
// trigger's kind is the deployment's (its status does not say).
func (in *Intent) Record(id string) engine.Record { return &Record{Kind: in.Kind, StatusID: id} }

// The deployment's part of engine.Record.

func (r *Record) ID() string                            { return r.StatusID }
func (r *Record) Valid() bool                           { return validKind(r.Kind) }
func (r *Record) Final() bool                           { return r.Lost || apiclient.IsDeploymentFinal(r.Status) }
func (r *Record) Polled(time.Time, *engine.Config) bool { return !r.Final() }
func (r *Record) Clone() engine.Record                  { c := *r; return &c }
func (r *Record) Saw(read any, at, _ time.Time, how engine.Sighting) (engine.Event, bool) {
	old := *r
	d := read.(*apiclient.Deployment)
	r.Status = engine.Intern(bounded.Label(d.Status))
	if !d.CreatedAt.IsZero() {
		r.CreatedAt = d.CreatedAt.UTC()
	}
	if !d.EndedAt.IsZero() {
		r.EndedAt = d.EndedAt.UTC()
	}
	if d.Commit.SHA != "" {
		r.SHA = bounded.Label(d.Commit.SHA)
	}
	if d.Commit.Ref != "" {
		r.Branch = bounded.Label(d.Commit.Ref)
	}
	r.Lost = false
	ev := r.SawFinal(apiclient.IsDeploymentFinal(r.Status), r.Status, at, how)
	if ev.Finished != "" && !r.CreatedAt.IsZero() && !r.EndedAt.IsZero() {
		ev.Timed, ev.Duration = true, r.EndedAt.Sub(r.CreatedAt)
	}
	old.queued = r.queued
	return ev, *r != old
}

// maxQueuedPollInterval caps the backoff of a deployment that stays
// queued.
const maxQueuedPollInterval = time.Minute

// Next is none once final, the poll interval while it runs, and backing
// off while it stays queued (the interval doubled per poll that found it
// queued, up to a minute), so that one stuck in the queue costs a request
// a minute.
func (r *Record) Next(at, _ time.Time, cfg *engine.Config) time.Time {
	switch {
	case r.Final():
		return time.Time{}
	case r.Status == apiclient.DeploymentQueued:
		r.queued++
	default:
		r.queued = 0
	}
	d := cfg.PollInterval
	for i := 1; i < r.queued && d < maxQueuedPollInterval; i++ {
		d *= 2
	}
	return at.Add(max(min(d, maxQueuedPollInterval), cfg.PollInterval))
}

// Name is the name of the deployments (engine.Decl.Name).
const Name = "deployment"

// decl declares the deployments.
var decl = &engine.Decl{Order: 20, Name: Name, What: "deployment", Request: "deployment trigger", IDKey: "deployment", IDName: "status id",
	Records: "deployments", Intents: "deploy_intents", IntentPrefix: "di_", ReadEndpoint: apiclient.EndpointDeploymentStatus,
	Settle: "a deployment may have been started upstream; find it in the Mintlify dashboard (there is no API that lists deployments) " +
		"and, with its status id, follow it with POST /api/v1/project/%[1]s/update-status/{statusId}/track?intent=%[2]s, " +
		"or if none was started dismiss the trigger with DELETE /api/v1/project/%[1]s/unknown-triggers/%[2]s",
	UnknownGauge: "mintlify_deployment_unknown_outcomes", Doc: "deployments.md",
	Routes: engine.Routes{Prefix: "/api/v1/project/", Track: "/api/v1/project/%[1]s/update-status/%[2]s/track", List: "/api/v1/project/%[1]s/deployments",
		Unknown: "/api/v1/project/%[1]s/unknown-triggers",
		Flag:    "web.enable-deployment-api", Title: "Deployments",
		Help: "Serve the deployment routes under /api/v1/project/: trigger documentation updates and previews, follow each to its end. Anyone who can reach them can deploy your documentation: protect them with --web.config.file."},
	Setting: engine.Setting{Key: "deployments", Noun: "deployments"},
}

// Kind is the deployments' part of an engine.
type Kind struct {
	ops *engine.Ops
	fam *engine.Families
}

func init() { engine.Register(&Kind{}) }

// DurationBuckets are the classic buckets of
// mintlify_deployment_duration_seconds: 10s to 1h.
var DurationBuckets = []float64{10, 20, 30, 45, 60, 90, 120, 180, 300, 600, 1200, 3600}

func (*Kind) Declare() *engine.Decl { return decl }

func (*Kind) Open(ops *engine.Ops) engine.Kind {
	return &Kind{ops: ops, fam: engine.NewFamilies(engine.Names{Stem: "mintlify_deployment", Noun: "deployment",
		Requests: "deployment triggers", Route: "unknown-triggers", Ended: "endedAt", Labels: []string{"kind"}, Values: [][]string{{KindUpdate}, {KindPreview}},
		Finals: []string{apiclient.DeploymentSuccess, apiclient.DeploymentFailure}, Buckets: DurationBuckets})}
}

// Of is e's deployments (nil: e does not follow them).
func Of(e *engine.Engine) *Kind { k, _ := e.Kind(Name).(*Kind); return k }

func (*Kind) NewRecord() engine.Record { return &Record{} }
func (*Kind) NewIntent() engine.Intent { return &Intent{} }

func (k *Kind) Read(ctx context.Context, rec engine.Record, _ engine.Sighting) (any, error) {
	r := rec.(*Record)
	c, err := k.ops.Engine().Client(r.Project, true)
	if err != nil {
		return nil, err
	}
	return c.DeploymentStatus(ctx, r.Project, r.StatusID)
}

func (k *Kind) Count(rec engine.Record, ev engine.Event) []any {
	r := rec.(*Record)
	k.fam.Count(k.ops, ev, r.Project, r.Kind)
	return engine.Finished(decl, r, ev, "kind", r.Kind)
}

func (k *Kind) Series(projects []string, add bool)  { k.fam.Series(projects, add, k.ops.On()) }
func (k *Kind) Describe(ch chan<- *prometheus.Desc) { k.fam.Describe(ch) }

// Collect sends every project's gauges by kind of deployment, then the
// counters.
func (k *Kind) Collect(ch chan<- prometheus.Metric) {
	type key struct{ project, kind string }
	gauges := map[key]*engine.Gauges{}
	of := func(p, kind string) *engine.Gauges {
		g := gauges[key{p, kind}]
		if g == nil {
			g = &engine.Gauges{}
			gauges[key{p, kind}] = g
		}
		return g
	}
	k.ops.Each(func(rec engine.Record, _ *engine.Polling) {
		r := rec.(*Record)
		of(r.Project, r.Kind).Add(r, r.Status == apiclient.DeploymentSuccess, r.EndedAt)
	})
	k.ops.EachUnknown(func(in engine.Intent) { of(in.Base().Project, in.(*Intent).Kind).Unknown++ })
	now := k.ops.Engine().Now()
	for _, p := range k.ops.Projects() {
		for _, kind := range []string{KindUpdate, KindPreview} {
			k.fam.Collect(ch, k.ops.On(), of(p, kind), now, p, kind)
		}
	}
	k.fam.CollectCounters(ch)
}

// Request is a deployment to trigger.
type Request struct {
	Project string
	// Kind is KindUpdate or KindPreview; Branch is a preview's (1 to
	// MaxBranchBytes bytes), empty for an update.
	Kind, Branch   string
	IdempotencyKey string
	// Admit is the gateway's local limit (engine.Start.Admit).
	Admit func() error
}

// validate refuses what must never be sent (the gateway checks it first):
// nothing is written or sent for it.
func (req *Request) validate() error {
	switch {
	case req.Project == "":
		return errors.New("deploy: empty project")
	case req.Kind == KindUpdate && req.Branch != "":
		return errors.New("deploy: an update deploys the project's configured branch; give no branch")
	case req.Kind == KindPreview && (strings.TrimSpace(req.Branch) == "" || len(req.Branch) > MaxBranchBytes):
		return fmt.Errorf("deploy: a preview needs a branch of 1 to %d bytes", MaxBranchBytes)
	case !validKind(req.Kind):
		return fmt.Errorf("deploy: unknown deployment kind %q", req.Kind)
	}
	return nil
}

// endpoint is the trigger's endpoint of kind.
func endpoint(kind string) string {
	if kind == KindPreview {
		return apiclient.EndpointTriggerPreview
	}
	return apiclient.EndpointTriggerUpdate
}

// Deploy triggers a deployment upstream and follows it, with the engine's
// guarantees (engine.Ops.Start). Its record has no status until the first
// read (the trigger's answer has none).
func (k *Kind) Deploy(ctx context.Context, req Request) (engine.Started, error) {
	if err := req.validate(); err != nil {
		return engine.Started{}, err
	}
	c, err := k.ops.Engine().Client(req.Project, false)
	if err != nil {
		return engine.Started{}, err
	}
	in := &Intent{IntentBase: k.ops.NewIntent(req.Project, req.IdempotencyKey, req.Kind, req.Branch), Kind: req.Kind}
	send := func() (engine.Record, engine.Event, int, error) {
		var t *apiclient.Triggered
		var err error
		if req.Kind == KindPreview {
			t, err = c.TriggerPreview(ctx, req.Project, req.Branch)
		} else {
			t, err = c.TriggerUpdate(ctx, req.Project)
		}
		if err != nil {
			return nil, engine.Event{}, 0, err
		}
		return &Record{Kind: req.Kind, StatusID: t.StatusID, Branch: bounded.Label(req.Branch), PreviewURL: bounded.Label(t.PreviewURL)}, engine.Event{}, t.Code, nil
	}
	return k.ops.Start(ctx, engine.Start{In: in, Admit: req.Admit, Endpoint: endpoint(req.Kind), Until: c.ThrottledUntil(endpoint(req.Kind)),
		Send: send, Verb: "triggering a deployment", KV: []any{"kind", req.Kind}})
}

// Track follows a deployment started elsewhere (its status id handed
// over) after one read upstream. kind is KindUpdate or KindPreview: the
// status does not say.
func (k *Kind) Track(ctx context.Context, project, kind, id string) (engine.Item, engine.TrackResult, error) {
	if !validKind(kind) {
		return engine.Item{}, engine.NewlyTracked, fmt.Errorf("unknown deployment kind %q", kind)
	}
	return k.ops.Track(ctx, &Record{Kind: kind, StatusID: id, Op: engine.Op{Project: project}}, engine.SeenAfterTheFact)
}

// Recent is when triggers of kind were sent within window, per project:
// what the gateway's local limits count after a restart.
func (k *Kind) Recent(kind string) func(window time.Duration) map[string][]time.Time {
	return func(window time.Duration) map[string][]time.Time {
		return k.ops.Recent(window, func(r engine.Record) bool { return r.(*Record).Kind == kind },
			func(in engine.Intent) bool { return in.(*Intent).Kind == kind })
	}
}

// View is a followed deployment as the gateway shows it: the API's
// update-status field names for what the exporter keeps (the engine's
// OpView, and the status id, end and commit), plus kind and previewUrl.
type View struct {
	ID         string            `json:"_id"`
	Kind       string            `json:"kind"`
	EndedAt    apiclient.APITime `json:"endedAt,omitzero"`
	Commit     Commit            `json:"commit"`
	PreviewURL string            `json:"previewUrl,omitempty"`
	engine.OpView
}

// Commit is the commit as far as it is kept.
type Commit struct {
	SHA string `json:"sha,omitempty"`
	Ref string `json:"ref,omitempty"`
}

// ViewOf is it's view (queued until the first read: the trigger's answer
// has no status).
func ViewOf(it engine.Item) View {
	r := it.Rec.(*Record)
	return View{ID: r.StatusID, Kind: r.Kind, EndedAt: apiclient.APITime{Time: r.EndedAt}, Commit: Commit{SHA: r.SHA, Ref: r.Branch},
		PreviewURL: r.PreviewURL, OpView: it.View(apiclient.DeploymentQueued)}
}
