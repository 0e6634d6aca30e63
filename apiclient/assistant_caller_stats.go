package apiclient

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
)

// EndpointAssistantCallerStats is /assistant/caller-stats.
var EndpointAssistantCallerStats = analyticsEndpoint("assistant_caller_stats")

// Callers the API documents for /assistant/caller-stats. Others may come:
// callers pass them through as they are.
const (
	CallerWeb   = "web"
	CallerAPI   = "api"
	CallerOther = "other"
)

// Callers lists the documented callers.
var Callers = []string{CallerWeb, CallerAPI, CallerOther}

// CallerStats are assistant conversations by where they came from.
type CallerStats struct {
	// ByCaller holds every caller the API named (web, api, other, and any
	// it adds later), never "total".
	ByCaller map[string]int64
	// Total is the API's own total.
	Total int64
}

// AssistantCallerStats reads the conversations of a date range by caller:
// one request. Every numeric field but total is a caller, so a caller the
// API adds is counted, not dropped.
func (c *Client) AssistantCallerStats(ctx context.Context, projectID string, r DateRange) (*CallerStats, error) {
	const what = "assistant caller stats"
	path, err := analyticsPath(what, projectID, "/assistant/caller-stats")
	if err != nil {
		return nil, err
	}
	var body map[string]json.RawMessage
	if err := c.do(ctx, request{endpoint: EndpointAssistantCallerStats, method: "GET", path: path, query: r.values(), idempotent: true}, &body); err != nil {
		return nil, fmt.Errorf("%s for project %s: %w", what, projectID, err)
	}
	out := &CallerStats{ByCaller: make(map[string]int64, len(body))}
	hasTotal := false
	for k, raw := range body {
		var c Count
		if err := json.Unmarshal(raw, &c); err != nil || string(raw) == "null" {
			// Not a count (a nested object, a string): not a caller.
			continue
		}
		n := int64(c)
		if n < 0 {
			return nil, fmt.Errorf("%s for project %s: negative count for %s (%d)", what, projectID, strconv.Quote(bounded.Label(k)), n)
		}
		if k == "total" {
			out.Total, hasTotal = n, true
			continue
		}
		out.ByCaller[k] = n
	}
	if !hasTotal {
		return nil, fmt.Errorf("%s for project %s: the answer has no total", what, projectID)
	}
	return out, nil
}
