// Package gateway serves the agent job submission API: the Mintlify API's
// own job paths and shapes under /api, so that a client only swaps the base
// URL and drops the key. It validates input, enforces the per-project create
// limit locally and maps upstream errors; creating, tracking and persisting
// jobs is the Backend's business (internal/agent).
//
// The gateway has no authentication of its own: it is served behind the
// exporter-toolkit web config (--web.config.file), like /metrics.
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/collector"
)

// Tracking is the exporter's own information about a tracked job, added to
// the job object under "tracking" (clients of the API ignore unknown
// fields).
type Tracking struct {
	// Origin is "gateway" (created through the gateway) or "track" (created
	// elsewhere, tracked through the track endpoint).
	Origin    string    `json:"origin"`
	TrackedAt time.Time `json:"trackedAt"`
	// LastPolledAt is the last successful poll in this process.
	LastPolledAt *time.Time `json:"lastPolledAt,omitempty"`
	// TerminalAt is when the job was first seen in a terminal status (or
	// declared lost).
	TerminalAt *time.Time `json:"terminalAt,omitempty"`
	// LastUpstreamStatus is the last status the API reported, set when the
	// job's status is the exporter's own "lost".
	LastUpstreamStatus string `json:"lastUpstreamStatus,omitempty"`
	// LastError is the last poll error, cleared by a successful poll.
	LastError string `json:"lastError,omitempty"`
	// NextCheckAt is when the job will be polled next (for a completed job:
	// its next archive re-check); absent when it is due at the next poll
	// round or no longer polled.
	NextCheckAt *time.Time `json:"nextCheckAt,omitempty"`
}

// JobView is a tracked job as the gateway shows it: the API's job object
// (same field names) plus "tracking". Its status is the API's latest, or
// "lost" when the API no longer knows the job.
type JobView struct {
	apiclient.Job
	Tracking Tracking `json:"tracking"`
}

// StateError means a job was created upstream but could not be written to
// the state file, so the gateway cannot promise it survives a restart.
type StateError struct {
	JobID string
	Err   error
}

func (e *StateError) Error() string {
	return fmt.Sprintf("job %s was created upstream but could not be saved to the state file: %v", e.JobID, e.Err)
}

func (e *StateError) Unwrap() error { return e.Err }

// Backend creates, tracks and lists jobs.
type Backend interface {
	// Create creates a job upstream and durably records it as tracked
	// before returning. It returns the upstream job and the HTTP status of
	// the upstream answer.
	Create(ctx context.Context, project, prompt string) (*apiclient.Job, int, error)
	// Job returns a tracked job.
	Job(project, id string) (JobView, bool)
	// Jobs returns the project's tracked jobs, newest first, optionally only
	// those whose (view) status equals status.
	Jobs(project, status string) []JobView
	// Track starts tracking a job created elsewhere after reading it once
	// upstream. created is false when it was already tracked.
	Track(ctx context.Context, project, id string) (view JobView, created bool, err error)
}

// Options configure a Gateway.
type Options struct {
	// Projects are the only accepted project ids.
	Projects []string
	// MaxPromptBytes bounds the request body (default 64 KiB), and so the
	// prompt in it: one limit that a client can check before sending.
	MaxPromptBytes int64
	// CreateLimit is the number of creates per project per CreateWindow
	// (defaults 100 per hour, the API's own limit); negative disables it.
	CreateLimit  int
	CreateWindow time.Duration
	// RecentCreates seeds the limiter with creates made before a restart.
	RecentCreates map[string][]time.Time
	// UpstreamTimeout bounds one create or track call upstream (default
	// 60s). The call is detached from the client's connection, so a client
	// that hangs up does not leave a created but untracked job behind.
	UpstreamTimeout time.Duration
	// Rejected is called for every refused submission of a configured
	// project with a collector.Reject* reason. May be nil.
	Rejected func(project, reason string)
	Now      func() time.Time
	Logger   log.Logger
}

// Gateway is the HTTP handler.
type Gateway struct {
	backend  Backend
	opts     Options
	projects map[string]bool
	limiter  *limiter
	mux      *http.ServeMux
}

// DefaultMaxPromptBytes is --agent.max-prompt-bytes' default.
const DefaultMaxPromptBytes = 64 << 10

