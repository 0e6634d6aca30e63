package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
)

// Why a request was refused or failed (the reason label of a kind's
// refused requests).
const (
	ReasonBadRequest           = "bad_request"            // 400: malformed body or value
	ReasonTooLarge             = "too_large"              // 413: body over its limit
	ReasonUnsupportedMediaType = "unsupported_media_type" // 415: a body declared another type than JSON
	ReasonRateLimited          = "rate_limited"           // 429: a local limit, or the API's 429 / Retry-After
	ReasonUpstreamError        = "upstream_error"         // the API answered an error, or could not be reached
	ReasonIdempotencyConflict  = "idempotency_conflict"   // 409/422: Idempotency-Key in flight, of unknown outcome, or reused with another body
	ReasonStateError           = "state_error"            // 503: the intent could not be written; nothing sent
)

// Answer is the reply to a failed call: its status and message, and why
// (a Reason*; "" when the failure is not a refusal: the operation exists
// but was not saved).
type Answer struct {
	Status      int
	Msg, Reason string
}

// Write writes a as a JSON error.
func (a Answer) Write(w http.ResponseWriter) { WriteError(w, a.Status, a.Msg) }

// Fail answers a failed call op of project (Answer), and returns the
// answer for the kind's counters.
func (g *Gateway) Fail(w http.ResponseWriter, project, op string, err error) Answer {
	a := g.Answer(w, project, op, err)
	a.Write(w)
	return a
}

// Failed is Fail as AnswerTrack takes it.
func (g *Gateway) Failed(op string) func(w http.ResponseWriter, project string, err error) {
	return func(w http.ResponseWriter, project string, err error) { g.Fail(w, project, op, err) }
}

// Answer is the answer to a failed call op of project (logged), setting
// Retry-After on w where the client should wait; the caller writes it.
func (g *Gateway) Answer(w http.ResponseWriter, project, op string, err error) Answer {
	if a, ok := g.unknownAnswer(project, op, err); ok {
		return a
	}
	var (
		throttled *apiclient.ThrottledError
		apiErr    *apiclient.APIError
		stateErr  *engine.StateError
		intentErr *engine.IntentError
		limited   *LimitError
	)
	switch {
	case errors.As(err, &limited):
		SetRetryAfter(w, limited.Wait)
		return Answer{Status: http.StatusTooManyRequests, Reason: ReasonRateLimited, Msg: limited.Error()}
	case errors.Is(err, engine.ErrIdempotencyKeyReused):
		return Answer{Status: http.StatusUnprocessableEntity, Reason: ReasonIdempotencyConflict, Msg: err.Error() + "; nothing was sent"}
	case errors.Is(err, engine.ErrIdempotencyKeyInFlight):
		return Answer{Status: http.StatusConflict, Reason: ReasonIdempotencyConflict, Msg: err.Error() + "; nothing was sent"}
	case errors.Is(err, apiclient.ErrOtherProject):
		return Answer{Status: http.StatusConflict, Reason: ReasonUpstreamError, Msg: err.Error() + "; nothing is followed"}
	case errors.As(err, &intentErr):
		// The state that refused is named: a file, or the replicas' Redis.
		level.Error(g.logger).Log("msg", intentErr.What+" not sent: its intent could not be written to the state "+intentErr.Store, "op", op, "project", project, "err", intentErr.Err)
		return Answer{Status: http.StatusServiceUnavailable, Reason: ReasonStateError, Msg: err.Error()}
	case errors.As(err, &stateErr):
		level.Error(g.logger).Log("msg", "operation not persisted", "op", op, "project", project, "id", stateErr.ID, "err", stateErr.Err)
		// Not a refusal: the operation exists upstream and is followed
		// in memory.
		return Answer{Status: http.StatusInternalServerError, Msg: err.Error()}
	case errors.As(err, &throttled):
		SetRetryAfter(w, throttled.Until.Sub(g.cfg.Now()))
		return Answer{Status: http.StatusTooManyRequests, Reason: ReasonRateLimited,
			Msg: fmt.Sprintf("the Mintlify API asked us to wait until %s; request not sent", throttled.Until.UTC().Format(time.RFC3339))}
	case errors.As(err, &apiErr):
		return g.apiAnswer(w, project, op, apiErr)
	}
	return g.otherAnswer(project, op, err)
}

// apiAnswer answers the API's error answer to op.
func (g *Gateway) apiAnswer(w http.ResponseWriter, project, op string, apiErr *apiclient.APIError) Answer {
	status, msg := upstreamStatus(apiErr)
	if apiErr.RetryAfter > 0 && (status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable) {
		SetRetryAfter(w, apiErr.RetryAfter)
	}
	reason := ReasonUpstreamError
	if apiErr.StatusCode == http.StatusTooManyRequests {
		reason = ReasonRateLimited
	}
	level.Warn(g.logger).Log("msg", "upstream error", "op", op, "project", project, "err", apiErr)
	return Answer{Status: status, Msg: msg, Reason: reason}
}

