package apiclient

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Test-only access to internals for the black-box tests in apiclient_test.

var ParseRetryAfter = parseRetryAfter

// OperationEndpoints are the endpoints beside the analytics ones (agent
// jobs, deployments, automations, static exports).
var OperationEndpoints = operationEndpoints

// Collectors returns the request counter and the duration histogram.
func (m *Metrics) Collectors() (*prometheus.CounterVec, *prometheus.HistogramVec) {
	return m.requests, m.duration
}

// Backoff returns the jittered wait before retry number attempt+1.
func (c *Client) Backoff(attempt int) time.Duration { return c.backoffFor(attempt) }
