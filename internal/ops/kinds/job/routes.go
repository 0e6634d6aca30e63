package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/gateway"
	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
)

// The agent jobs' routes: the Mintlify API's own job paths and shapes
// (create, read, list, follow-up), and track and the creates of unknown
// outcome as every kind has them.

// Jobs is what the routes ask of the kind (*Kind; tests stub it).
type Jobs interface {
	Create(ctx context.Context, req CreateRequest) (Created, error)
	Job(project, id string) (View, bool)
	Jobs(project, status string) []View
	Track(ctx context.Context, project, id string) (View, engine.TrackResult, error)
	Resolve(ctx context.Context, project, intentID, jobID string) (View, engine.TrackResult, error)
	Message(ctx context.Context, req MessageRequest) (Messaged, error)
	RecentCreates(window time.Duration) map[string][]time.Time
	RecentMessages(window time.Duration) map[string][]time.Time
}

// createWindow is the window of the API's documented create and message
// limits.
const createWindow = time.Hour

// reasonJobNotFound: a follow-up to a job the API does not know (404).
const reasonJobNotFound = "job_not_found"

// rejectReasons are the reasons of refused creates (each pre-created at
// 0); messageRejectReasons those of follow-ups.
var (
	rejectReasons = []string{gateway.ReasonBadRequest, gateway.ReasonTooLarge, gateway.ReasonUnsupportedMediaType, gateway.ReasonRateLimited,
		gateway.ReasonUpstreamError, gateway.ReasonIdempotencyConflict, gateway.ReasonStateError}
	messageRejectReasons = append(slices.Clone(rejectReasons), reasonJobNotFound)
)

// listStatuses are the values of the list's ?status=: the statuses the
// API documents and the exporter's own lost.
var listStatuses = []string{apiclient.StatusActive, apiclient.StatusCompleted, apiclient.StatusFailed, apiclient.StatusArchived, engine.StatusLost}

// ListStatuses are the values of ?status= of a list of agent jobs (an
// automation's runs are ones).
func ListStatuses() []string { return slices.Clone(listStatuses) }

// routes are the agent job routes on a gateway.
type routes struct {
	j                     Jobs
	g                     *gateway.Gateway
	creates, messages     *gateway.Limiter
	rejected, msgRejected *prometheus.CounterVec
}

// Routes adds the agent job routes to g.
func (k *Kind) Routes(g *gateway.Gateway) error { return AddRoutes(g, k) }

// AddRoutes adds the agent job routes over j to g.
func AddRoutes(g *gateway.Gateway, j Jobs) error {
	cfg := g.Config()
	r := &routes{j: j, g: g, rejected: newRejected("mintlify_agent_job_submit_rejected_total", "Job submissions the gateway refused, by project and reason."),
		msgRejected: newRejected("mintlify_agent_job_message_rejected_total", "Follow-up messages the gateway refused, by project and reason."),
		creates:     g.Limit("agent_creates", "create", "jobs", cfg.CreateLimitPerHour, createWindow, false),
		messages:    g.Limit("agent_messages", "message", "follow-up messages", cfg.MessageLimitPerHour, createWindow, false)}
	r.creates.Seed(j.RecentCreates)
	r.messages.Seed(j.RecentMessages)
	for _, c := range []prometheus.Collector{r.rejected, r.msgRejected} {
		if err := g.Register(c); err != nil {
			return err
		}
	}
	g.Series(func(project string) {
		if _, ok := g.Engine().Takes(Name, project); ok {
			for _, reason := range messageRejectReasons {
				if reason != reasonJobNotFound {
					r.rejected.WithLabelValues(project, reason)
				}
				r.msgRejected.WithLabelValues(project, reason)
			}
		}
	})
	const base = "/api/v2/agent/{projectId}"
	for _, rt := range []struct {
		method, path, allow string
		h                   func(http.ResponseWriter, *http.Request, string)
	}{
		{"POST", "/job", "POST", r.create},
		{"GET", "/job/{id}", "GET, HEAD", r.get},
		{"GET", "/jobs", "GET, HEAD", r.list},
		{"POST", "/job/{id}/track", "POST", r.track},
		{"POST", "/job/{id}/message", "POST", r.message},
	} {
		g.Handle(decl, rt.method+" "+base+rt.path, rt.h)
		g.Allow(base+rt.path, rt.allow)
	}
	g.Unknown(decl, base+"/unknown-creates", "unknownCreates", true)
	return nil
}

// newRejected is a counter of refused requests by project and reason.
func newRejected(name, help string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"project", "reason"})
}

// submission is a create or follow-up that passed the gateway's checks.
type submission struct {
	key, prompt string
	// at is when it arrived: the time of its limit slot; admitted: it
	// took one.
	at       time.Time
	admitted bool
}

