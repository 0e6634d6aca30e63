// Package gateway serves the agent job submission API: the Mintlify API's
// own job paths and shapes under /api, so that a client only swaps the base
// URL and drops the key. It owns its routes, input validation, the local
// per-project create limit, the mapping of upstream errors to answers, and
// the rejection metric (mintlify_agent_job_submit_rejected_total).
// Creating, tracking and persisting jobs is the tracker's business
// (internal/ops/tracker), which the gateway reaches through its Tracker
// interface.
//
// The gateway has no authentication of its own: it is served behind the
// exporter-toolkit web config (--web.config.file), like /metrics.
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/tracker"
)

// Tracker is what the gateway needs from the job tracker; *tracker.Tracker
// implements it.
type Tracker interface {
	// Create creates a job upstream (after a durable create intent) and
	// durably records it as tracked before returning, or replays the
	// answer for an idempotency key used before.
	Create(ctx context.Context, req tracker.CreateRequest) (tracker.Created, error)
	// Job returns a tracked job.
	Job(project, id string) (tracker.JobView, bool)
	// Jobs returns the project's tracked jobs, newest first, only those
	// whose shown status equals status unless it is empty.
	Jobs(project, status string) []tracker.JobView
	// Track starts tracking a job created elsewhere after reading it once
	// upstream.
	Track(ctx context.Context, project, id string) (tracker.JobView, tracker.TrackResult, error)
	// RecentCreates returns when jobs were created through the gateway
	// within window, per project, to seed the create limit after a restart.
	RecentCreates(window time.Duration) map[string][]time.Time
	// UnknownCreates lists the project's creates of unknown outcome.
	UnknownCreates(project string) []tracker.UnknownCreate
	// ResolveIntent tracks the job a create of unknown outcome created.
	ResolveIntent(ctx context.Context, project, intentID, jobID string) (tracker.JobView, tracker.TrackResult, error)
	// DismissIntent deletes a create of unknown outcome.
	DismissIntent(project, intentID string) error
	// Message sends a follow-up message to a job (tracking it first when
	// it is not tracked) and durably records the job's new turn before
	// returning, or replays the answer for an idempotency key used before.
	Message(ctx context.Context, req tracker.MessageRequest) (tracker.Messaged, error)
	// RecentMessages returns when follow-ups were sent through the gateway
	// within window, per project, to seed the message limit after a
	// restart.
	RecentMessages(window time.Duration) map[string][]time.Time
}

// createWindow is the window of the API's documented create and message
// limits.
const createWindow = time.Hour

// maxMaxPromptBytes bounds MaxPromptBytes.
const maxMaxPromptBytes = 16 << 20

// Config configures a Gateway. Start from Defaults: a zero value is never
// replaced by a default, it means what the field says it means.
type Config struct {
	// Projects are the only accepted project ids. Distinct, non-empty.
	Projects []string
	// MaxPromptBytes bounds the request body, and so the prompt in it: one
	// limit that a client can check before sending (1 byte to 16 MiB).
	MaxPromptBytes int64
	// CreateLimitPerHour is the local create limit per project in any hour
	// (429 beyond it, nothing sent upstream); 0 disables it. Every create
	// passed to the tracker counts, whatever the answer, because the API
	// counts requests; only a create refused before sending (Retry-After
	// still running) gives its slot back.
	CreateLimitPerHour int
	// MessageLimitPerHour is the local follow-up message limit per project
	// in any hour, counted like CreateLimitPerHour; 0 disables it.
	MessageLimitPerHour int
	// UpstreamTimeout bounds one create, message or track call upstream. The call
	// is detached from the client's connection, so a client that hangs up
	// does not leave a created but untracked job behind.
	UpstreamTimeout time.Duration
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Exported says whether the exporter exports a project that takes no
	// agent jobs (agent_jobs: false), so that its 404 names the setting;
	// nil: none does.
	Exported func(project string) bool
	// NoAgentJobs: the agent job routes are off (the gateway serves
	// deployments only); they answer 404 saying how to turn them on.
	NoAgentJobs bool
	// Deployments serves the deployment routes (kind_deployment.go); the
	// tracker must implement Deployer. DeploymentProjects are the
	// projects that take deployments now, read per request (a reload
	// changes them), and Organization names a project's organization,
	// whose trigger limits it draws on (nil: one organization).
	Deployments        bool
	DeploymentProjects func() []string
	// StaticExports serves the static export routes (kind_export.go); the
	// tracker must implement Exporter. ExportProjects are the projects
	// that take them now, read per request.
	StaticExports  bool
	ExportProjects func() []string
	Organization   func(project string) string
	// Automations serves the automation routes (kind_automation.go); the
	// tracker must implement Automator. AutomationProjects are the
	// projects that take automation triggers now, and NamedAutomations
	// says of one the automations named (label values) and whether any
	// other may be triggered too (counted as "other"); both read per
	// request (a reload changes them).
	Automations        bool
	AutomationProjects func() []string
	NamedAutomations   func(project string) (named []string, others bool)
}

