package gateway

import "github.com/prometheus/client_golang/prometheus"

// Submit rejection reasons (mintlify_agent_job_submit_rejected_total).
const (
	reasonBadRequest           = "bad_request"            // 400: malformed JSON, missing/empty/non-string prompt
	reasonTooLarge             = "too_large"              // 413: body over --agent.max-prompt-bytes
	reasonUnsupportedMediaType = "unsupported_media_type" // 415: Content-Type is not application/json
	reasonRateLimited          = "rate_limited"           // 429: local create limit, or the API's 429 / Retry-After
	reasonUpstreamError        = "upstream_error"         // the API answered an error, or could not be reached
	reasonIdempotencyConflict  = "idempotency_conflict"   // 409/422: Idempotency-Key in flight, of unknown outcome, or reused with another body
	reasonStateError           = "state_error"            // 503: the create intent could not be written; nothing sent
	reasonJobNotFound          = "job_not_found"          // 404: a follow-up to a job the API does not know (messages only)
)

// rejectReasons lists every reason; each is pre-created at 0.
var rejectReasons = []string{reasonBadRequest, reasonTooLarge, reasonUnsupportedMediaType, reasonRateLimited, reasonUpstreamError,
	reasonIdempotencyConflict, reasonStateError}

// newRejected is mintlify_agent_job_submit_rejected_total with every
// project and reason at 0. Only configured projects become label values:
// other project names are arbitrary client input.
func newRejected(projects []string) *prometheus.CounterVec {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mintlify_agent_job_submit_rejected_total",
		Help: "Job submissions the gateway refused, by project and reason.",
	}, []string{"project", "reason"})
	for _, p := range projects {
		for _, r := range rejectReasons {
			v.WithLabelValues(p, r)
		}
	}
	return v
}

// messageRejectReasons are the reasons of refused follow-up messages: those
// of creates, and job_not_found.
var messageRejectReasons = append(append([]string(nil), rejectReasons...), reasonJobNotFound)

// newMessageRejected is mintlify_agent_job_message_rejected_total with
// every project and reason at 0.
func newMessageRejected(projects []string) *prometheus.CounterVec {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mintlify_agent_job_message_rejected_total",
		Help: "Follow-up messages the gateway refused, by project and reason.",
	}, []string{"project", "reason"})
	for _, p := range projects {
		for _, r := range messageRejectReasons {
			v.WithLabelValues(p, r)
		}
	}
	return v
}
