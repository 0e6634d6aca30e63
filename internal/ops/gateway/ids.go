package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/tracker"
)

// idParams are the path and query parameters of every kind's routes that
// carry an id: each is checked (bounded.CheckID) before a handler runs, so
// no route stores, logs, answers or sends an id of 10,000 characters, or
// one with a NUL or a newline.
var idParams = []struct{ name, what string }{
	{"id", "job id"},
	{"statusId", "status id"},
	{"jobId", "job id"},
	{"intentId", "intent id"},
	{"jobId", "job id"},
	{"workflowSchemaId", "automation id"},
}

// badIDs answers 400 and reports true when a path value or the ?intent=
// of r is not an id any operation can have.
func badIDs(w http.ResponseWriter, r *http.Request) bool {
	for _, p := range idParams {
		if v := r.PathValue(p.name); v != "" {
			if err := bounded.CheckID(p.what, v); err != nil {
				writeError(w, http.StatusBadRequest, err.Error())
				return true
			}
		}
	}
	if r.URL.Query().Has("intent") {
		if err := bounded.CheckID("intent id", r.URL.Query().Get("intent")); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return true
		}
	}
	return false
}

// kindRoute are the routes of one kind of operation that the engine's
// common parts use: where an operation is tracked (with ?intent=, how an
// outcome unknown is settled) and where its unknown outcomes are listed.
type kindRoute struct {
	track   func(project, id string) string
	unknown func(project string) string
}

// kindRoutes has an entry for every tracker.Kinds() (TestEveryKindIsWhole).
var kindRoutes = map[string]kindRoute{
	tracker.OpJob: {
		track: func(p, id string) string {
			return "/api/v2/agent/" + url.PathEscape(p) + "/job/" + url.PathEscape(id) + "/track"
		},
		unknown: func(p string) string { return "/api/v2/agent/" + url.PathEscape(p) + "/unknown-creates" }},
	tracker.OpDeployment: {
		track: func(p, id string) string {
			return "/api/v1/project/" + url.PathEscape(p) + "/update-status/" + url.PathEscape(id) + "/track"
		},
		unknown: func(p string) string { return "/api/v1/project/" + url.PathEscape(p) + "/unknown-triggers" }},
	tracker.OpExport: {
		track: func(p, id string) string {
			return "/api/v1/static-export/" + url.PathEscape(p) + "/jobs/" + url.PathEscape(id) + "/track"
		},
		unknown: func(p string) string { return "/api/v1/static-export/" + url.PathEscape(p) + "/unknown-starts" }},
	tracker.OpAutomation: {
		track: func(p, id string) string {
			return "/api/v1/workflow/" + url.PathEscape(p) + "/runs/" + url.PathEscape(id) + "/track"
		},
		unknown: func(p string) string { return "/api/v1/workflow/" + url.PathEscape(p) + "/unknown-triggers" }},
}

// HandoffRequest is the request that settles an operation acknowledged
// upstream but not saved (tracker.Unsaved) on whichever replica runs the
// gateway: the route an operator uses for an outcome it found, track with
// ?intent=, so that the operation is followed, its Idempotency-Key bound
// to it and its intent deleted in one write.
func HandoffRequest(ctx context.Context, u tracker.Unsaved) (*http.Request, error) {
	route, ok := kindRoutes[u.Kind]
	if !ok {
		return nil, fmt.Errorf("handing over an operation of unknown kind %q", u.Kind)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://handoff"+route.track(u.Project, u.ID)+"?intent="+url.QueryEscape(u.Intent), http.NoBody)
	if err != nil {
		return nil, fmt.Errorf("handing over %s %s: %w", u.Kind, u.ID, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.RemoteAddr = "handoff"
	return req, nil
}
