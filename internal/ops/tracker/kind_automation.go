package tracker

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
	"github.com/prometheus/client_golang/prometheus"
)

// Automations are the engine's fourth kind of operation, an op kind: runs
// of an automation (a workflow with a custom schedule) triggered through
// the gateway (TriggerAutomation) or handed over with their jobId
// (TrackAutomationRun). The engine starts, writes, replays and settles
// them as every op kind's; what is the kind's own is its read: the
// trigger's answer names the background job that processes the run, and
// a read is get-job of that jobId. Where get-job answers, the run is an
// agent job, handed to the job kind (adoptJob, origin automation) and
// followed to its end there, counted by the agent job metrics, and the
// run is final as FollowAgentJob; where get-job answers 404 repeatedly
// (the engine's loss, the kind's gone) the run is final as FollowNone.
// The trigger shares the organization's 10 per 10 s with deployment
// updates: the gateway's one limiter counts both.

// OriginAutomation is the origin of an agent job that is the run of an
// automation (Followed.Origin).
const OriginAutomation = "automation"

// AutomationUpstream is the API of automations: an *apiclient.Client, or
// one that picks each project's organization's client.
type AutomationUpstream interface {
	TriggerAutomation(ctx context.Context, project, automation string) (apiclient.AutomationTrigger, error)
}

// autoEntry is a followed automation run in memory.
type autoEntry = followed[autoRecord]

// automations is the automation runs in a tracker (the engine's opKind).
type automations = opKind[autoRecord, *autoRecord, AutomationRunView, *autoIntent]

// automationIntents are the automations' intents, declared to the engine.
var automationIntents = opIntents(OpAutomation, "automation trigger", bucketAutomationIntents,
	func(s *Tracker) map[string]*autoIntent { return s.autoIntents }, runCodec.encode)

// runSettle is how an operator settles a trigger of unknown outcome.
const runSettle = "a run may have been queued upstream; find it among the project's agent jobs in the Mintlify dashboard and, " +
	"with its job id, follow it with POST /api/v1/workflow/%[1]s/runs/{jobId}/track?intent=%[2]s, " +
	"or if none was started dismiss the trigger with DELETE /api/v1/workflow/%[1]s/unknown-triggers/%[2]s"

// autoSpec declares the automations to the engine.
var autoSpec = &opSpec[autoRecord, *autoRecord, AutomationRunView, *autoIntent]{
	name: OpAutomation, what: "automation run", idKey: "run", idName: "job id", missing: "automation or follow",
	settle:  runSettle,
	intents: automationIntents, decodeIntent: runCodec.decode, bucket: bucketAutomations,
	base: func(in *autoIntent, id string) autoRecord {
		return autoRecord{ID: id, JobID: id, Automation: in.Automation, opState: opState{Status: FollowPending}}
	},
	further:  func(a, b autoRecord) bool { return !a.final() && b.final() },
	endpoint: apiclient.EndpointGetJob, schedule: everyInterval[autoRecord],
	metrics:  func(m *metrics) opCounter { return m.auto },
	labels:   func(r *autoRecord) []string { return []string{r.Automation} },
	finishKV: func(r *autoRecord) []any { return []any{"automation", r.Automation} },
	addTo: func(pj *projectJobs, e *autoEntry) {
		if !e.rec.final() {
			pj.auto.pending++
		}
	},
	unknownTo: func(pj *projectJobs, _ *autoIntent) { pj.auto.unknown++ },
	rows: func(out *status.Jobs, newest []*autoEntry, _ time.Time, view func(*autoEntry) AutomationRunView) {
		out.Automations = []status.AutomationRun{}
		for _, e := range newest[:min(status.MaxAutomationRuns, len(newest))] {
			v := view(e)
			out.Automations = append(out.Automations, status.AutomationRun{Project: v.ProjectID, Automation: v.SchemaID, RunID: v.RunID,
				JobID: v.JobID, Status: v.Status, Follow: v.Follow, TriggeredAt: v.Tracking.TrackedAt})
		}
	},
	// A run get-job does not know is not followed (and counted so).
	gone: func(r *autoRecord, at time.Time) finishEvent { return r.follow(FollowNone, at, seenLive) },
	// The status of a run followed as an agent job is the job's.
	dress: func(s *Tracker, v *AutomationRunView) {
		if v.Follow != FollowAgentJob {
			return
		}
		v.Status = "followed" // the job is past retention
		if j := s.entries[storeKey(v.ProjectID, v.JobID)]; j != nil {
			v.Status = j.rec.viewStatus()
		}
	},
}