// intake checks a create or follow-up (Idempotency-Key, body and
// prompt), answering and counting a refusal itself (reject).
func (r *routes) intake(w http.ResponseWriter, req *http.Request, reject func(a gateway.Answer)) (*submission, bool) {
	key, bad := gateway.Refuse(req)
	if bad == nil {
		var body struct {
			Prompt json.RawMessage `json:"prompt"`
		}
		if bad = gateway.ReadBody(w, req, &body, false, r.g.Config().MaxPromptBytes, `{"prompt": "..."}`); bad == nil {
			var prompt string
			if prompt, bad = readPrompt(body.Prompt); bad == nil {
				return &submission{key: key, prompt: prompt, at: r.g.Config().Now()}, true
			}
		}
	}
	reject(*bad)
	return nil, false
}

// readPrompt validates the prompt of a body.
func readPrompt(raw json.RawMessage) (prompt string, bad *gateway.BadRequest) {
	fail := func(msg string) (string, *gateway.BadRequest) {
		return "", &gateway.BadRequest{Status: http.StatusBadRequest, Reason: gateway.ReasonBadRequest, Msg: msg}
	}
	switch text := strings.TrimSpace(string(raw)); {
	case text == "":
		return fail("prompt is required")
	case text == "null" || json.Unmarshal(raw, &prompt) != nil:
		return fail("prompt must be a string")
	case strings.TrimSpace(prompt) == "":
		return fail("prompt must not be empty")
	}
	return prompt, nil
}

// refused answers a refused request of project and counts it in c.
func refused(w http.ResponseWriter, c *prometheus.CounterVec, project string, a gateway.Answer) {
	if a.Reason != "" {
		c.WithLabelValues(project, a.Reason).Inc()
	}
	a.Write(w)
}

// create handles POST .../job.
func (r *routes) create(w http.ResponseWriter, req *http.Request, project string) {
	sub, ok := r.intake(w, req, func(a gateway.Answer) { refused(w, r.rejected, project, a) })
	if !ok {
		return
	}
	ctx, cancel := r.g.Context(req)
	defer cancel()
	c, err := r.j.Create(ctx, CreateRequest{Project: project, Prompt: sub.prompt, IdempotencyKey: sub.key,
		Admit: r.creates.Admit(project, sub.at, &sub.admitted)})
	if err != nil {
		if sub.admitted && gateway.NothingSent(err) {
			r.creates.Release(project, sub.at)
		}
		refused(w, r.rejected, project, r.g.Answer(w, project, "create", err))
		return
	}
	r.g.Audit(req, "agent job submitted", project, "job", c.Job.ID, sub.key, "replayed", c.Replayed, "prompt_bytes", len(sub.prompt))
	gateway.WriteStarted(w, c.Status, http.StatusOK, c.Replayed, c.Job)
}

// message handles POST .../job/{id}/message: a follow-up to a job, under
// the same checks as a create and its own local limit.
func (r *routes) message(w http.ResponseWriter, req *http.Request, project string) {
	id := req.PathValue("id")
	reject := func(a gateway.Answer) { refused(w, r.msgRejected, project, a) }
	sub, ok := r.intake(w, req, reject)
	if !ok {
		return
	}
	ctx, cancel := r.g.Context(req)
	defer cancel()
	m, err := r.j.Message(ctx, MessageRequest{Project: project, JobID: id, Prompt: sub.prompt, IdempotencyKey: sub.key,
		Admit: r.messages.Admit(project, sub.at, &sub.admitted)})
	if err != nil {
		var notSent *NotSentError
		if sub.admitted && (errors.As(err, &notSent) || gateway.NothingSent(err)) {
			r.messages.Release(project, sub.at)
		}
		reject(r.messageFailed(w, project, id, err))
		return
	}
	r.g.Audit(req, "agent job follow-up message sent", project, "job", id, sub.key, "turn", m.Job.Tracking.Turn, "replayed", m.Replayed, "prompt_bytes", len(sub.prompt))
	gateway.WriteStarted(w, m.Status, http.StatusOK, m.Replayed, m.Job)
}

// messageFailed is the answer to a failed follow-up.
func (r *routes) messageFailed(w http.ResponseWriter, project, id string, err error) gateway.Answer {
	unknown, isUnknown := errors.AsType[*MessageOutcomeUnknownError](err)
	switch {
	case apiclient.StatusCode(err) == http.StatusNotFound:
		return gateway.Answer{Status: http.StatusNotFound, Reason: reasonJobNotFound, Msg: "job not found upstream; nothing was sent"}
	case isUnknown && unknown.Err == nil:
		// A retry with the key of a message whose outcome is unknown.
		return gateway.Answer{Status: gateway.UnknownStatus(err, true), Reason: gateway.ReasonIdempotencyConflict, Msg: err.Error() + "; nothing was sent"}
	case isUnknown:
		level.Warn(r.g.Logger()).Log("msg", "follow-up message of unknown outcome", "project", project, "job", id, "err", unknown.Err)
		return gateway.Answer{Status: gateway.UnknownStatus(err, false), Reason: gateway.ReasonUpstreamError, Msg: err.Error()}
	}
	return r.g.Answer(w, project, "message", err)
}