// Defaults returns the configuration the exporter's flags start from.
func Defaults() Config {
	return Config{
		MaxPromptBytes: 64 << 10,
		// The API's documented limit: 100 creates per hour per project.
		CreateLimitPerHour: 100,
		// The API's documented limit: 100 messages per hour per project.
		MessageLimitPerHour: 100,
		UpstreamTimeout:     60 * time.Second,
	}
}

// Validate reports the first invalid field as a *config.FieldError.
func (c *Config) Validate() error {
	return config.First(
		config.Field("Projects", config.Projects(c.Projects)),
		config.Field("MaxPromptBytes", config.InRange(c.MaxPromptBytes, 1, maxMaxPromptBytes)),
		config.Field("CreateLimitPerHour", config.AtLeast(c.CreateLimitPerHour, 0)),
		config.Field("MessageLimitPerHour", config.AtLeast(c.MessageLimitPerHour, 0)),
		config.Field("UpstreamTimeout", config.Positive(c.UpstreamTimeout)),
	)
}

// Gateway is the HTTP handler of /api/.
type Gateway struct {
	tracker Tracker
	cfg     Config
	logger  log.Logger
	// projects are the accepted project ids; SetProjects swaps the set.
	projects atomic.Pointer[map[string]bool]
	// seeded are the projects whose limits were seeded from the tracker's
	// recent creates and follow-ups (SetProjects), guarded by seedMu.
	seedMu   sync.Mutex
	seeded   map[string]bool
	limiter  *limiter
	messages *limiter
	rejected *prometheus.CounterVec
	// msgRejected counts refused follow-up messages.
	msgRejected *prometheus.CounterVec
	mux         *http.ServeMux
	// deploy are the deployment routes' state (nil: not served).
	deploy *deployRoutes
	// export is the static export routes' tracker (nil: not served).
	export Exporter
	// auto are the automation routes' state (nil: not served).
	auto *autoRoutes
	// limits are the organizations' trigger limits, shared by the kinds
	// that draw on them (deployments, automations).
	limits *orgLimits
}

