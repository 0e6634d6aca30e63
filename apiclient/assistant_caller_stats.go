package apiclient

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
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
	// Total is the API's own total; TotalSkipped: it was absent or none an
	// answer can mean (counted in Skipped), and is not to be exported.
	Total        int64
	TotalSkipped bool
	// Skipped counts the values that could not be read, by reason.
	Skipped Skips
}

// AssistantCallerStats reads the conversations of a date range by caller:
// one request. Every numeric field but total is a caller, so a caller the
// API adds is counted, not dropped; a key of another type is not a caller
// (the reference allows keys it does not name). A count no answer can mean
// is skipped and counted, as a row's is, and the answer stands.
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
	out := &CallerStats{ByCaller: make(map[string]int64, len(body)), TotalSkipped: true}
	for k, raw := range body {
		var n Count
		err := json.Unmarshal(raw, &n)
		null := string(raw) == "null"
		if err != nil || null {
			if k == "total" || slices.Contains(Callers, k) || (jsonKind(raw) == "number" && !null) {
				out.Skipped = out.Skipped.one(skipReason(err), 1) // null: malformed
			}
			continue
		}
		if k == "total" {
			out.Total, out.TotalSkipped = int64(n), false
			continue
		}
		out.ByCaller[k] = int64(n)
	}
	if _, ok := body["total"]; !ok {
		out.Skipped = out.Skipped.one(SkipMalformed, 1)
	}
	c.reportSkipped(EndpointAssistantCallerStats, projectID, out.Skipped)
	return out, nil
}