// New returns the gateway.
func New(b Backend, opts Options) *Gateway {
	if opts.MaxPromptBytes <= 0 {
		opts.MaxPromptBytes = DefaultMaxPromptBytes
	}
	if opts.CreateLimit == 0 {
		opts.CreateLimit = 100
	}
	if opts.CreateWindow <= 0 {
		opts.CreateWindow = time.Hour
	}
	if opts.UpstreamTimeout <= 0 {
		opts.UpstreamTimeout = 60 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = log.NewNopLogger()
	}
	if opts.Rejected == nil {
		opts.Rejected = func(string, string) {}
	}
	g := &Gateway{
		backend:  b,
		opts:     opts,
		projects: map[string]bool{},
		limiter:  newLimiter(opts.CreateLimit, opts.CreateWindow),
		mux:      http.NewServeMux(),
	}
	now := opts.Now()
	for _, p := range opts.Projects {
		g.projects[p] = true
	}
	for p, ts := range opts.RecentCreates {
		g.limiter.seed(p, ts, now)
	}
	const base = "/api/v2/agent/{projectId}"
	g.handle("POST "+base+"/job", g.create)
	g.handle("GET "+base+"/job/{id}", g.get)
	g.handle("GET "+base+"/jobs", g.list)
	g.handle("POST "+base+"/job/{id}/track", g.track)
	// Method-less fallbacks answer 405 in JSON; everything else 404 in JSON.
	g.mux.HandleFunc(base+"/job", methodNotAllowed("POST"))
	g.mux.HandleFunc(base+"/job/{id}", methodNotAllowed("GET, HEAD"))
	g.mux.HandleFunc(base+"/jobs", methodNotAllowed("GET, HEAD"))
	g.mux.HandleFunc(base+"/job/{id}/track", methodNotAllowed("POST"))
	g.mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusNotFound, "not found")
	})
	return g
}

func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) { g.mux.ServeHTTP(w, r) }

// handle registers h behind the project check.
func (g *Gateway) handle(pattern string, h func(http.ResponseWriter, *http.Request, string)) {
	g.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		project := r.PathValue("projectId")
		if !g.projects[project] {
			writeError(w, http.StatusNotFound, "project not found: it is not configured in this exporter (--mintlify.project)")
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

func (g *Gateway) reject(w http.ResponseWriter, project, reason string, status int, msg string) {
	g.opts.Rejected(project, reason)
	writeError(w, status, msg)
}

// create handles POST .../job.
func (g *Gateway) create(w http.ResponseWriter, r *http.Request, project string) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		g.reject(w, project, collector.RejectUnsupportedMediaType, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
		return
	}
	prompt, status, msg := g.readPrompt(w, r)
	if status != 0 {
		reason := collector.RejectBadRequest
		if status == http.StatusRequestEntityTooLarge {
			reason = collector.RejectTooLarge
		}
		g.reject(w, project, reason, status, msg)
		return
	}
	at := g.opts.Now()
	ok, wait := g.limiter.reserve(project, at)
	if !ok {
		setRetryAfter(w, wait)
		g.reject(w, project, collector.RejectRateLimited, http.StatusTooManyRequests,
			fmt.Sprintf("create limit reached: at most %d jobs per %s per project; retry in %s",
				g.opts.CreateLimit, g.opts.CreateWindow, wait.Round(time.Second)))
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), g.opts.UpstreamTimeout)
	defer cancel()
	job, upstreamStatus, err := g.backend.Create(ctx, project, prompt)
	if err != nil {
		var throttled *apiclient.ThrottledError
		if errors.As(err, &throttled) {
			g.limiter.release(project, at) // nothing was sent
		}
		g.upstreamError(w, project, "create", err, true)
		return
	}
	if upstreamStatus < 200 || upstreamStatus > 299 {
		upstreamStatus = http.StatusOK
	}
	writeJSON(w, upstreamStatus, job)
}

// readPrompt reads and validates the body. status is 0 when it is good.
func (g *Gateway) readPrompt(w http.ResponseWriter, r *http.Request) (prompt string, status int, msg string) {
	tooLarge := fmt.Sprintf("request too large: the body may be at most %d bytes", g.opts.MaxPromptBytes)
	body := http.MaxBytesReader(w, r.Body, g.opts.MaxPromptBytes)
	dec := json.NewDecoder(body)
	var req struct {
		Prompt json.RawMessage `json:"prompt"`
	}
	if err := dec.Decode(&req); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return "", http.StatusRequestEntityTooLarge, tooLarge
		}
		if errors.Is(err, io.EOF) {
			return "", http.StatusBadRequest, "request body is empty: want {\"prompt\": \"...\"}"
		}
		return "", http.StatusBadRequest, "malformed JSON: want {\"prompt\": \"...\"}"
	}
	// Exactly one JSON value.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return "", http.StatusRequestEntityTooLarge, tooLarge
		}
		return "", http.StatusBadRequest, "malformed JSON: unexpected data after the request object"
	}
	raw := strings.TrimSpace(string(req.Prompt))
	if raw == "" {
		return "", http.StatusBadRequest, "prompt is required"
	}
	if raw == "null" || json.Unmarshal(req.Prompt, &prompt) != nil {
		return "", http.StatusBadRequest, "prompt must be a string"
	}
	if strings.TrimSpace(prompt) == "" {
		return "", http.StatusBadRequest, "prompt must not be empty"
	}
	return prompt, 0, ""
}