// New validates cfg, seeds the create limit from the tracker's recent
// creates and registers the rejection metric with reg (when not nil).
func New(t Tracker, reg prometheus.Registerer, cfg Config, logger log.Logger) (*Gateway, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("gateway config: %w", err)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if logger == nil {
		logger = log.NewNopLogger()
	}
	g := &Gateway{
		tracker:     t,
		cfg:         cfg,
		logger:      logger,
		limiter:     newLimiter(cfg.CreateLimitPerHour, createWindow),
		messages:    newLimiter(cfg.MessageLimitPerHour, createWindow),
		rejected:    newRejected(cfg.Projects),
		msgRejected: newMessageRejected(cfg.Projects),
		seeded:      map[string]bool{},
		mux:         http.NewServeMux(),
		limits:      newOrgLimits(),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{g.rejected, g.msgRejected} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("gateway: registering metrics: %w", err)
			}
		}
	}
	g.SetProjects(cfg.Projects)
	if cfg.Deployments {
		dep, ok := t.(Deployer)
		if !ok {
			return nil, errors.New("gateway: the tracker cannot follow deployments")
		}
		g.registerDeployments(dep)
	} else {
		g.mux.Handle("/api/v1/project/", Disabled())
	}
	if cfg.StaticExports {
		x, ok := t.(Exporter)
		if !ok {
			return nil, errors.New("gateway: the tracker cannot follow static exports")
		}
		g.registerExports(x)
	} else {
		g.mux.Handle("/api/v1/static-export/", Disabled())
	}
	if cfg.Automations {
		auto, ok := t.(Automator)
		if !ok {
			return nil, errors.New("gateway: the tracker cannot follow automations")
		}
		if err := g.registerAutomations(auto, reg); err != nil {
			return nil, err
		}
	} else {
		g.mux.Handle("/api/v1/workflow/", Disabled())
	}
	if cfg.NoAgentJobs {
		g.mux.Handle("/api/v2/agent/", Disabled())
		g.mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
			writeError(w, http.StatusNotFound, "not found")
		})
		return g, nil
	}
	const base = "/api/v2/agent/{projectId}"
	g.handle("POST "+base+"/job", g.create)
	g.handle("GET "+base+"/job/{id}", g.get)
	g.handle("GET "+base+"/jobs", g.list)
	g.handle("POST "+base+"/job/{id}/track", g.track)
	g.handle("POST "+base+"/job/{id}/message", g.message)
	unknown, dismiss := unknownRoutes(g, "create", g.tracker.UnknownCreates,
		func(l []tracker.UnknownCreate) any { return UnknownCreateList{UnknownCreates: l} }, g.tracker.DismissIntent)
	g.handle("GET "+base+"/unknown-creates", unknown)
	g.handle("DELETE "+base+"/unknown-creates/{intentId}", dismiss)
	// Method-less fallbacks answer 405 in JSON; everything else 404 in JSON.
	g.mux.HandleFunc(base+"/job", methodNotAllowed("POST"))
	g.mux.HandleFunc(base+"/job/{id}", methodNotAllowed("GET, HEAD"))
	g.mux.HandleFunc(base+"/jobs", methodNotAllowed("GET, HEAD"))
	g.mux.HandleFunc(base+"/job/{id}/track", methodNotAllowed("POST"))
	g.mux.HandleFunc(base+"/job/{id}/message", methodNotAllowed("POST"))
	g.mux.HandleFunc(base+"/unknown-creates", methodNotAllowed("GET, HEAD"))
	g.mux.HandleFunc(base+"/unknown-creates/{intentId}", methodNotAllowed("DELETE"))
	g.mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusNotFound, "not found")
	})
	return g, nil
}

func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) { g.mux.ServeHTTP(w, r) }

// Disabled is what /api/ answers when the gateway is not enabled: 404 in
// JSON, saying how to enable it.
func Disabled() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/v1/workflow/") {
			writeError(w, http.StatusNotFound, "the automation routes are disabled; start the exporter with --web.enable-automation-api")
			return
		}
		if strings.HasPrefix(r.URL.Path, "/api/v1/static-export/") {
			writeError(w, http.StatusNotFound, "the static export routes are disabled; start the exporter with --web.enable-static-export-api")
			return
		}
		if strings.HasPrefix(r.URL.Path, "/api/v1/project/") {
			writeError(w, http.StatusNotFound, "the deployment routes are disabled; start the exporter with --web.enable-deployment-api")
			return
		}
		writeError(w, http.StatusNotFound, "the agent job gateway is disabled; start the exporter with --web.enable-agent-api")
	})
}

// handle registers h behind the project check.
func (g *Gateway) handle(pattern string, h func(http.ResponseWriter, *http.Request, string)) {
	g.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		project := r.PathValue("projectId")
		if !(*g.projects.Load())[project] {
			g.refuseProject(w, project)
			return
		}
		if badIDs(w, r) {
			return
		}
		h(w, r, project)
	})
}

