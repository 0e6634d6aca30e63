package apiclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/mintlify-exporter/mintlify_exporter/internal/secrets"
)

// maxErrorBodyBytes bounds how much of an error response is kept: enough to
// show the upstream message, not enough to flood a log line.
const maxErrorBodyBytes = 512

// APIError is a non-2xx answer from the API.
type APIError struct {
	// Endpoint is the operation, one of the Endpoint* constants.
	Endpoint   string
	StatusCode int
	// Message is the upstream's own error text when its body is JSON with an
	// "error" or "message" string field; empty otherwise.
	Message string
	// Body is a bounded excerpt of the response body.
	Body string
	// RetryAfter is the delay the server asked for (429/503), or 0.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	detail := e.Message
	if detail == "" {
		detail = e.Body
	}
	if detail == "" {
		return fmt.Sprintf("mintlify API %s: HTTP %d", e.Endpoint, e.StatusCode)
	}
	return fmt.Sprintf("mintlify API %s: HTTP %d: %s", e.Endpoint, e.StatusCode, detail)
}

// ThrottledError means no request was sent because the API asked us to wait
// (Retry-After) and the wait would outlast the caller's deadline.
type ThrottledError struct {
	Endpoint string
	Until    time.Time
}

func (e *ThrottledError) Error() string {
	return fmt.Sprintf("mintlify API %s: rate limited by the API until %s; request not sent",
		e.Endpoint, e.Until.UTC().Format(time.RFC3339))
}

// ErrTooManyPages means an endpoint kept saying there is more past the page
// cap (an endless hasMore or cursor chain), so the result would be
// incomplete.
var ErrTooManyPages = errors.New("pagination did not end within the page cap")

// requestCap is what WithRequestCap allows a context.
type requestCap struct {
	max  int64
	sent atomic.Int64
}

type requestCapKey struct{}

// WithRequestCap returns ctx under which at most n analytics requests are
// sent, retries included (each spends quota): the next one fails unsent
// with ErrTooManyPages. The plan gives each walk a few times its planned
// cost, so that pages that never end spend a bounded share of the
// organization's budget.
func WithRequestCap(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, requestCapKey{}, &requestCap{max: int64(n)})
}

// takeRequest counts one analytics request against ctx's cap, if any.
func takeRequest(ctx context.Context, endpoint string) error {
	c, _ := ctx.Value(requestCapKey{}).(*requestCap)
	if c == nil || !isAnalytics(endpoint) || c.sent.Add(1) <= c.max {
		return nil
	}
	return fmt.Errorf("mintlify API %s: the walk's cap of %d requests is spent: %w", endpoint, c.max, ErrTooManyPages)
}

// StatusCode returns the HTTP status of an APIError anywhere in err's chain,
// or 0.
func StatusCode(err error) int {
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return apiErr.StatusCode
	}
	return 0
}

// newAPIError builds an APIError from a response body, redacting the key in
// case the upstream echoes the Authorization header back, whole or altered.
func newAPIError(endpoint string, status int, body []byte, retryAfter time.Duration, r *secrets.Redactor) *APIError {
	e := &APIError{Endpoint: endpoint, StatusCode: status, RetryAfter: retryAfter}
	var parsed struct {
		Error   any    `json:"error"`
		Message string `json:"message"`
		// Details are the analytics endpoints' AnalyticsErrorResponse
		// details: what exactly was refused (which parameter, why).
		Details []struct {
			Message string `json:"message"`
		} `json:"details"`
	}
	if json.Unmarshal(body, &parsed) == nil {
		switch v := parsed.Error.(type) {
		case string:
			e.Message = v
		case map[string]any:
			if m, ok := v["message"].(string); ok {
				e.Message = m
			}
		}
		if e.Message == "" {
			e.Message = parsed.Message
		}
		e.Message = withDetails(e.Message, parsed.Details)
	}
	// Redact before truncating: the other order would let a cut through the
	// key leave all but its last bytes in the text.
	e.Message = truncate(r.String(e.Message), maxErrorBodyBytes)
	e.Body = truncate(r.String(strings.TrimSpace(string(body))), maxErrorBodyBytes)
	return e
}

// withDetails joins the details' messages to the error text: "error:
// first; second". Empty messages are left out. The whole is bounded by
// newAPIError (maxErrorBodyBytes), after redaction.
func withDetails(msg string, details []struct {
	Message string `json:"message"`
}) string {
	var parts []string
	for _, d := range details {
		if m := strings.TrimSpace(d.Message); m != "" {
			parts = append(parts, m)
		}
	}
	if len(parts) == 0 {
		return msg
	}
	if msg == "" {
		return strings.Join(parts, "; ")
	}
	return msg + ": " + strings.Join(parts, "; ")
}

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
