package apiclient

import (
	"context"
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

// PrecreatedCodes are the codes whose request series exist at 0 for every
// endpoint before any request.
var PrecreatedCodes = precreatedCodes

// AssistantPage fetches one page of turns; cursor "" is the first.
func (c *Client) AssistantPage(ctx context.Context, projectID string, r DateRange, limit int, cursor string) ([]Turn, error) {
	page, err := c.assistantPage(ctx, projectID, r, limit, cursor)
	return page.items, err
}

// FeedbackPage fetches one page of feedback items; cursor "" is the first.
func (c *Client) FeedbackPage(ctx context.Context, projectID string, r DateRange, limit int, cursor string) ([]FeedbackItem, error) {
	page, err := c.feedbackPage(ctx, projectID, r, limit, cursor)
	return page.items, err
}

// SearchesPage fetches one page of searches; cursor "" is the first.
func (c *Client) SearchesPage(ctx context.Context, projectID string, r DateRange, limit int, cursor string) ([]SearchQuery, error) {
	page, err := c.searchesPage(ctx, projectID, r, limit, cursor)
	if err != nil {
		return nil, err
	}
	return page.Searches.rows, nil
}

// Backoff returns the jittered wait before retry number attempt+1.
func (c *Client) Backoff(attempt int) time.Duration { return c.backoffFor(attempt) }