// newAutomations are the automation runs of s, read with get-job (an
// upstream without the automation trigger follows none).
func newAutomations(s *Tracker) *automations {
	a := &automations{opSpec: autoSpec, s: s, records: s.autos}
	a.on, a.throttled = func() bool { return s.autoAPI != nil }, s.api.ThrottledUntil
	a.get = func(ctx context.Context, project, id string, how sighting) (seen[autoRecord], error) {
		job, err := s.api.GetJob(ctx, project, id)
		if err != nil {
			return nil, err
		}
		// Handed to the job kind before the run is written final: a crash
		// in between reads it again, and adoptJob finds it tracked. Until
		// the job's record is in the state (its write failed: a Redis
		// stall), the run stays pending, so a replica taking over reads
		// the run again rather than a final run whose job no state holds.
		if _, _, err := s.adoptJob(project, id, job, how, OriginAutomation, cmp.Or(userFrom(ctx), submittedBy(a, project, id))); err != nil {
			return nil, fmt.Errorf("automation run %s not handed to the agent jobs: %w", id, err)
		}
		if s.jobUnwritten(project, id) {
			return nil, fmt.Errorf("automation run %s: its agent job is not in the state yet", id)
		}
		return func(old autoRecord, at time.Time, how sighting) (autoRecord, finishEvent) {
			old.Lost = false
			return old, old.follow(FollowAgentJob, at, how)
		}, nil
	}
	return a
}

// jobUnwritten reports whether the agent job id of project is followed in
// memory only (its record's write has not landed).
func (s *Tracker) jobUnwritten(project, id string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.entries[storeKey(project, id)]
	return e != nil && e.dirty
}

// submittedBy is who triggered run id of project, as its record says.
func submittedBy(a *automations, project, id string) string {
	a.s.mu.RLock()
	defer a.s.mu.RUnlock()
	if e := a.records[storeKey(project, id)]; e != nil {
		return e.rec.SubmittedBy
	}
	return ""
}

// follow makes the run final as follow (FollowAgentJob or FollowNone),
// seen at at: counted once, when seen live (opState.sawFinal).
func (r *autoRecord) follow(follow string, at time.Time, how sighting) finishEvent {
	if r.final() {
		return finishEvent{}
	}
	r.Status = follow
	return r.sawFinal(true, follow, at, how)
}

// AutomationRunView is an automation run as the gateway shows it: the
// trigger's answer (schemaId, instanceId, jobId), its status and how it
// is followed.
type AutomationRunView struct {
	ProjectID  string `json:"projectId"`
	SchemaID   string `json:"schemaId"`
	InstanceID string `json:"instanceId,omitempty"`
	JobID      string `json:"jobId,omitempty"`
	RunID      string `json:"runId"`
	// Status is the agent job's status while the run is followed as one
	// (FollowAgentJob), else Follow's value.
	Status string `json:"status"`
	// Follow is FollowPending, FollowAgentJob or FollowNone.
	Follow   string   `json:"follow"`
	Tracking Followed `json:"tracking"`
}

func (r *autoRecord) view(p *polling) AutomationRunView {
	op := opView(&r.opState, p, r.final(), FollowPending)
	follow := r.Status
	if r.Lost {
		follow = FollowNone
	}
	return AutomationRunView{ProjectID: r.Project, SchemaID: r.Automation, InstanceID: r.InstanceID, JobID: r.JobID, RunID: r.ID,
		Status: follow, Follow: follow, Tracking: op.Tracking}
}

// AutomationRequest is an automation run to trigger.
type AutomationRequest struct {
	Project, Automation string
	// IdempotencyKey and Admit work as for Deploy.
	IdempotencyKey string
	Admit          func() error
}

// AutomationTriggered is the answer to a trigger (the engine's Started).
type AutomationTriggered = Started[AutomationRunView]

// TriggerAutomation triggers a run of an automation upstream and follows
// it, with the engine's guarantees (opKind.start): an intent written
// before the trigger leaves, the run written (and the intent deleted)
// before it is acknowledged, Idempotency-Key replays, and an outcome
// unknown listed for an operator. A run whose answer names no job is
// recorded not followed at once.
func (s *Tracker) TriggerAutomation(ctx context.Context, req AutomationRequest) (AutomationTriggered, error) {
	if err := bounded.CheckID("automation id", req.Automation); req.Project == "" || err != nil {
		return AutomationTriggered{}, fmt.Errorf("trigger automation: project %q, automation: %v", req.Project, err)
	}
	if err := checkIdempotencyKey(req.IdempotencyKey); err != nil {
		return AutomationTriggered{}, err
	}
	in := &autoIntent{opIntent: newOpIntent(s, "ai_", req.Project, req.IdempotencyKey, "automation", req.Automation), Automation: req.Automation}
	send := func() (autoRecord, finishEvent, int, error) {
		t, err := s.autoAPI.TriggerAutomation(ctx, req.Project, req.Automation)
		if err != nil {
			return autoRecord{}, finishEvent{}, 0, err
		}
		rec := autoRecord{ID: cmp.Or(t.JobID, t.InstanceID, in.ID), Automation: req.Automation, JobID: t.JobID, InstanceID: t.InstanceID,
			opState: opState{Status: FollowPending}}
		var ev finishEvent
		if rec.JobID == "" {
			// No job to ask get-job about: the run was queued all the same.
			ev = rec.follow(FollowNone, s.cfg.Now(), seenLive)
		}
		return rec, ev, t.Code, nil
	}
	return s.autoOps.start(ctx, startReq[autoRecord, *autoIntent]{in: in, admit: req.Admit, endpoint: apiclient.EndpointTriggerAutomation,
		send: send, verb: "triggering automation " + req.Automation, kv: []any{"automation", req.Automation}})
}

