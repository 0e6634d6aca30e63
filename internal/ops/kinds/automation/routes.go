package automation

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/gateway"
	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
)

// The automation routes: POST .../{projectId}/{workflowSchemaId}/trigger,
// the runs' list and view, their track (?intent= settles a trigger of
// unknown outcome) and unknown-triggers. A trigger draws on the
// organization's update limit (the gateway's Updates).

// Results of a trigger (mintlify_automation_triggers_total).
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

// base is the automation routes' prefix.
const base = "/api/v1/workflow/{projectId}"

// maxBodyBytes bounds a trigger's body (the API's takes none: an empty
// one or {}) and a track's ({"automation": "..."}).
const maxBodyBytes = 4 << 10

// routes are the automation routes on a gateway.
type routes struct {
	*Kind
	g        *gateway.Gateway
	updates  *gateway.Limiter
	triggers *prometheus.CounterVec
}

// Routes adds the automation routes, their metric and their part of the
// update limit's seed.
func (k *Kind) Routes(g *gateway.Gateway) error {
	r := &routes{Kind: k, g: g, updates: g.Updates(), triggers: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mintlify_automation_triggers_total",
		Help: "Automation triggers through the gateway, by result; automations not named in the configuration count as other.",
	}, []string{"project", "automation", "result"})}
	if err := g.Register(r.triggers); err != nil {
		return err
	}
	r.updates.Seed(func(window time.Duration) map[string][]time.Time { return k.ops.Recent(window, nil, nil) })
	g.Series(func(project string) {
		named, others := k.named(project)
		if others {
			named = append(slices.Clone(named), Other)
		}
		for _, a := range named {
			for _, res := range triggerResults {
				r.triggers.WithLabelValues(project, a, res)
			}
		}
	})
	g.Handle(decl, "POST "+base+"/{workflowSchemaId}/trigger", r.trigger)
	g.Handle(decl, "GET "+base+"/runs", r.list)
	g.Handle(decl, "GET "+base+"/runs/{jobId}", r.one)
	g.Handle(decl, "POST "+base+"/runs/{jobId}/track", r.track)
	g.Unknown(decl, base+"/unknown-triggers", "unknownTriggers", false)
	// The trigger's path and a run's would conflict as patterns: 405s and
	// 404s by hand.
	g.Fallback(base+"/{a}", allowed)
	g.Fallback(base+"/{a}/{b}", allowed)
	g.Allow(base+"/runs/{jobId}/track", "POST")
	return nil
}

// allowed are the methods of the paths /api/v1/workflow/{projectId}/{a}
// and .../{a}/{b}.
func allowed(a, b string) string {
	switch {
	case b == "" && (a == "runs" || a == "unknown-triggers"):
		return "GET, HEAD"
	case b == "trigger":
		return "POST"
	case b != "" && a == "runs":
		return "GET, HEAD"
	case b != "" && a == "unknown-triggers":
		return "DELETE"
	}
	return ""
}

// trigger handles POST .../{projectId}/{workflowSchemaId}/trigger: the
// API's trigger takes no body (an empty one or {} is accepted).
func (r *routes) trigger(w http.ResponseWriter, req *http.Request, project string) {
	automation := req.PathValue("workflowSchemaId")
	label := r.Label(project, automation)
	count := func(result string) { r.triggers.WithLabelValues(project, label, result).Inc() }
	key, ok := gateway.StartHeaders(w, req)
	if !ok {
		count(resultBadRequest)
		return
	}
	var body struct{}
	if bad := gateway.ReadBody(w, req, &body, true, maxBodyBytes, ""); bad != nil {
		count(resultBadRequest)
		bad.Write(w)
		return
	}
	if _, others := r.named(project); label == Other && !others {
		count(resultNotAllowed)
		gateway.WriteError(w, http.StatusForbidden, fmt.Sprintf("automation %s may not be triggered through the exporter for project %s: "+
			"list it under the project's automations: in --config.file", automation, project))
		return
	}
	at, admitted := r.g.Config().Now(), false
	ctx, cancel := r.g.Context(req)
	defer cancel()
	a, err := r.Trigger(ctx, Request{Project: project, Automation: automation, IdempotencyKey: key, Admit: r.updates.Admit(project, at, &admitted)})
	if err != nil {
		if admitted && gateway.NothingSent(err) {
			r.updates.Release(project, at)
		}
		count(result(r.g.Fail(w, project, "trigger automation", err), err))
		return
	}
	count(map[bool]string{false: resultAccepted, true: resultReplayed}[a.Replayed])
	v := r.View(a.Item)
	r.g.Audit(req, "automation triggered", project, "run", v.RunID, key, "automation", automation, "job", v.JobID, "follow", v.Follow,
		"replayed", a.Replayed)
	gateway.WriteStarted(w, a.Code, http.StatusAccepted, a.Replayed, map[string]string{"schemaId": v.SchemaID, "instanceId": v.InstanceID, "jobId": v.JobID})
}

// result is the result of a failed trigger answered a.
func result(a gateway.Answer, err error) string {
	_, unknown := errors.AsType[*engine.OutcomeUnknownError](err)
	_, stateErr := errors.AsType[*engine.StateError](err)
	switch {
	case a.Reason == gateway.ReasonIdempotencyConflict:
		return resultConflict
	case unknown:
		return resultUnknown
	case stateErr:
		return resultAccepted // queued upstream, followed in memory
	case a.Reason == gateway.ReasonStateError:
		return resultStateError
	case a.Status == http.StatusTooManyRequests:
		return resultRateLimited
	case a.Status == http.StatusBadRequest:
		return resultBadRequest
	case a.Status == http.StatusNotFound:
		return resultNotFound
	}
	return resultUpstreamErr
}

