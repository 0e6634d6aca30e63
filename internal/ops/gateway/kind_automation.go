package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/tracker"
)

// The automation routes: POST .../{projectId}/{workflowSchemaId}/trigger,
// the runs' list and view, their track (?intent= settles a trigger of
// unknown outcome) and unknown-triggers, on the engine's shared route
// helpers. A trigger draws on the organization's update limit, shared
// with deployment updates (orgLimits).

// Results of an automation trigger (mintlify_automation_triggers_total).
const (
	resultAccepted    = "accepted"     // 202 upstream: a run was queued
	resultReplayed    = "replayed"     // answered from its Idempotency-Key: nothing sent
	resultBadRequest  = "bad_request"  // 400: the gateway's or the API's (inactive, not custom-scheduled, malformed)
	resultNotFound    = "not_found"    // 404 upstream: no such automation in the project
	resultNotAllowed  = "not_allowed"  // 403: not listed under the project's automations:
	resultRateLimited = "rate_limited" // 429: the organization's shared limit here, or the API's
	resultUnknown     = "unknown"      // sent, the answer never came: listed under unknown-triggers
	resultConflict    = "idempotency_conflict"
	resultStateError  = "state_error"    // the intent could not be written: nothing sent
	resultUpstreamErr = "upstream_error" // the API failed otherwise
)

var triggerResults = []string{resultAccepted, resultReplayed, resultBadRequest, resultNotFound, resultNotAllowed, resultRateLimited,
	resultUnknown, resultConflict, resultStateError, resultUpstreamErr}

// autoBase is the automation routes' prefix.
const autoBase = "/api/v1/workflow/{projectId}"

// maxTriggerBodyBytes bounds a trigger's body (the API's takes none: an
// empty one or {}) and a track's ({"automation": "..."}).
const maxTriggerBodyBytes = 4 << 10

// autoRoutes are the automation routes' state.
type autoRoutes struct {
	auto     Automator
	triggers *prometheus.CounterVec
}

// Automator is what the automation routes need from the tracker;
// *tracker.Tracker implements it.
type Automator interface {
	TriggerAutomation(ctx context.Context, req tracker.AutomationRequest) (tracker.AutomationTriggered, error)
	TrackAutomationRun(ctx context.Context, project, automation, jobID string) (tracker.AutomationRunView, tracker.TrackResult, error)
	// RecentAutomationTriggers seeds the organization's shared update
	// limit after a restart or a takeover.
	RecentAutomationTriggers(window time.Duration) map[string][]time.Time
	// AutomationOps reads the runs, and lists, settles and dismisses the
	// triggers of unknown outcome.
	AutomationOps() tracker.Ops[tracker.AutomationRunView, tracker.UnknownAutomationTrigger]
}

// registerAutomations adds the automation routes, their metric and their
// source of the shared update limit's seed.
func (g *Gateway) registerAutomations(auto Automator, reg prometheus.Registerer) error {
	g.auto = &autoRoutes{auto: auto, triggers: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mintlify_automation_triggers_total",
		Help: "Automation triggers through the gateway, by result; automations not named in the configuration count as other.",
	}, []string{"project", "automation", "result"})}
	if reg != nil {
		if err := reg.Register(g.auto.triggers); err != nil {
			return fmt.Errorf("gateway: registering metrics: %w", err)
		}
	}
	g.limits.add(g.limits.updates, UpdateWindow, auto.RecentAutomationTriggers)
	g.precreateTriggers()
	ops := auto.AutomationOps()
	unknown, dismiss := unknownRoutes(g, "automation trigger", ops.Unknown,
		func(l []tracker.UnknownAutomationTrigger) any {
			return UnknownAutomationTriggerList{UnknownTriggers: l}
		}, ops.Dismiss)
	routes := []struct {
		method, path string
		h            func(http.ResponseWriter, *http.Request, string)
	}{
		{"POST", "/{workflowSchemaId}/trigger", g.triggerAutomation},
		{"GET", "/runs", g.listRuns},
		{"GET", "/runs/{jobId}", func(w http.ResponseWriter, r *http.Request, p string) {
			v, ok := auto.AutomationOps().One(p, r.PathValue("jobId"))
			serveOne(w, v, ok, "automation run not followed by this exporter (POST /api/v1/workflow/{projectId}/runs/{jobId}/track follows one started elsewhere)")
		}},
		{"POST", "/runs/{jobId}/track", g.trackRun},
		{"GET", "/unknown-triggers", unknown},
		{"DELETE", "/unknown-triggers/{intentId}", dismiss},
	}
	for _, rt := range routes {
		g.mux.HandleFunc(rt.method+" "+autoBase+rt.path, g.automationProject(rt.h))
	}
	// Method-less fallbacks: 405 in JSON for a known path, else 404 (the
	// trigger's path and a run's would conflict as patterns).
	g.mux.HandleFunc(autoBase+"/{a}", func(w http.ResponseWriter, r *http.Request) {
		if a := r.PathValue("a"); a == "runs" || a == "unknown-triggers" {
			methodNotAllowed("GET, HEAD")(w, r)
			return
		}
		writeError(w, http.StatusNotFound, "not found")
	})
	g.mux.HandleFunc(autoBase+"/{a}/{b}", func(w http.ResponseWriter, r *http.Request) {
		switch a, b := r.PathValue("a"), r.PathValue("b"); {
		case b == "trigger":
			methodNotAllowed("POST")(w, r)
		case a == "runs":
			methodNotAllowed("GET, HEAD")(w, r)
		case a == "unknown-triggers":
			methodNotAllowed("DELETE")(w, r)
		default:
			writeError(w, http.StatusNotFound, "not found")
		}
	})
	g.mux.HandleFunc(autoBase+"/runs/{jobId}/track", methodNotAllowed("POST"))
	return nil
}

