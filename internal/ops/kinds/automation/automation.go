// Package automation is a kind of operation (engine.Kind): runs of an
// automation (a workflow with a custom schedule) triggered through the
// gateway or handed over with their jobId. The engine starts, writes,
// replays and settles them as every kind's; what is this kind's own is its
// read: the trigger's answer names the background job that processes the
// run, and a read is get-job of that jobId. Where get-job answers, the run
// is an agent job, handed to the agent jobs (job.Kind.Adopt, origin
// automation) and followed to its end there, counted by their families,
// and the run is final as FollowAgentJob; where get-job answers 404
// repeatedly the run is final as FollowNone. The trigger shares the
// organization's 10 per 10 s with documentation updates (the gateway's
// Updates).
package automation

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/kinds/job"
)

// Name is the kind's name; Origin is the origin of the agent job a run
// is (engine.Followed.Origin).
const (
	Name   = "automation"
	Origin = "automation"
)

// Any and Other are what a project's automations: may list to allow any
// automation, and the label of those not named.
const (
	Any   = "*"
	Other = "other"
)

// settle says how an operator settles a trigger of unknown outcome.
const settle = "a run may have been queued upstream; find it among the project's agent jobs in the Mintlify dashboard and, " +
	"with its job id, follow it with POST /api/v1/workflow/%[1]s/runs/{jobId}/track?intent=%[2]s, " +
	"or if none was started dismiss the trigger with DELETE /api/v1/workflow/%[1]s/unknown-triggers/%[2]s"

// decl declares the automation runs.
var decl = &engine.Decl{Order: 40, Name: Name, What: "automation run", Request: "automation trigger", IDKey: "run", IDName: "job id",
	Records: "automations", Intents: "automation_intents", IntentPrefix: "ai_", ReadEndpoint: apiclient.EndpointGetJob, SettleGone: true,
	Settle: settle, UnknownGauge: "mintlify_automation_unknown_outcomes", Doc: "automations.md",
	Routes: engine.Routes{Prefix: "/api/v1/workflow/", Track: "/api/v1/workflow/%[1]s/runs/%[2]s/track", List: "/api/v1/workflow/%[1]s/runs",
		Unknown: "/api/v1/workflow/%[1]s/unknown-triggers", Flag: "web.enable-automation-api", Title: "Automation runs",
		Help: "Serve the automation routes under /api/v1/workflow/: trigger the runs of the automations a project lists (automations: in --config.file; any on the flag route), follow each as an agent job where the API knows its job. They share the organization's 10 triggers per 10 s with deployment updates. Protect them with --web.config.file."},
	Setting: engine.Setting{Key: "automations", Noun: "automations",
		IDs: &engine.IDList{What: "automation id", Max: 20, Any: Any, Other: Other}},
}

// How a run is followed: its record's status.
const (
	// FollowPending: triggered, get-job has not answered for its jobId yet.
	FollowPending = "pending"
	// FollowAgentJob: get-job knows its jobId: the run is followed as an
	// agent job (origin automation) to its end.
	FollowAgentJob = "agent_job"
	// FollowNone: not followed: the API answered no jobId, or get-job
	// answered 404 for it repeatedly (a background job, not an agent job).
	FollowNone = "not_followed"
)

// follows are the final follow values, in label order.
var follows = []string{FollowAgentJob, FollowNone}

// listStatuses are the statuses a list of runs filters on: how a run is
// followed, and its agent job's.
func listStatuses() []string {
	return append([]string{FollowPending, FollowNone}, job.ListStatuses()...)
}

// Record is an automation run: its own state form (version 6), the run's
// ids and the engine's part, whose status is how the run is followed,
// final once get-job has answered (counted once, written with it).
type Record struct {
	// RunID is its jobId, else its instanceId, else the id of the
	// trigger's intent (the API answered neither).
	RunID string `json:"runId"`
	// Automation is the API's workflowSchemaId (schemaId).
	Automation string `json:"automation"`
	// JobID ("" when the API answered none) and InstanceID, the trigger's.
	JobID      string `json:"jobId,omitempty"`
	InstanceID string `json:"instanceId,omitempty"`
	engine.Op
}

func (r *Record) ID() string { return r.RunID }
func (r *Record) Valid() bool {
	return r.Automation != "" && (r.Status == FollowPending || r.Status == FollowAgentJob || r.Status == FollowNone)
}
func (r *Record) Final() bool                           { return r.Lost || r.Status == FollowAgentJob || r.Status == FollowNone }
func (r *Record) Polled(time.Time, *engine.Config) bool { return !r.Final() }
func (r *Record) Clone() engine.Record                  { c := *r; return &c }

func (r *Record) Next(at, _ time.Time, cfg *engine.Config) time.Time {
	return engine.EveryInterval(r.Final(), at, cfg)
}