// TrackAutomationRun follows a run of automation handed over with its
// jobId, after one get-job: it is followed as an agent job (origin
// automation). One followed already is returned as it is.
func (s *Tracker) TrackAutomationRun(ctx context.Context, project, automation, jobID string) (AutomationRunView, TrackResult, error) {
	if err := bounded.CheckID("automation id", automation); err != nil {
		return AutomationRunView{}, NewlyTracked, &BadIDError{Err: err}
	}
	return s.autoOps.track(ctx, project, jobID, autoRecord{ID: jobID, JobID: jobID, Automation: automation, opState: opState{Status: FollowPending}},
		seenAfterTheFact)
}

// RecentAutomationTriggers returns, per project, when triggers were sent
// within window: what the organization's shared update limit counts
// after a restart or a takeover.
func (s *Tracker) RecentAutomationTriggers(window time.Duration) map[string][]time.Time {
	return s.autoOps.startedRecently(window, func(*autoRecord) bool { return true }, func(*autoIntent) bool { return true })
}

// AutomationOps is the engine's part of the automation routes: the runs,
// and the triggers of unknown outcome (listed with their automation).
func (s *Tracker) AutomationOps() Ops[AutomationRunView, UnknownAutomationTrigger] {
	return routesOf(s.autoOps, (*autoIntent).listed)
}

// OtherAutomation is the automation label of automations the
// configuration does not name.
const OtherAutomation = "other"

// autoMetrics are the mintlify_automation* families of the engine: runs
// by how they are followed (counted once each when written final: the
// engine's count, an opCounter), and two gauges read at scrape time. The
// trigger counter by result is the gateway's (it sees the requests it
// refuses itself). A run's end is the agent job's, counted by the agent
// job families.
type autoMetrics struct {
	// named are each project's automations named in the configuration
	// (label values), nil: none; on reports whether a project takes
	// automation triggers (its gauges are then exported at 0).
	named func(project string) []string
	on    func(project string) bool

	runs        *prometheus.CounterVec
	pendingDesc *prometheus.Desc
	unknownDesc *prometheus.Desc
}

func newAutoMetrics() *autoMetrics {
	byProject := []string{"project"}
	return &autoMetrics{
		named: func(string) []string { return nil },
		on:    func(string) bool { return false },
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mintlify_automation_runs_total",
			Help: "Automation runs triggered through the gateway, once each: followed as an agent job, or not (get-job does not know it).",
		}, []string{"project", "automation", "follow"}),
		pendingDesc: prometheus.NewDesc("mintlify_automation_runs_pending",
			"Automation runs triggered whose jobId get-job has not answered yet (neither followed as an agent job nor given up).", byProject, nil),
		unknownDesc: prometheus.NewDesc("mintlify_automation_unknown_outcomes",
			"Automation triggers perhaps sent, their answer never recorded (GET .../unknown-triggers), waiting for an operator.", byProject, nil),
	}
}

// configure takes the configuration's automations (Config.Automations).
func (m *autoMetrics) configure(cfg *Config) {
	if cfg.Automations == nil {
		return
	}
	m.on = func(p string) bool { _, on := cfg.Automations(p); return on }
	m.named = func(p string) []string { named, _ := cfg.Automations(p); return named }
}

// AutomationLabel is the automation label of automation in project: its
// id when the configuration names it (named), else OtherAutomation.
func AutomationLabel(named []string, automation string) string {
	if slices.Contains(named, automation) {
		return automation
	}
	return OtherAutomation
}

// addProjects pre-creates the runs series of the automations named.
func (m *autoMetrics) addProjects(projects []string) {
	for _, p := range projects {
		for _, a := range m.named(p) {
			for _, f := range autoFollows {
				m.runs.WithLabelValues(p, a, f)
			}
		}
	}
}