// get handles GET .../job/{id}.
func (r *routes) get(w http.ResponseWriter, req *http.Request, project string) {
	v, ok := r.j.Job(project, req.PathValue("id"))
	gateway.ServeOne(w, v, ok, "job not tracked by this exporter (use POST .../job/{id}/track to track a job created elsewhere)")
}

// list handles GET .../jobs?status=&limit=.
func (r *routes) list(w http.ResponseWriter, req *http.Request, project string) {
	gateway.ServeList(w, req, "job", listStatuses, r.j.Jobs(project, ""), func(v View) string { return v.Status }, "jobs")
}

// track handles POST .../job/{id}/track[?intent=]; its body is ignored.
// Failures are answered but not counted as refused submissions.
func (r *routes) track(w http.ResponseWriter, req *http.Request, project string) {
	ctx, cancel := r.g.Context(req)
	defer cancel()
	intent, id := req.URL.Query().Get("intent"), req.PathValue("id")
	v, res, err := gateway.FollowOrSettle(intent,
		func() (View, engine.TrackResult, error) { return r.j.Resolve(ctx, project, intent, id) },
		func() (View, engine.TrackResult, error) { return r.j.Track(ctx, project, id) })
	gateway.AnswerTrack(w, gateway.Tracked{What: "job", Start: "create", Unknown: "unknown-creates", Failed: r.g.Failed("track")}, project, v, res, err,
		func() { r.g.Audit(req, "agent job tracked", project, "job", v.ID, "", "intent", intent) })
}

// projectRow is a project's agent jobs as the status page's JSON shows
// them, with the starts of unknown outcome of every kind.
type projectRow struct {
	Project         string         `json:"project"`
	ByStatus        map[string]int `json:"by_status"`
	UnknownCreates  int            `json:"unknown_creates"`
	UnknownOutcomes map[string]int `json:"unknown_outcomes"`
	// UnknownTriggers sums the other kinds' starts of unknown outcome (the
	// name of release 1's deployment triggers, kept for scripts).
	UnknownTriggers int       `json:"unknown_triggers"`
	OldestActiveAt  time.Time `json:"oldest_active_at,omitzero"`
}

// Section is the status page's section of the agent jobs: each followed
// project's jobs by status (the statuses of mintlify_agent_jobs, folded as
// it folds them), its starts of unknown outcome of every kind, and its
// oldest turn running.
func (k *Kind) Section(time.Time) status.Section {
	e := k.ops.Engine()
	by := k.snapshot()
	rows := []projectRow{}
	extra := map[string]bool{}
	for _, p := range k.ops.Projects() {
		statuses, _ := foldStatuses(by[p].byStatus)
		row := projectRow{Project: p, ByStatus: statuses, UnknownCreates: by[p].unknownCreates, UnknownOutcomes: map[string]int{},
			OldestActiveAt: by[p].oldestActive}
		for _, kind := range e.Kinds() {
			name := kind.Declare().Name
			row.UnknownOutcomes[name] = len(e.Ops(name).Unknown(p))
			if name != Name {
				row.UnknownTriggers += row.UnknownOutcomes[name]
			}
		}
		for s := range statuses {
			if !slices.Contains(gaugeStatuses, s) {
				extra[s] = true
			}
		}
		rows = append(rows, row)
	}
	columns := append(slices.Clone(gaugeStatuses), slices.Sorted(maps.Keys(extra))...)
	s := status.Section{Key: "projects", Title: decl.Routes.Title, Empty: "No project is followed.", JSON: rows}
	s.Columns = append(s.Columns, status.Column{Name: "Project"})
	for _, c := range columns {
		s.Columns = append(s.Columns, status.Column{Name: c, Num: true})
	}
	s.Columns = append(s.Columns, status.Column{Name: "Unknown outcomes"}, status.Column{Name: "Oldest active"})
	for _, row := range rows {
		cells := []status.Cell{{Text: row.Project}}
		for _, c := range columns {
			cell := status.Cell{Text: strconv.Itoa(row.ByStatus[c])}
			if c == engine.StatusLost && row.ByStatus[c] > 0 {
				cell.Level = status.LevelWarn
			}
			cells = append(cells, cell)
		}
		var unknown []string
		for _, kind := range e.Kinds() {
			if n := row.UnknownOutcomes[kind.Declare().Name]; n > 0 {
				unknown = append(unknown, fmt.Sprintf("%d %s", n, kind.Declare().Request))
			}
		}
		cell := status.Cell{Text: "none"}
		if len(unknown) > 0 {
			cell = status.Cell{Text: strings.Join(unknown, ", "), Level: status.LevelWarn}
		}
		cells = append(cells, cell, status.Cell{Time: true, At: row.OldestActiveAt})
		s.Rows = append(s.Rows, status.Row{Project: row.Project, Cells: cells})
	}
	return s
}