// precreateTriggers pre-creates the trigger series of the automations
// named for the projects that take them (at start and at each reload).
func (g *Gateway) precreateTriggers() {
	if g.auto == nil {
		return
	}
	for _, p := range projectList(g.cfg.AutomationProjects) {
		named, others := g.namedAutomations(p)
		if others {
			named = append(slices.Clone(named), tracker.OtherAutomation)
		}
		for _, a := range named {
			for _, res := range triggerResults {
				g.auto.triggers.WithLabelValues(p, a, res)
			}
		}
	}
}

func projectList(list func() []string) []string {
	if list == nil {
		return nil
	}
	return list()
}

func (g *Gateway) namedAutomations(project string) ([]string, bool) {
	if g.cfg.NamedAutomations == nil {
		return nil, false
	}
	return g.cfg.NamedAutomations(project)
}

// automationProject wraps h behind the one rule for projects and ids.
func (g *Gateway) automationProject(h func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
	return g.kindProjectHint(g.cfg.AutomationProjects, "automation triggers", "list them under automations: on it in --config.file", h)
}

// triggerAutomation handles POST .../{projectId}/{workflowSchemaId}/trigger:
// the API's trigger takes no body (an empty one or {} is accepted).
func (g *Gateway) triggerAutomation(w http.ResponseWriter, r *http.Request, project string) {
	automation := r.PathValue("workflowSchemaId")
	named, others := g.namedAutomations(project)
	label := tracker.AutomationLabel(named, automation)
	count := func(result string) { g.auto.triggers.WithLabelValues(project, label, result).Inc() }
	key, ok := startHeaders(w, r)
	if !ok {
		count(resultBadRequest)
		return
	}
	var body struct{}
	if bad := readBody(w, r, &body, true, maxTriggerBodyBytes); bad != nil {
		count(resultBadRequest)
		writeError(w, bad.status, bad.msg)
		return
	}
	if label == tracker.OtherAutomation && !others {
		count(resultNotAllowed)
		writeError(w, http.StatusForbidden, fmt.Sprintf("automation %s may not be triggered through the exporter for project %s: list it under the project's automations: in --config.file", automation, project))
		return
	}
	org, at := g.organization(project), g.cfg.Now()
	lim := g.limits.seed(g.limits.updates, org, g.organization, at)
	admitted := false
	ctx, cancel := g.upstreamContext(r)
	defer cancel()
	a, err := g.auto.auto.TriggerAutomation(ctx, tracker.AutomationRequest{Project: project, Automation: automation, IdempotencyKey: key,
		Admit: admitTrigger(lim, org, at, &admitted)})
	if err != nil {
		count(g.automationFailed(w, project, err, func() {
			if admitted {
				lim.release(org, at)
			}
		}))
		return
	}
	count(map[bool]string{false: resultAccepted, true: resultReplayed}[a.Replayed])
	g.auditOp(r, "automation triggered", project, "run", a.Op.RunID, key, "automation", automation, "job", a.Op.JobID, "follow", a.Op.Follow,
		"replayed", a.Replayed)
	writeStarted(w, a.Code, http.StatusAccepted, a.Replayed, map[string]string{"schemaId": a.Op.SchemaID, "instanceId": a.Op.InstanceID, "jobId": a.Op.JobID})
}

