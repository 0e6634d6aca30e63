package gateway

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/tracker"
)

// Exporter is what the static export routes need from the tracker;
// *tracker.Tracker implements it.
type Exporter interface {
	StartExport(ctx context.Context, req tracker.ExportRequest) (tracker.Exported, error)
	TrackExport(ctx context.Context, project, id string) (tracker.ExportView, tracker.TrackResult, error)
	BundleExport(ctx context.Context, project, id string) (apiclient.StaticExportBundle, error)
	// ExportOps reads the followed exports, and lists, settles and
	// dismisses the starts of unknown outcome.
	ExportOps() tracker.Ops[tracker.ExportView, tracker.UnknownExportStart]
}

// exportBase is the static export routes' prefix: the API's static
// exports are per organization, the gateway's per configured project
// (whose organization's key is used, and whose project label counts it).
const exportBase = "/api/v1/static-export/{projectId}"

// maxExportBodyBytes bounds a start's body: up to 10,000 paths of 1 KiB.
const maxExportBodyBytes = 12 << 20

// exportListStatuses are the values of the list's ?status=.
var exportListStatuses = []string{apiclient.StaticExportQueued, apiclient.StaticExportRunning, apiclient.StaticExportCompleted,
	apiclient.StaticExportFailed, tracker.StatusLost}

// registerExports adds the static export routes to g's mux.
func (g *Gateway) registerExports(x Exporter) {
	g.export = x
	ops := x.ExportOps()
	unknown, dismiss := unknownRoutes(g, "static export start", ops.Unknown,
		func(l []tracker.UnknownExportStart) any { return UnknownStartList{UnknownStarts: l} }, ops.Dismiss)
	routes := []struct {
		method, path string
		h            func(http.ResponseWriter, *http.Request, string)
	}{
		{"POST", "/jobs", g.startExport},
		{"GET", "/jobs", g.listExports},
		{"GET", "/jobs/{jobId}", g.getExport},
		{"POST", "/jobs/{jobId}/track", g.trackExport},
		{"POST", "/jobs/{jobId}/bundle", g.bundleExport},
		{"GET", "/unknown-starts", unknown},
		{"DELETE", "/unknown-starts/{intentId}", dismiss},
	}
	for _, rt := range routes {
		g.mux.HandleFunc(rt.method+" "+exportBase+rt.path, g.exportProject(rt.h))
	}
	for p, methods := range map[string]string{"/jobs": "GET, HEAD, POST", "/jobs/{jobId}": "GET, HEAD", "/jobs/{jobId}/track": "POST",
		"/jobs/{jobId}/bundle": "POST", "/unknown-starts": "GET, HEAD", "/unknown-starts/{intentId}": "DELETE"} {
		g.mux.HandleFunc(exportBase+p, methodNotAllowed(methods))
	}
}

// exportProject wraps h behind the one rule for projects and ids.
func (g *Gateway) exportProject(h func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
	return g.kindProject(g.cfg.ExportProjects, "static_exports", h)
}

// startExport handles POST .../jobs: {"domain", "version"?, "paths"?}.
func (g *Gateway) startExport(w http.ResponseWriter, r *http.Request, project string) {
	key, ok := startHeaders(w, r)
	if !ok {
		return
	}
	var body apiclient.StaticExportRequest
	if bad := readBody(w, r, &body, false, maxExportBodyBytes); bad != nil {
		writeError(w, bad.status, bad.msg)
		return
	}
	if err := body.Check(); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := g.upstreamContext(r)
	defer cancel()
	x, err := g.export.StartExport(ctx, tracker.ExportRequest{Project: project, Body: body, IdempotencyKey: key})
	if err != nil {
		g.exportFailed(w, project, "start static export", err)
		return
	}
	g.auditOp(r, "static export started", project, "export", x.Op.JobID, key, "domain", bounded.Label(body.Domain), "paths", len(body.Paths),
		"replayed", x.Replayed)
	writeStarted(w, x.Code, http.StatusAccepted, x.Replayed, x.Op)
}

