package tracker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
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
		// in between reads it again, and adoptJob finds it tracked.
		var stateErr *StateError
		if _, _, err := s.adoptJob(project, id, job, how, OriginAutomation, cmp.Or(userFrom(ctx), submittedBy(a, project, id))); err != nil && !errors.As(err, &stateErr) {
			return nil, fmt.Errorf("automation run %s not handed to the agent jobs: %w", id, err)
		}
		return func(old autoRecord, at time.Time, how sighting) (autoRecord, finishEvent) {
			old.Lost = false
			return old, old.follow(FollowAgentJob, at, how)
		}, nil
	}
	return a
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