// Saw: get-job answered (Kind.Read handed the job over): followed as an
// agent job.
func (r *Record) Saw(_ any, at, _ time.Time, how engine.Sighting) (engine.Event, bool) {
	old := *r
	r.Lost = false
	ev := r.follow(FollowAgentJob, at, how)
	return ev, *r != old
}

// Missing: a run get-job does not know (404 repeatedly) is not followed,
// and counted so.
func (r *Record) Missing(n int, at time.Time) (engine.Event, bool) {
	if n < engine.LostAfter404s || r.Final() {
		return engine.Event{}, false
	}
	return r.follow(FollowNone, at, engine.SeenLive), true
}

// follow makes the run final as follow, seen at at: counted once, when
// seen live.
func (r *Record) follow(follow string, at time.Time, how engine.Sighting) engine.Event {
	if r.Final() {
		return engine.Event{}
	}
	r.Status = follow
	return r.SawFinal(true, follow, at, how)
}

// Intent is a trigger's intent: its own state form (version 6), the
// engine's and the automation.
type Intent struct {
	engine.IntentBase
	Automation string `json:"automation"`
}

func (in *Intent) Valid() bool { return in.Automation != "" }

func (in *Intent) Record(id string) engine.Record {
	return &Record{RunID: id, JobID: id, Automation: in.Automation, Op: engine.Op{Status: FollowPending}}
}

// Kind is the automations' part of an engine: the runs by how they are
// followed (counted once each when written final), and two gauges read at
// scrape time. The trigger counter by result is the routes'. A run's end
// is the agent job's, counted by the agent job families.
type Kind struct {
	ops     *engine.Ops
	jobs    job.API
	runs    *prometheus.CounterVec
	pending *prometheus.Desc
	unknown *prometheus.Desc
}

func init() { engine.Register(&Kind{}) }

func (*Kind) Declare() *engine.Decl { return decl }

func (*Kind) Open(ops *engine.Ops) engine.Kind {
	k := &Kind{ops: ops, jobs: job.APIOf(ops.Engine().API()),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mintlify_automation_runs_total",
			Help: "Automation runs triggered through the gateway, once each: followed as an agent job, or not (get-job does not know it)."},
			[]string{"project", "automation", "follow"}),
		pending: prometheus.NewDesc("mintlify_automation_runs_pending",
			"Automation runs triggered whose jobId get-job has not answered yet (neither followed as an agent job nor given up).", []string{"project"}, nil),
		unknown: prometheus.NewDesc("mintlify_automation_unknown_outcomes",
			"Automation triggers perhaps sent, their answer never recorded (GET .../unknown-triggers), waiting for an operator.", []string{"project"}, nil)}
	return k
}

// Of is e's automations (nil: e does not follow them).
func Of(e *engine.Engine) *Kind { k, _ := e.Kind(Name).(*Kind); return k }

func (*Kind) NewRecord() engine.Record { return &Record{} }
func (*Kind) NewIntent() engine.Intent { return &Intent{} }

// Read reads the run's jobId with get-job, and hands the job to the agent
// jobs before the run is written final: a crash in between reads it
// again, and the agent jobs find it followed. Until the job's record is
// in the state (its write failed: a Redis stall), the run stays pending,
// so a replica taking over reads the run again rather than a final run
// whose job no state holds.
func (k *Kind) Read(ctx context.Context, rec engine.Record, how engine.Sighting) (any, error) {
	jobs := job.Of(k.ops.Engine())
	if k.jobs == nil || jobs == nil {
		return nil, engine.ErrNoClient
	}
	r := rec.(*Record)
	j, err := k.jobs.GetJob(ctx, r.Project, r.RunID)
	if err != nil {
		return nil, err
	}
	if _, _, err := jobs.Adopt(r.Project, r.RunID, j, how, Origin, cmp.Or(engine.UserFrom(ctx), r.SubmittedBy)); err != nil {
		return nil, fmt.Errorf("automation run %s not handed to the agent jobs: %w", r.RunID, err)
	}
	if jobs.Unwritten(r.Project, r.RunID) {
		return nil, fmt.Errorf("automation run %s: its agent job is not in the state yet", r.RunID)
	}
	return j, nil
}

func (k *Kind) Count(rec engine.Record, ev engine.Event) []any {
	r := rec.(*Record)
	if ev.Finished != "" && k.ops.Labelled(r.Project) {
		k.runs.WithLabelValues(r.Project, k.Label(r.Project, r.Automation), ev.Finished).Inc()
	}
	return engine.Finished(decl, r, ev, "automation", r.Automation)
}

// Series pre-creates the runs series of the automations named.
func (k *Kind) Series(projects []string, add bool) {
	for _, p := range projects {
		if !add {
			k.runs.DeletePartialMatch(prometheus.Labels{"project": p})
			continue
		}
		named, _ := k.named(p)
		for _, a := range named {
			for _, f := range follows {
				k.runs.WithLabelValues(p, a, f)
			}
		}
	}
}

func (k *Kind) Describe(ch chan<- *prometheus.Desc) {
	k.runs.Describe(ch)
	ch <- k.pending
	ch <- k.unknown
}