// exportFailed answers a failed export call. The API's 403 on these
// routes means static export is not enabled for the organization (an
// Enterprise beta): passed to the client as a 403 with the API's text,
// unlike other routes' 403 (the exporter's key).
func (g *Gateway) exportFailed(w http.ResponseWriter, project, op string, err error) {
	if apiErr, ok := errors.AsType[*apiclient.APIError](err); ok && apiErr.StatusCode == http.StatusForbidden {
		level.Warn(g.logger).Log("msg", "static export refused upstream", "op", op, "project", project, "err", err)
		writeError(w, http.StatusForbidden, "the Mintlify API refused the static export (HTTP 403: static export is not enabled for the organization, "+
			"or the exporter's key lacks the scope): "+orDefault(bounded.Label(apiErr.Message), "no message"))
		return
	}
	a := g.upstreamAnswer(w, project, op, err)
	writeError(w, a.status, a.msg)
}

// getExport handles GET .../jobs/{jobId}.
func (g *Gateway) getExport(w http.ResponseWriter, r *http.Request, project string) {
	v, ok := g.export.ExportOps().One(project, r.PathValue("jobId"))
	serveOne(w, v, ok, "static export not followed by this exporter (POST "+
		"/api/v1/static-export/{projectId}/jobs/{jobId}/track follows one started elsewhere)")
}

// listExports handles GET .../jobs?status=&limit=.
func (g *Gateway) listExports(w http.ResponseWriter, r *http.Request, project string) {
	serveList(w, r, "static export", exportListStatuses, func(status string) []tracker.ExportView {
		return slices.DeleteFunc(g.export.ExportOps().List(project), func(v tracker.ExportView) bool { return status != "" && v.Status != status })
	}, func(l []tracker.ExportView) any { return ExportList{Exports: l} })
}

// ExportList is the body of GET .../jobs.
type ExportList struct {
	Exports []tracker.ExportView `json:"exports"`
}

// trackExport handles POST .../jobs/{jobId}/track[?intent=].
func (g *Gateway) trackExport(w http.ResponseWriter, r *http.Request, project string) {
	id, intent := r.PathValue("jobId"), r.URL.Query().Get("intent")
	ctx, cancel := g.upstreamContext(r)
	defer cancel()
	v, res, err := followOrSettle(intent,
		func() (tracker.ExportView, tracker.TrackResult, error) {
			return g.export.ExportOps().Resolve(ctx, project, intent, id)
		},
		func() (tracker.ExportView, tracker.TrackResult, error) { return g.export.TrackExport(ctx, project, id) })
	failed := func(w http.ResponseWriter, project string, err error) {
		g.exportFailed(w, project, "track static export", err)
	}
	answerTrack(w, tracked{what: "static export", start: "static export start", unknown: "unknown-starts", failed: failed}, project, v, res, err,
		func() { g.auditOp(r, "static export followed", project, "export", id, "", "intent", intent) })
}

// bundleExport handles POST .../jobs/{jobId}/bundle: the API's answer
// passed through (409 until the export is completed). The bundle's URL is
// a secret: it is in this answer only, never in a log line, a label or the
// status page.
func (g *Gateway) bundleExport(w http.ResponseWriter, r *http.Request, project string) {
	id := r.PathValue("jobId")
	ctx, cancel := g.upstreamContext(r)
	defer cancel()
	b, err := g.export.BundleExport(ctx, project, id)
	if err != nil {
		g.exportFailed(w, project, "bundle static export", err)
		return
	}
	g.auditOp(r, "static export bundle made", project, "export", id, "", "expires_at", b.ExpiresAt.UTC())
	writeJSON(w, http.StatusOK, map[string]any{"jobId": b.JobID, "bundleUrl": b.URL.Reveal(), "sizeBytes": b.SizeBytes, "expiresAt": b.ExpiresAt})
}

// UnknownStartList is the body of GET .../unknown-starts.
type UnknownStartList struct {
	UnknownStarts []tracker.UnknownExportStart `json:"unknownStarts"`
}