// otherAnswer answers the errors that are neither the API's nor ours.
func (g *Gateway) otherAnswer(project, op string, err error) Answer {
	var badID *engine.BadIDError
	var collision *engine.CollisionError
	switch {
	case errors.As(err, &badID):
		return Answer{Status: http.StatusBadRequest, Reason: ReasonBadRequest, Msg: err.Error() + "; nothing was sent"}
	case errors.As(err, &collision):
		return Answer{Status: http.StatusBadGateway, Reason: ReasonUpstreamError, Msg: err.Error()}
	case errors.Is(err, context.DeadlineExceeded):
		level.Warn(g.logger).Log("msg", "upstream timeout", "op", op, "project", project, "err", err)
		return Answer{Status: http.StatusGatewayTimeout, Reason: ReasonUpstreamError, Msg: "the Mintlify API did not answer in time"}
	}
	level.Warn(g.logger).Log("msg", "upstream request failed", "op", op, "project", project, "err", err)
	return Answer{Status: http.StatusBadGateway, Reason: ReasonUpstreamError, Msg: "the Mintlify API could not be reached or gave an unreadable answer"}
}

// unknownAnswer is the answer to a start of unknown outcome (ok false for
// another error): met again through its Idempotency-Key (409, nothing
// was sent), or sent and unanswered (UnknownStatus, logged).
func (g *Gateway) unknownAnswer(project, op string, err error) (Answer, bool) {
	u, ok := errors.AsType[*engine.OutcomeUnknownError](err)
	if !ok {
		return Answer{}, false
	}
	if u.Err == nil {
		// A retry with the key of a request whose outcome is unknown.
		return Answer{Status: UnknownStatus(err, true), Reason: ReasonIdempotencyConflict, Msg: err.Error() + "; nothing was sent"}, true
	}
	level.Warn(g.logger).Log("msg", "request of unknown outcome", "op", op, "project", project, "intent", u.Intent, "err", u.Err)
	return Answer{Status: UnknownStatus(err, false), Reason: ReasonUpstreamError, Msg: err.Error()}, true
}

// UnknownStatus is the status of the answer to a request of any kind
// whose outcome is unknown: 409 when a retry met it again through its
// Idempotency-Key (nothing was sent), 504 when the API did not answer in
// time, 502 otherwise (the request left, the answer did not come back).
func UnknownStatus(err error, metAgain bool) int {
	switch {
	case metAgain:
		return http.StatusConflict
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	}
	return http.StatusBadGateway
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
		return http.StatusBadGateway, fmt.Sprintf("the Mintlify API failed (HTTP %d): %s", code, OrDefault(apiErr.Message, "no message"))
	default:
		// 3xx, and 4xx that mean a request the exporter should not have
		// built (405, 406, 415, ...): the gateway's fault, not the caller's.
		return http.StatusBadGateway, fmt.Sprintf("the Mintlify API answered HTTP %d: %s", code, OrDefault(apiErr.Message, "unexpected answer"))
	}
}

// OrDefault is s, or def when s is empty.
func OrDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// WriteStarted answers a request of any kind that started (or replayed)
// an operation: the API's status when it gave one (code), else def; a
// replay says so (Idempotent-Replayed), so that a client can tell a
// retried request from a new one.
func WriteStarted(w http.ResponseWriter, code, def int, replayed bool, body any) {
	if code < 200 || code > 299 {
		code = def
	}
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	WriteJSON(w, code, body)
}

// SetRetryAfter sets Retry-After to d in whole seconds (at least 1).
func SetRetryAfter(w http.ResponseWriter, d time.Duration) {
	w.Header().Set("Retry-After", strconv.FormatInt(max(int64(math.Ceil(d.Seconds())), 1), 10))
}

// WriteJSON answers v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// WriteError answers {"error": msg} with status.
func WriteError(w http.ResponseWriter, status int, msg string) {
	WriteJSON(w, status, map[string]string{"error": msg})
}

// WriteUnavailable answers 503 with a JSON error and a Retry-After of
// retryAfter seconds (at least 1): what a replica answers while no replica
// can run the gateway.
func WriteUnavailable(w http.ResponseWriter, msg string, retryAfter int) {
	w.Header().Set("Retry-After", strconv.Itoa(max(retryAfter, 1)))
	WriteError(w, http.StatusServiceUnavailable, msg)
}

// WriteBadGateway answers 502 with a JSON error: a request forwarded to
// the replica running the gateway got no answer, so its outcome is
// unknown.
func WriteBadGateway(w http.ResponseWriter, msg string) {
	WriteError(w, http.StatusBadGateway, msg)
}

// Allow answers 405 in JSON for a known path whose method is not one of
// allow (the mux's own 405 is not JSON).
func (g *Gateway) Allow(path, allow string) {
	g.mux.HandleFunc(path, func(w http.ResponseWriter, _ *http.Request) { NotAllowed(w, allow) })
}

// Fallback answers the paths of pattern (its {a} and {b}) that no route of
// their method took, as allow names their methods (a kind's paths that the
// mux cannot tell apart): 405 with them, 404 for none.
func (g *Gateway) Fallback(pattern string, allow func(a, b string) string) {
	g.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) { NotAllowed(w, allow(r.PathValue("a"), r.PathValue("b"))) })
}

// NotAllowed answers 405 in JSON naming the methods allow (404 for "").
func NotAllowed(w http.ResponseWriter, allow string) {
	if allow == "" {
		WriteError(w, http.StatusNotFound, "not found")
		return
	}
	w.Header().Set("Allow", allow)
	WriteError(w, http.StatusMethodNotAllowed, "method not allowed")
}
