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
	Export(project, id string) (tracker.ExportView, bool)
	Exports(project string) []tracker.ExportView
	BundleExport(ctx context.Context, project, id string) (apiclient.StaticExportBundle, error)
	UnknownExportStarts(project string) []tracker.UnknownExportStart
	ResolveExportStart(ctx context.Context, project, intentID, jobID string) (tracker.ExportView, tracker.TrackResult, error)
	DismissExportStart(project, intentID string) error
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
	routes := []struct {
		method, path string
		h            func(http.ResponseWriter, *http.Request, string)
	}{
		{"POST", "/jobs", g.startExport},
		{"GET", "/jobs", g.listExports},
		{"GET", "/jobs/{jobId}", g.getExport},
		{"POST", "/jobs/{jobId}/track", g.trackExport},
		{"POST", "/jobs/{jobId}/bundle", g.bundleExport},
		{"GET", "/unknown-starts", g.unknownStarts},
		{"DELETE", "/unknown-starts/{intentId}", g.dismissStart},
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
	if !jsonContentType(r) {
		writeError(w, http.StatusUnsupportedMediaType, contentTypeMsg)
		return
	}
	key, err := IdempotencyKey(r.Header)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
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
	var unknown *tracker.ExportOutcomeUnknownError
	switch {
	case err == nil:
	case errors.As(err, &unknown):
		writeUnknown(w, err, unknown.Err == nil)
		return
	default:
		g.exportFailed(w, project, "start static export", err)
		return
	}
	g.auditOp(r, "static export started", project, "export", x.Export.JobID, key, "domain", bounded.Label(body.Domain), "paths", len(body.Paths),
		"replayed", x.Replayed)
	writeStarted(w, x.Code, http.StatusAccepted, x.Replayed, x.Export)
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
	v, ok := g.export.Export(project, r.PathValue("jobId"))
	serveOne(w, v, ok, "static export not followed by this exporter (POST "+
		"/api/v1/static-export/{projectId}/jobs/{jobId}/track follows one started elsewhere)")
}

// listExports handles GET .../jobs?status=&limit=.
func (g *Gateway) listExports(w http.ResponseWriter, r *http.Request, project string) {
	serveList(w, r, "static export", exportListStatuses, func(status string) []tracker.ExportView {
		return slices.DeleteFunc(g.export.Exports(project), func(v tracker.ExportView) bool { return status != "" && v.Status != status })
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
			return g.export.ResolveExportStart(ctx, project, intent, id)
		},
		func() (tracker.ExportView, tracker.TrackResult, error) { return g.export.TrackExport(ctx, project, id) })
	switch {
	case err == nil:
	case errors.Is(err, tracker.ErrNoSuchIntent):
		writeError(w, http.StatusNotFound, "no static export start of unknown outcome with this intent id (GET .../unknown-starts lists them)")
		return
	case apiclient.StatusCode(err) == http.StatusNotFound:
		writeError(w, http.StatusNotFound, "static export not found upstream")
		return
	default:
		g.exportFailed(w, project, "track static export", err)
		return
	}
	status := http.StatusOK
	if res == tracker.NewlyTracked {
		status = http.StatusCreated
		g.auditOp(r, "static export followed", project, "export", id, "", "intent", intent)
	}
	writeJSON(w, status, v)
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

// unknownStarts handles GET .../unknown-starts: starts of unknown outcome,
// oldest first, to follow (track?intent=) or dismiss.
func (g *Gateway) unknownStarts(w http.ResponseWriter, _ *http.Request, project string) {
	writeJSON(w, http.StatusOK, UnknownStartList{UnknownStarts: g.export.UnknownExportStarts(project)})
}

// dismissStart handles DELETE .../unknown-starts/{intentId}.
func (g *Gateway) dismissStart(w http.ResponseWriter, r *http.Request, project string) {
	g.dismissUnknown(w, r, project, "static export start", g.export.DismissExportStart)
}