// automationFailed answers a failed trigger and returns its result;
// release gives its limit slot back, called when nothing was sent.
func (g *Gateway) automationFailed(w http.ResponseWriter, project string, err error, release func()) string {
	if nothingSent(err) {
		release()
	}
	if limited, ok := errors.AsType[*limitError](err); ok {
		setRetryAfter(w, limited.wait)
		writeError(w, http.StatusTooManyRequests, limitMsg("automation trigger", limited.wait))
		return resultRateLimited
	}
	a := g.upstreamAnswer(w, project, "trigger automation", err)
	writeError(w, a.status, a.msg)
	_, unknown := errors.AsType[*tracker.StartOutcomeUnknownError](err)
	_, stateErr := errors.AsType[*tracker.StateError](err)
	switch {
	case a.reason == reasonIdempotencyConflict:
		return resultConflict
	case unknown:
		return resultUnknown
	case stateErr:
		return resultAccepted // queued upstream, followed in memory
	case a.reason == reasonStateError:
		return resultStateError
	case a.status == http.StatusTooManyRequests:
		return resultRateLimited
	case a.status == http.StatusBadRequest:
		return resultBadRequest
	case a.status == http.StatusNotFound:
		return resultNotFound
	}
	return resultUpstreamErr
}

// trackRun handles POST .../{projectId}/runs/{jobId}/track: with ?intent=
// it settles a trigger of unknown outcome with the run's jobId (the
// intent names the automation); without, it follows a run started
// elsewhere, whose automation the body names ({"automation": "..."}).
func (g *Gateway) trackRun(w http.ResponseWriter, r *http.Request, project string) {
	var body struct {
		Automation string `json:"automation"`
	}
	if _, ok := startHeaders(w, r); !ok {
		return
	}
	if bad := readBody(w, r, &body, true, maxTriggerBodyBytes); bad != nil {
		writeError(w, bad.status, bad.msg)
		return
	}
	intent := r.URL.Query().Get("intent")
	if intent == "" && body.Automation == "" {
		writeError(w, http.StatusBadRequest, `automation is required: want {"automation": "..."} (or ?intent= to settle a trigger of unknown outcome)`)
		return
	}
	jobID := r.PathValue("jobId")
	ctx, cancel := g.upstreamContext(r)
	defer cancel()
	v, res, err := followOrSettle(intent,
		func() (tracker.AutomationRunView, tracker.TrackResult, error) {
			return g.auto.auto.AutomationOps().Resolve(ctx, project, intent, jobID)
		},
		func() (tracker.AutomationRunView, tracker.TrackResult, error) {
			return g.auto.auto.TrackAutomationRun(ctx, project, body.Automation, jobID)
		})
	answerTrack(w, tracked{what: "job (get-job does not know it, so the run cannot be followed)", start: "automation trigger", unknown: "unknown-triggers",
		failed: g.answerFailed("track automation run")}, project, v, res, err,
		func() {
			g.auditOp(r, "automation run followed", project, "run", jobID, "", "automation", v.SchemaID, "intent", intent)
		})
}

// AutomationRunList is the body of GET .../{projectId}/runs.
type AutomationRunList struct {
	Runs []tracker.AutomationRunView `json:"runs"`
}

// UnknownAutomationTriggerList is the body of GET .../unknown-triggers.
type UnknownAutomationTriggerList struct {
	UnknownTriggers []tracker.UnknownAutomationTrigger `json:"unknownTriggers"`
}

// runStatuses are the values of ?status= of the runs' list: the follow
// values, and the agent job statuses of those followed as one.
var runStatuses = append([]string{tracker.FollowPending, tracker.FollowNone}, listStatuses...)

func (g *Gateway) listRuns(w http.ResponseWriter, r *http.Request, project string) {
	serveList(w, r, "run", runStatuses, func(status string) []tracker.AutomationRunView {
		return slices.DeleteFunc(g.auto.auto.AutomationOps().List(project), func(v tracker.AutomationRunView) bool { return status != "" && v.Status != status })
	}, func(l []tracker.AutomationRunView) any { return AutomationRunList{Runs: l} })
}