// one handles GET .../runs/{jobId}.
func (r *routes) one(w http.ResponseWriter, req *http.Request, project string) {
	id := req.PathValue("jobId")
	if it, ok := r.ops.One(project, id); ok {
		gateway.WriteJSON(w, http.StatusOK, r.View(it))
		return
	}
	// A run not followed is an agent job of the API's: read through with
	// the organization's key and answered as the API answers it (issue
	// 44), not followed (track does that).
	ctx, cancel := r.g.Context(req)
	defer cancel()
	c, err := r.ops.Engine().Client(project, true)
	var j *apiclient.Job
	if err == nil {
		j, err = c.GetJob(ctx, project, id)
	}
	if err != nil {
		r.g.Fail(w, project, "read automation run", err)
		return
	}
	gateway.WriteJSON(w, http.StatusOK, j)
}

// track handles POST .../{projectId}/runs/{jobId}/track: with ?intent= it
// settles a trigger of unknown outcome with the run's jobId (the intent
// names the automation); without, it follows a run started elsewhere,
// whose automation the body names ({"automation": "..."}).
func (r *routes) track(w http.ResponseWriter, req *http.Request, project string) {
	var body struct {
		Automation string `json:"automation"`
	}
	if bad := gateway.ReadBody(w, req, &body, true, maxBodyBytes, ""); bad != nil {
		bad.Write(w)
		return
	}
	intent := req.URL.Query().Get("intent")
	if intent == "" && body.Automation == "" {
		gateway.WriteError(w, http.StatusBadRequest, `automation is required: want {"automation": "..."} (or ?intent= to settle a trigger of unknown outcome)`)
		return
	}
	jobID := req.PathValue("jobId")
	ctx, cancel := r.g.Context(req)
	defer cancel()
	it, res, err := gateway.FollowOrSettle(intent,
		func() (engine.Item, engine.TrackResult, error) { return r.ops.Resolve(ctx, project, intent, jobID) },
		func() (engine.Item, engine.TrackResult, error) { return r.Track(ctx, project, body.Automation, jobID) })
	var v View
	if it.Rec != nil {
		v = r.View(it)
	}
	gateway.AnswerTrack(w, gateway.Tracked{What: "job (get-job does not know it, so the run cannot be followed)", Start: "automation trigger",
		Unknown: "unknown-triggers", Failed: r.g.Failed("track automation run")}, project, v, res, err,
		func() {
			r.g.Audit(req, "automation run followed", project, "run", jobID, "", "automation", v.SchemaID, "intent", intent)
		})
}

// list handles GET .../runs?status=&limit=: ?status= takes the follow
// values, and the agent job statuses of those followed as one.
func (r *routes) list(w http.ResponseWriter, req *http.Request, project string) {
	var views []View
	for _, it := range r.ops.List(project) {
		views = append(views, r.View(it))
	}
	gateway.ServeList(w, req, "run", listStatuses(), views, func(v View) string { return v.Status }, "runs")
}

// row is a run as the status page's JSON shows it.
type row struct {
	Project     string    `json:"project"`
	Automation  string    `json:"automation"`
	RunID       string    `json:"run_id"`
	JobID       string    `json:"job_id,omitempty"`
	Status      string    `json:"status"`
	Follow      string    `json:"follow"`
	TriggeredAt time.Time `json:"triggered_at,omitzero"`
}

// Section is the status page's section of the runs triggered or handed
// over last (newest first), of the projects followed.
func (k *Kind) Section(time.Time) status.Section {
	s := status.Section{Key: "automations", Title: decl.Routes.Title, Empty: "No automation run followed.",
		Note: "A run whose job get-job does not know is not_followed: it was queued, but how it ends cannot be seen here.",
		Columns: []status.Column{{Name: "Project"}, {Name: "Automation"}, {Name: "Run"}, {Name: "Job"}, {Name: "Followed"}, {Name: "Status"},
			{Name: "Triggered"}}}
	rows := []row{}
	for _, it := range k.ops.Newest(status.MaxRows) {
		v := k.View(it)
		level := ""
		if v.Follow == FollowNone || v.Status == "failed" || v.Status == engine.StatusLost {
			level = status.LevelWarn
		}
		rows = append(rows, row{Project: v.ProjectID, Automation: v.SchemaID, RunID: v.RunID, JobID: v.JobID, Status: v.Status, Follow: v.Follow,
			TriggeredAt: v.Tracking.TrackedAt})
		s.Rows = append(s.Rows, status.Row{Project: v.ProjectID, Cells: []status.Cell{{Text: v.ProjectID}, {Text: v.SchemaID, Code: true},
			{Text: v.RunID, Code: true}, {Text: v.JobID, Code: true}, {Text: v.Follow, Level: level}, {Text: v.Status, Code: true},
			{Time: true, At: v.Tracking.TrackedAt}}})
	}
	s.JSON = rows
	return s
}

// Label is the automation label of automation in project: its id when the
// configuration names it, else Other.
func (k *Kind) Label(project, automation string) string {
	if named, _ := k.named(project); slices.Contains(named, automation) {
		return automation
	}
	return Other
}

// named are the automations project names (label values), and whether it
// allows any other.
func (k *Kind) named(project string) (named []string, others bool) {
	ids, _ := k.ops.Engine().Takes(Name, project)
	for _, id := range ids {
		if id == Any {
			others = true
		} else {
			named = append(named, id)
		}
	}
	return named, others
}