func methodNotAllowed(allow string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Allow", allow)
		writeError(w, http.StatusMethodNotAllowed, "method not allowed")
	}
}

// reject answers a refused submission of a configured project and counts it.
func (g *Gateway) reject(w http.ResponseWriter, project, reason string, status int, msg string) {
	g.rejected.WithLabelValues(project, reason).Inc()
	writeError(w, status, msg)
}

// limitError is the local create limit refusing a create.
type limitError struct{ wait time.Duration }

func (e *limitError) Error() string { return "create limit reached" }

// writeStarted answers a request of any kind that started (or replayed)
// an operation: the API's status (code; def when it gave none that is
// 2xx), Idempotent-Replayed on a replay, and body.
func writeStarted(w http.ResponseWriter, code, def int, replayed bool, body any) {
	if code < 200 || code > 299 {
		code = def
	}
	if replayed {
		// Not part of the draft, but what clients of other idempotent APIs
		// look for: this answer is a replay, nothing was sent.
		w.Header().Set("Idempotent-Replayed", "true")
	}
	writeJSON(w, code, body)
}

// unknownStatus is the status of the answer to a request of any kind
// whose outcome is unknown: 409 when a retry met it again through its
// Idempotency-Key (nothing was sent), 504 when the API did not answer in
// time, 502 otherwise (the request left, the answer did not come back).
func unknownStatus(err error, metAgain bool) int {
	switch {
	case metAgain:
		return http.StatusConflict
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	}
	return http.StatusBadGateway
}

// upstreamContext is the context of a call upstream for r: detached from
// the client's connection (a client that hangs up must not leave a created
// but untracked job behind), bounded by UpstreamTimeout, and carrying the
// basic-auth user for the job record.
func (g *Gateway) upstreamContext(r *http.Request) (context.Context, context.CancelFunc) {
	user, _ := ClientOf(r)
	return context.WithTimeout(tracker.WithUser(context.WithoutCancel(r.Context()), user), g.cfg.UpstreamTimeout)
}

// audit logs an accepted request at info: what, for which project and job,
// by whom (the basic-auth user, when there is one) and from where. Never
// the prompt: only its size.
func (g *Gateway) audit(r *http.Request, msg, project, job, key string, kv ...any) {
	g.auditOp(r, msg, project, "job", job, key, kv...)
}

// auditOp is audit for an operation of any kind: idKey names its id
// ("job", "deployment"), the key every log line of that kind uses. Fields
// of kv whose value is an empty string are left out: an empty field reads
// as a value that was lost.
func (g *Gateway) auditOp(r *http.Request, msg, project, idKey, id, key string, kv ...any) {
	user, remote := ClientOf(r)
	args := []any{"msg", msg, "project", project, idKey, id}
	if user != "" {
		args = append(args, "user", user)
	}
	args = append(args, "remote", remote)
	if remote != r.RemoteAddr {
		args = append(args, "via", r.RemoteAddr)
	}
	if key != "" {
		args = append(args, "idempotency_key", key)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if s, ok := kv[i+1].(string); ok && s == "" {
			continue
		}
		args = append(args, kv[i], kv[i+1])
	}
	level.Info(g.logger).Log(args...)
}

// submission is a create or follow-up request that passed the gateway's
// checks.
type submission struct {
	key, prompt string
	// at is when it arrived: the time of its limit slot.
	at time.Time
	// admitted: admit took a slot.
	admitted bool
}

// intake checks a create or follow-up request (Content-Type,
// Idempotency-Key, body and prompt), answering and counting a refusal
// itself through reject.
func (g *Gateway) intake(w http.ResponseWriter, r *http.Request, reject func(reason string, status int, msg string)) (*submission, bool) {
	if !jsonContentType(r) {
		reject(reasonUnsupportedMediaType, http.StatusUnsupportedMediaType, contentTypeMsg)
		return nil, false
	}
	key, err := IdempotencyKey(r.Header)
	if err != nil {
		reject(reasonBadRequest, http.StatusBadRequest, err.Error())
		return nil, false
	}
	prompt, bad := g.readPrompt(w, r)
	if bad != nil {
		reject(bad.reason, bad.status, bad.msg)
		return nil, false
	}
	return &submission{key: key, prompt: prompt, at: g.cfg.Now()}, true
}