// Collect sends each project's gauges: always for a project that takes
// automation triggers, else while it has a run pending or an outcome
// unknown (one of a project a reload took them from); then the counter.
func (k *Kind) Collect(ch chan<- prometheus.Metric) {
	pending, unknown := map[string]int{}, map[string]int{}
	k.ops.Each(func(rec engine.Record, _ *engine.Polling) {
		if !rec.Final() {
			pending[rec.Base().Project]++
		}
	})
	k.ops.EachUnknown(func(in engine.Intent) { unknown[in.Base().Project]++ })
	for _, p := range k.ops.Projects() {
		if _, on := k.ops.Engine().Takes(Name, p); on || pending[p] > 0 || unknown[p] > 0 {
			ch <- prometheus.MustNewConstMetric(k.pending, prometheus.GaugeValue, float64(pending[p]), p)
			ch <- prometheus.MustNewConstMetric(k.unknown, prometheus.GaugeValue, float64(unknown[p]), p)
		}
	}
	k.runs.Collect(ch)
}

// Request is an automation run to trigger.
type Request struct {
	Project, Automation string
	IdempotencyKey      string
	Admit               func() error
}

// Trigger triggers a run of an automation upstream and follows it, with
// the engine's guarantees (engine.Ops.Start). A run whose answer names no
// job is recorded not followed at once.
func (k *Kind) Trigger(ctx context.Context, req Request) (engine.Started, error) {
	if err := bounded.CheckID("automation id", req.Automation); req.Project == "" || err != nil {
		return engine.Started{}, fmt.Errorf("trigger automation: project %q, automation: %v", req.Project, err)
	}
	c, err := k.ops.Engine().Client(req.Project, false)
	if err != nil {
		return engine.Started{}, err
	}
	in := &Intent{IntentBase: k.ops.NewIntent(req.Project, req.IdempotencyKey, "automation", req.Automation), Automation: req.Automation}
	send := func() (engine.Record, engine.Event, int, error) {
		t, err := c.TriggerAutomation(ctx, req.Project, req.Automation)
		if err != nil {
			return nil, engine.Event{}, 0, err
		}
		rec := &Record{RunID: cmp.Or(t.JobID, t.InstanceID, in.ID), Automation: req.Automation, JobID: t.JobID, InstanceID: t.InstanceID,
			Op: engine.Op{Status: FollowPending}}
		var ev engine.Event
		if rec.JobID == "" {
			// No job to ask get-job about: the run was queued all the same.
			ev = rec.follow(FollowNone, k.ops.Engine().Now(), engine.SeenLive)
		}
		return rec, ev, t.Code, nil
	}
	return k.ops.Start(ctx, engine.Start{In: in, Admit: req.Admit, Endpoint: apiclient.EndpointTriggerAutomation, Send: send,
		Verb: "triggering automation " + req.Automation, KV: []any{"automation", req.Automation}})
}

// Track follows a run of automation handed over with its jobId, after one
// get-job: it is followed as an agent job (origin automation).
func (k *Kind) Track(ctx context.Context, project, automation, jobID string) (engine.Item, engine.TrackResult, error) {
	if err := bounded.CheckID("automation id", automation); err != nil {
		return engine.Item{}, engine.NewlyTracked, &engine.BadIDError{Err: err}
	}
	return k.ops.Track(ctx, &Record{RunID: jobID, JobID: jobID, Automation: automation, Op: engine.Op{Project: project, Status: FollowPending}},
		engine.SeenAfterTheFact)
}

// View is an automation run as the gateway shows it: the trigger's answer
// (schemaId, instanceId, jobId), its status and how it is followed.
type View struct {
	ProjectID  string `json:"projectId"`
	SchemaID   string `json:"schemaId"`
	InstanceID string `json:"instanceId,omitempty"`
	JobID      string `json:"jobId,omitempty"`
	RunID      string `json:"runId"`
	// Status is the agent job's status while the run is followed as one
	// (FollowAgentJob; "followed" once the job is past retention), else
	// Follow's value.
	Status string `json:"status"`
	// Follow is FollowPending, FollowAgentJob or FollowNone.
	Follow   string          `json:"follow"`
	Tracking engine.Followed `json:"tracking"`
}

func (k *Kind) View(it engine.Item) View {
	r := it.Rec.(*Record)
	follow := r.Status
	if r.Lost {
		follow = FollowNone
	}
	v := View{ProjectID: r.Project, SchemaID: r.Automation, InstanceID: r.InstanceID, JobID: r.JobID, RunID: r.RunID, Status: follow, Follow: follow,
		Tracking: it.Followed(!r.Final())}
	if follow == FollowAgentJob {
		v.Status = "followed" // the job is past retention
		if jobs := job.Of(k.ops.Engine()); jobs != nil {
			v.Status = cmp.Or(jobs.Status(r.Project, r.JobID), v.Status)
		}
	}
	return v
}
