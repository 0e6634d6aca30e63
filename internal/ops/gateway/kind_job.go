package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/tracker"
)

// The agent jobs' routes: create, follow-up message, read, list, track,
// and their creates of unknown outcome. What every kind's routes share
// (limits, Idempotency-Key, lists, the one rule for ids and projects, the
// answers) is in gateway.go, lists.go and ids.go.

// create handles POST .../job.
func (g *Gateway) create(w http.ResponseWriter, r *http.Request, project string) {
	sub, ok := g.intake(w, r, func(reason string, status int, msg string) { g.reject(w, project, reason, status, msg) })
	if !ok {
		return
	}
	key, prompt, at := sub.key, sub.prompt, sub.at
	ctx, cancel := g.upstreamContext(r)
	defer cancel()
	c, err := g.tracker.Create(ctx, tracker.CreateRequest{Project: project, Prompt: prompt, IdempotencyKey: key,
		Admit: sub.admit(g.limiter, project)})
	admitted := sub.admitted
	if err != nil {
		var (
			throttled *apiclient.ThrottledError
			intentErr *tracker.IntentError
			limited   *limitError
		)
		if admitted && (errors.As(err, &throttled) || errors.As(err, &intentErr)) {
			g.limiter.release(project, at) // nothing was sent
		}
		if errors.As(err, &limited) {
			setRetryAfter(w, limited.wait)
			g.reject(w, project, reasonRateLimited, http.StatusTooManyRequests,
				fmt.Sprintf("create limit reached: at most %d jobs per %s per project; retry in %s",
					g.cfg.CreateLimitPerHour, createWindow, limited.wait.Round(time.Second)))
			return
		}
		a := g.upstreamAnswer(w, project, "create", err)
		if a.reason == "" {
			writeError(w, a.status, a.msg)
		} else {
			g.reject(w, project, a.reason, a.status, a.msg)
		}
		return
	}
	g.audit(r, "agent job submitted", project, c.Job.ID, key, "replayed", c.Replayed, "prompt_bytes", len(prompt))
	writeStarted(w, c.Status, http.StatusOK, c.Replayed, c.Job)
}

// message handles POST .../job/{id}/message: a follow-up to a job, under
// the same checks as a create and its own local limit.
func (g *Gateway) message(w http.ResponseWriter, r *http.Request, project string) {
	id := r.PathValue("id")
	reject := func(reason string, status int, msg string) {
		g.msgRejected.WithLabelValues(project, reason).Inc()
		writeError(w, status, msg)
	}
	sub, ok := g.intake(w, r, reject)
	if !ok {
		return
	}
	key, prompt, at := sub.key, sub.prompt, sub.at
	ctx, cancel := g.upstreamContext(r)
	defer cancel()
	m, err := g.tracker.Message(ctx, tracker.MessageRequest{Project: project, JobID: id, Prompt: prompt, IdempotencyKey: key,
		Admit: sub.admit(g.messages, project)})
	admitted := sub.admitted
	if err != nil {
		var (
			notSent   *tracker.NotSentError
			limited   *limitError
			apiErr    *apiclient.APIError
			throttled *apiclient.ThrottledError
			unknown   *tracker.MessageOutcomeUnknownError
		)
		if admitted && (errors.As(err, &notSent) || errors.As(err, &throttled)) {
			g.messages.release(project, at) // nothing was sent
		}
		switch {
		case errors.As(err, &limited):
			setRetryAfter(w, limited.wait)
			reject(reasonRateLimited, http.StatusTooManyRequests,
				fmt.Sprintf("message limit reached: at most %d follow-up messages per %s per project; retry in %s",
					g.cfg.MessageLimitPerHour, createWindow, limited.wait.Round(time.Second)))
		case errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusNotFound:
			reject(reasonJobNotFound, http.StatusNotFound, "job not found upstream; nothing was sent")
		case errors.As(err, &unknown) && unknown.Err == nil:
			// A retry with the key of a message whose outcome is unknown.
			reject(reasonIdempotencyConflict, unknownStatus(err, true), err.Error()+"; nothing was sent")
		case errors.As(err, &unknown):
			level.Warn(g.logger).Log("msg", "follow-up message of unknown outcome", "project", project, "job", id, "err", unknown.Err)
			reject(reasonUpstreamError, unknownStatus(err, false), err.Error())
		default:
			a := g.upstreamAnswer(w, project, "message", err)
			if a.reason == "" {
				writeError(w, a.status, a.msg)
			} else {
				reject(a.reason, a.status, a.msg)
			}
		}
		return
	}
	g.audit(r, "agent job follow-up message sent", project, id, key, "turn", m.Job.Tracking.Turn, "replayed", m.Replayed, "prompt_bytes", len(prompt))
	writeStarted(w, m.Status, http.StatusOK, m.Replayed, m.Job)
}