// upstreamError answers for a failed create or track call.
func (g *Gateway) upstreamError(w http.ResponseWriter, project, op string, err error, count bool) {
	reject := func(reason string, status int, msg string) {
		if count {
			g.reject(w, project, reason, status, msg)
		} else {
			writeError(w, status, msg)
		}
	}
	var (
		throttled *apiclient.ThrottledError
		apiErr    *apiclient.APIError
		stateErr  *StateError
	)
	switch {
	case errors.As(err, &stateErr):
		level.Error(g.opts.Logger).Log("msg", "job not persisted", "op", op, "project", project, "job", stateErr.JobID, "err", stateErr.Err)
		// Not a rejection: the job exists upstream and is tracked in memory.
		writeError(w, http.StatusInternalServerError, stateErr.Error())
	case errors.As(err, &throttled):
		wait := time.Until(throttled.Until)
		setRetryAfter(w, wait)
		reject(collector.RejectRateLimited, http.StatusTooManyRequests,
			fmt.Sprintf("the Mintlify API asked us to wait until %s; request not sent", throttled.Until.UTC().Format(time.RFC3339)))
	case errors.As(err, &apiErr):
		status := apiErr.StatusCode
		if status < 400 || status > 599 {
			status = http.StatusBadGateway
		}
		msg := apiErr.Message
		if msg == "" {
			msg = fmt.Sprintf("the Mintlify API answered HTTP %d", apiErr.StatusCode)
		}
		if apiErr.RetryAfter > 0 {
			setRetryAfter(w, apiErr.RetryAfter)
		}
		reason := collector.RejectUpstreamError
		if apiErr.StatusCode == http.StatusTooManyRequests {
			reason = collector.RejectRateLimited
		}
		level.Warn(g.opts.Logger).Log("msg", "upstream error", "op", op, "project", project, "err", err)
		reject(reason, status, msg)
	case errors.Is(err, context.DeadlineExceeded):
		level.Warn(g.opts.Logger).Log("msg", "upstream timeout", "op", op, "project", project, "err", err)
		reject(collector.RejectUpstreamError, http.StatusGatewayTimeout, "the Mintlify API did not answer in time")
	default:
		level.Warn(g.opts.Logger).Log("msg", "upstream request failed", "op", op, "project", project, "err", err)
		reject(collector.RejectUpstreamError, http.StatusBadGateway, "the Mintlify API could not be reached or gave an unreadable answer")
	}
}

// get handles GET .../job/{id}.
func (g *Gateway) get(w http.ResponseWriter, r *http.Request, project string) {
	v, ok := g.backend.Job(project, r.PathValue("id"))
	if !ok {
		writeError(w, http.StatusNotFound, "job not tracked by this exporter (use POST .../job/{id}/track to track a job created elsewhere)")
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// JobList is the body of GET .../jobs.
type JobList struct {
	Jobs []JobView `json:"jobs"`
}

// list handles GET .../jobs?status=&limit=.
func (g *Gateway) list(w http.ResponseWriter, r *http.Request, project string) {
	q := r.URL.Query()
	limit := -1
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, "limit must be a positive integer")
			return
		}
		limit = n
	}
	jobs := g.backend.Jobs(project, q.Get("status"))
	if limit >= 0 && len(jobs) > limit {
		jobs = jobs[:limit]
	}
	if jobs == nil {
		jobs = []JobView{}
	}
	writeJSON(w, http.StatusOK, JobList{Jobs: jobs})
}

// track handles POST .../job/{id}/track. The body is ignored.
func (g *Gateway) track(w http.ResponseWriter, r *http.Request, project string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), g.opts.UpstreamTimeout)
	defer cancel()
	v, created, err := g.backend.Track(ctx, project, r.PathValue("id"))
	if err != nil {
		var apiErr *apiclient.APIError
		if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusNotFound {
			writeError(w, http.StatusNotFound, "job not found upstream")
			return
		}
		g.upstreamError(w, project, "track", err, false)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, v)
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