// contentTypeMsg is the answer to a POST that is not JSON.
const contentTypeMsg = "Content-Type must be application/json"

// jsonContentType reports whether r declares a JSON body. Every POST of the
// gateway requires it, bodies it ignores included: a browser sends a
// cross-site form (urlencoded, multipart, text/plain) without asking, but
// never application/json, so a page cannot make a browser that has the
// basic-auth credentials cached act on the gateway.
func jsonContentType(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

// admit is the tracker's Admit for the submission: it takes a slot of l,
// or fails with *limitError.
func (s *submission) admit(l *limiter, project string) func() error {
	return func() error {
		ok, wait := l.reserve(project, s.at)
		if !ok {
			return &limitError{wait: wait}
		}
		s.admitted = true
		return nil
	}
}

// IdempotencyKey reads the Idempotency-Key header: a Structured Fields
// string as the IETF draft defines it ("..."), or for the clients that send
// it so, a bare token. The key is 1 to 255 printable ASCII characters; no
// header is an empty key.
func IdempotencyKey(h http.Header) (string, error) {
	vals := h.Values("Idempotency-Key")
	if len(vals) == 0 {
		return "", nil
	}
	if len(vals) > 1 {
		return "", errors.New("Idempotency-Key: give the header once")
	}
	v := strings.TrimSpace(vals[0])
	if strings.HasPrefix(v, `"`) {
		var b strings.Builder
		closed := false
		for i := 1; i < len(v); i++ {
			c := v[i]
			if c == '\\' && i+1 < len(v) && (v[i+1] == '"' || v[i+1] == '\\') {
				b.WriteByte(v[i+1])
				i++
				continue
			}
			if c == '"' {
				closed = i == len(v)-1
				break
			}
			b.WriteByte(c)
		}
		if !closed {
			return "", errors.New("Idempotency-Key: malformed quoted string")
		}
		v = b.String()
	}
	if !tracker.ValidIdempotencyKey(v) {
		return "", fmt.Errorf("Idempotency-Key: must be 1 to %d printable ASCII characters", tracker.MaxIdempotencyKeyLen)
	}
	return v, nil
}

// badRequest is a refused request body.
type badRequest struct {
	status      int
	reason, msg string
}

func badBody(msg string) *badRequest {
	return &badRequest{status: http.StatusBadRequest, reason: reasonBadRequest, msg: msg}
}

// answer is the reply to a failed create or track call.
type answer struct {
	status int
	msg    string
	// reason is the rejection reason of a create; empty when the failure
	// is not a rejection (the job exists but was not saved).
	reason string
}

// upstreamAnswer logs a failed create or track call and returns the answer
// for it, setting Retry-After on w where the client should wait.
func (g *Gateway) upstreamAnswer(w http.ResponseWriter, project, op string, err error) answer {
	var (
		throttled *apiclient.ThrottledError
		apiErr    *apiclient.APIError
		stateErr  *tracker.StateError
		intentErr *tracker.IntentError
		collision *tracker.IDCollisionError
		badID     *tracker.BadIDError
	)
	if a, ok := g.unknownAnswer(project, op, err); ok {
		return a
	}
	switch {
	case errors.As(err, &badID):
		return answer{status: http.StatusBadRequest, reason: reasonBadRequest, msg: err.Error() + "; nothing was sent"}
	case errors.Is(err, tracker.ErrIdempotencyKeyReused):
		return answer{status: http.StatusUnprocessableEntity, reason: reasonIdempotencyConflict, msg: err.Error() + "; nothing was sent"}
	case errors.Is(err, tracker.ErrIdempotencyKeyInFlight):
		return answer{status: http.StatusConflict, reason: reasonIdempotencyConflict, msg: err.Error() + "; nothing was sent"}
	case errors.Is(err, apiclient.ErrOtherProject):
		return answer{status: http.StatusConflict, reason: reasonUpstreamError, msg: err.Error() + "; nothing is followed"}
	case errors.As(err, &collision):
		return answer{status: http.StatusBadGateway, reason: reasonUpstreamError, msg: err.Error()}
	case errors.As(err, &intentErr):
		level.Error(g.logger).Log("msg", "create not sent: state file not writable", "op", op, "project", project, "err", intentErr.Err)
		return answer{status: http.StatusServiceUnavailable, reason: reasonStateError, msg: err.Error()}
	case errors.As(err, &stateErr):
		level.Error(g.logger).Log("msg", "operation not persisted", "op", op, "project", project, "id", stateErr.JobID, "err", stateErr.Err)
		// Not a rejection: the operation exists upstream and is followed
		// in memory.
		return answer{status: http.StatusInternalServerError, msg: stateErr.Error()}
	case errors.As(err, &throttled):
		setRetryAfter(w, throttled.Until.Sub(g.cfg.Now()))
		return answer{status: http.StatusTooManyRequests, reason: reasonRateLimited,
			msg: fmt.Sprintf("the Mintlify API asked us to wait until %s; request not sent", throttled.Until.UTC().Format(time.RFC3339))}
	case errors.As(err, &apiErr):
		status, msg := upstreamStatus(apiErr)
		if apiErr.RetryAfter > 0 && (status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable) {
			setRetryAfter(w, apiErr.RetryAfter)
		}
		reason := reasonUpstreamError
		if apiErr.StatusCode == http.StatusTooManyRequests {
			reason = reasonRateLimited
		}
		level.Warn(g.logger).Log("msg", "upstream error", "op", op, "project", project, "err", err)
		return answer{status: status, msg: msg, reason: reason}
	case errors.Is(err, context.DeadlineExceeded):
		level.Warn(g.logger).Log("msg", "upstream timeout", "op", op, "project", project, "err", err)
		return answer{status: http.StatusGatewayTimeout, reason: reasonUpstreamError, msg: "the Mintlify API did not answer in time"}
	default:
		level.Warn(g.logger).Log("msg", "upstream request failed", "op", op, "project", project, "err", err)
		return answer{status: http.StatusBadGateway, reason: reasonUpstreamError, msg: "the Mintlify API could not be reached or gave an unreadable answer"}
	}
}

// unknownAnswer is the answer to a request of unknown outcome of any kind
// (a create, a start of an op kind), ok false for another error: met again
// through its Idempotency-Key (409, nothing was sent), or sent and
// unanswered (unknownStatus, logged).
func (g *Gateway) unknownAnswer(project, op string, err error) (a answer, ok bool) {
	var intent string
	var cause error
	if u, ok := errors.AsType[*tracker.OutcomeUnknownError](err); ok {
		intent, cause = u.Intent.ID, u.Err
	} else if u, ok := errors.AsType[*tracker.StartOutcomeUnknownError](err); ok {
		intent, cause = u.Intent, u.Err
	} else {
		return answer{}, false
	}
	if cause == nil {
		// A retry with the key of a request whose outcome is unknown.
		return answer{status: unknownStatus(err, true), reason: reasonIdempotencyConflict, msg: err.Error() + "; nothing was sent"}, true
	}
	level.Warn(g.logger).Log("msg", "request of unknown outcome", "op", op, "project", project, "intent", intent, "err", cause)
	return answer{status: unknownStatus(err, false), reason: reasonUpstreamError, msg: err.Error()}, true
}

// upstreamStatus maps the API's error answer to the gateway's status and
// message (README, "Endpoints"). What is about the caller's request is
// passed on with the API's message; what is about the exporter itself (its
// key, or a request the API should never have refused) is a gateway error,
// 502, so that a caller never mistakes it for its own fault: 401 and 403
// from the gateway mean the caller's own credentials (basic auth).
func upstreamStatus(apiErr *apiclient.APIError) (int, string) {
	code := apiErr.StatusCode
	passed := func() (int, string) {
		if apiErr.Message != "" {
			return code, apiErr.Message
		}
		return code, fmt.Sprintf("the Mintlify API answered HTTP %d", code)
	}
	switch {
	case code == http.StatusUnauthorized || code == http.StatusForbidden || code == http.StatusProxyAuthRequired:
		return http.StatusBadGateway, fmt.Sprintf("the Mintlify API rejected the exporter's API key (HTTP %d); "+
			"this is not about your credentials: the exporter's operator must replace its key", code)
	case code == http.StatusBadRequest, code == http.StatusNotFound, code == http.StatusConflict, code == http.StatusGone,
		code == http.StatusRequestEntityTooLarge, code == http.StatusUnprocessableEntity, code == http.StatusTooManyRequests:
		// About the caller's request, or a limit: the caller can act on it.
		return passed()
	case code == http.StatusServiceUnavailable, code == http.StatusGatewayTimeout:
		// Temporary, and retryable as such.
		return passed()
	case code >= 500 && code <= 599:
		return http.StatusBadGateway, fmt.Sprintf("the Mintlify API failed (HTTP %d): %s", code, orDefault(apiErr.Message, "no message"))
	default:
		// 3xx, and 4xx that mean a request the exporter should not have
		// built (405, 406, 415, ...): the gateway's fault, not the caller's.
		return http.StatusBadGateway, fmt.Sprintf("the Mintlify API answered HTTP %d: %s", code, orDefault(apiErr.Message, "unexpected answer"))
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// dismissUnknown answers the DELETE of an operation of unknown outcome of
// any kind (what names its request): 204, 404 for an intent id that is
// none, 500 when the state could not be written.
func (g *Gateway) dismissUnknown(w http.ResponseWriter, r *http.Request, project, what string, dismiss func(project, id string) error) {
	err := dismiss(project, r.PathValue("intentId"))
	switch {
	case errors.Is(err, tracker.ErrNoSuchIntent):
		writeError(w, http.StatusNotFound, "no "+what+" of unknown outcome with this intent id")
	case err != nil:
		level.Error(g.logger).Log("msg", "dismissing a "+what+" of unknown outcome", "project", project, "err", err)
		writeError(w, http.StatusInternalServerError, err.Error())
	default:
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusNoContent)
	}
}

func setRetryAfter(w http.ResponseWriter, d time.Duration) {
	secs := int64(math.Ceil(d.Seconds()))
	if secs < 1 {
		secs = 1
	}
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

type clientKey struct{}

// Client is who sent a request another replica forwarded, as that replica
// saw it: its address and basic-auth user.
type Client struct {
	Addr, User string
}

// WithClient marks ctx as a forwarded request's, sent by c. Only a request
// whose forwarding replica was authenticated may carry it (package
// leader): a client cannot name itself.
func WithClient(ctx context.Context, c Client) context.Context {
	return context.WithValue(ctx, clientKey{}, c)
}

// ClientOf is the user and address of r's client: those the forwarding
// replica passed (WithClient), else r's own.
func ClientOf(r *http.Request) (user, addr string) {
	if c, ok := r.Context().Value(clientKey{}).(Client); ok {
		return c.User, c.Addr
	}
	user, _, _ = r.BasicAuth()
	return user, r.RemoteAddr
}

// WriteUnavailable answers 503 with a JSON error and a Retry-After of
// retryAfter seconds (at least 1): what a replica answers while no replica
// can run the gateway.
func WriteUnavailable(w http.ResponseWriter, msg string, retryAfter int) {
	w.Header().Set("Retry-After", strconv.Itoa(max(retryAfter, 1)))
	writeError(w, http.StatusServiceUnavailable, msg)
}

// WriteBadGateway answers 502 with a JSON error: a request forwarded to
// the replica running the gateway got no answer, so its outcome is
// unknown.
func WriteBadGateway(w http.ResponseWriter, msg string) {
	writeError(w, http.StatusBadGateway, msg)
}