// readPrompt reads and validates the body; bad is nil when it is good.
func (g *Gateway) readPrompt(w http.ResponseWriter, r *http.Request) (prompt string, bad *badRequest) {
	tooLarge := &badRequest{status: http.StatusRequestEntityTooLarge, reason: reasonTooLarge,
		msg: fmt.Sprintf("request too large: the body may be at most %d bytes", g.cfg.MaxPromptBytes)}
	body := http.MaxBytesReader(w, r.Body, g.cfg.MaxPromptBytes)
	dec := json.NewDecoder(body)
	var req struct {
		Prompt json.RawMessage `json:"prompt"`
	}
	if err := dec.Decode(&req); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return "", tooLarge
		}
		if errors.Is(err, io.EOF) {
			return "", badBody("request body is empty: want {\"prompt\": \"...\"}")
		}
		if _, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			return "", badBody("expected a JSON object: want {\"prompt\": \"...\"}")
		}
		return "", badBody("malformed JSON: want {\"prompt\": \"...\"}")
	}
	// Exactly one JSON value.
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return "", tooLarge
		}
		return "", badBody("malformed JSON: unexpected data after the request object")
	}
	raw := strings.TrimSpace(string(req.Prompt))
	if raw == "" {
		return "", badBody("prompt is required")
	}
	if raw == "null" || json.Unmarshal(req.Prompt, &prompt) != nil {
		return "", badBody("prompt must be a string")
	}
	if strings.TrimSpace(prompt) == "" {
		return "", badBody("prompt must not be empty")
	}
	return prompt, nil
}

// get handles GET .../job/{id}.
func (g *Gateway) get(w http.ResponseWriter, r *http.Request, project string) {
	v, ok := g.tracker.Job(project, r.PathValue("id"))
	serveOne(w, v, ok, "job not tracked by this exporter (use POST .../job/{id}/track to track a job created elsewhere)")
}

// JobList is the body of GET .../jobs.
type JobList struct {
	Jobs []tracker.JobView `json:"jobs"`
}

// list handles GET .../jobs?status=&limit=.
func (g *Gateway) list(w http.ResponseWriter, r *http.Request, project string) {
	serveList(w, r, "job", listStatuses, func(status string) []tracker.JobView { return g.tracker.Jobs(project, status) },
		func(l []tracker.JobView) any { return JobList{Jobs: l} })
}

// track handles POST .../job/{id}/track. The body is ignored, but must be
// declared JSON (see jsonContentType). Failures are answered but not
// counted as rejected submissions.
func (g *Gateway) track(w http.ResponseWriter, r *http.Request, project string) {
	if !jsonContentType(r) {
		writeError(w, http.StatusUnsupportedMediaType, contentTypeMsg)
		return
	}
	ctx, cancel := g.upstreamContext(r)
	defer cancel()
	intent, id := r.URL.Query().Get("intent"), r.PathValue("id")
	v, result, err := followOrSettle(intent,
		func() (tracker.JobView, tracker.TrackResult, error) {
			return g.tracker.ResolveIntent(ctx, project, intent, id)
		},
		func() (tracker.JobView, tracker.TrackResult, error) { return g.tracker.Track(ctx, project, id) })
	answerTrack(w, tracked{what: "job", start: "create", unknown: "unknown-creates", failed: g.answerFailed("track")}, project, v, result, err,
		func() { g.audit(r, "agent job tracked", project, v.ID, "", "intent", intent) })
}

// UnknownCreateList is the body of GET .../unknown-creates.
type UnknownCreateList struct {
	UnknownCreates []tracker.UnknownCreate `json:"unknownCreates"`
}