func (m *autoMetrics) dropProjects(projects []string) {
	for _, p := range projects {
		m.runs.DeletePartialMatch(prometheus.Labels{"project": p})
	}
}

func (m *autoMetrics) describe(ch chan<- *prometheus.Desc) {
	m.runs.Describe(ch)
	ch <- m.pendingDesc
	ch <- m.unknownDesc
}

// autoGauges are one project's runs at scrape time.
type autoGauges struct {
	pending, unknown int
}

// collectProject sends project p's gauges: always for a project that
// takes automation triggers, else while it has a run pending or an
// outcome unknown (one of a project a reload took them from).
func (m *autoMetrics) collectProject(ch chan<- prometheus.Metric, p string, g *autoGauges) {
	if !m.on(p) && g.pending == 0 && g.unknown == 0 {
		return
	}
	ch <- prometheus.MustNewConstMetric(m.pendingDesc, prometheus.GaugeValue, float64(g.pending), p)
	ch <- prometheus.MustNewConstMetric(m.unknownDesc, prometheus.GaugeValue, float64(g.unknown), p)
}

// count counts a run whose final follow (ev.finished) was just written;
// lv is its automation id.
func (m *autoMetrics) count(has func(string) bool, ev finishEvent, project string, lv ...string) {
	if ev.finished == "" || !has(project) {
		return
	}
	m.runs.WithLabelValues(project, AutomationLabel(m.named(project), lv[0]), ev.finished).Inc()
}

// The automations' buckets of the state (schema version 6).
const (
	// bucketAutomations holds the automation runs triggered or handed
	// over (autoRecord), keyed by storeKey(project, run id).
	bucketAutomations = "automations"
	// bucketAutomationIntents holds the automation trigger intents
	// (autoIntent), keyed by storeKey(project, intent id).
	bucketAutomationIntents = "automation_intents"
)

// How an automation run is followed: its record's status (opState).
const (
	// FollowPending: triggered, get-job has not answered for its jobId yet.
	FollowPending = "pending"
	// FollowAgentJob: get-job knows its jobId: the run is followed as an
	// agent job (the job kind's record, origin automation) to its end.
	FollowAgentJob = "agent_job"
	// FollowNone: not followed: the API answered no jobId, or get-job
	// answered 404 for it repeatedly (a background job, not an agent job).
	FollowNone = "not_followed"
)

// autoFollows are the final follow values, in label order.
var autoFollows = []string{FollowAgentJob, FollowNone}

// autoRecord is an automation run: its own state form (version 6), the
// run's ids and the engine's part (opState), whose status is how the run
// is followed (FollowPending, FollowAgentJob or FollowNone), final once
// get-job has answered (counted once, written with it).
type autoRecord struct {
	// ID is the run's id: its jobId, else its instanceId, else the id of
	// the trigger's intent (the API answered neither).
	ID string `json:"runId"`
	// Automation is the API's workflowSchemaId (schemaId).
	Automation string `json:"automation"`
	// JobID ("" when the API answered none) and InstanceID, the trigger's.
	JobID      string `json:"jobId,omitempty"`
	InstanceID string `json:"instanceId,omitempty"`
	opState
}

// final reports whether get-job has answered for the run (or never can).
func (r *autoRecord) final() bool {
	return r.Lost || r.Status == FollowAgentJob || r.Status == FollowNone
}

// The run's part of opRecord: its id, and its automation and follow value.
func (r *autoRecord) opID() string { return r.ID }
func (r *autoRecord) valid() bool {
	return r.Automation != "" && (r.Status == FollowPending || r.Status == FollowAgentJob || r.Status == FollowNone)
}

// autoIntent is an automation trigger intent: written before the trigger
// is sent, deleted in the write of its run. One left after a restart is
// a trigger of unknown outcome. It is its own state form (version 6): the
// engine's intent (opIntent) and the automation.
type autoIntent struct {
	opIntent
	Automation string `json:"automation"`
}

// UnknownAutomationTrigger is an automation trigger of unknown outcome,
// as listed to operators: the engine's listing and the automation.
type UnknownAutomationTrigger struct {
	UnknownIntent
	Automation string `json:"automation"`
}

// listed is in as listed to operators.
func (in *autoIntent) listed() UnknownAutomationTrigger {
	return UnknownAutomationTrigger{UnknownIntent: unknownOf(&in.opIntent), Automation: in.Automation}
}

// runCodec reads and writes the trigger intents.
var runCodec = opIntentCodec[autoIntent, *autoIntent]{what: "automation intent", missing: "automation",
	valid: func(in *autoIntent) bool { return in.Automation != "" }}
