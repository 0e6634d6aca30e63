package staticexport

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/gateway"
	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
)

// base is the static export routes' prefix: the API's static exports are
// per organization, the gateway's per configured project (whose
// organization's key is used, and whose project label counts it).
const base = "/api/v1/static-export/{projectId}"

// maxBodyBytes bounds a start's body: up to 10,000 paths of 1 KiB.
const maxBodyBytes = 12 << 20

// listStatuses are the values of the list's ?status=.
var listStatuses = []string{apiclient.StaticExportQueued, apiclient.StaticExportRunning, apiclient.StaticExportCompleted,
	apiclient.StaticExportFailed, engine.StatusLost}

// routes are the static export routes on a gateway.
type routes struct {
	*Kind
	g      *gateway.Gateway
	starts *gateway.Limiter
}

// Routes adds the static export routes to g.
func (k *Kind) Routes(g *gateway.Gateway) error {
	r := &routes{Kind: k, g: g, starts: g.StartLimit(decl)}
	r.starts.Seed(func(window time.Duration) map[string][]time.Time { return k.ops.Recent(window, nil, nil) })
	for _, rt := range []struct {
		pattern, allow string
		h              func(http.ResponseWriter, *http.Request, string)
	}{
		{"POST /jobs", "GET, HEAD, POST", r.start},
		{"GET /jobs", "", r.list},
		{"GET /jobs/{jobId}", "GET, HEAD", r.one},
		{"POST /jobs/{jobId}/track", "POST", r.track},
		{"POST /jobs/{jobId}/bundle", "POST", r.bundle},
	} {
		method, path, _ := strings.Cut(rt.pattern, " ")
		g.Handle(decl, method+" "+base+path, rt.h)
		if rt.allow != "" {
			g.Allow(base+path, rt.allow)
		}
	}
	g.Unknown(decl, base+"/unknown-starts", "unknownStarts", true)
	return nil
}

// start handles POST .../jobs: {"domain", "version"?, "paths"?}.
func (r *routes) start(w http.ResponseWriter, req *http.Request, project string) {
	key, ok := gateway.StartHeaders(w, req)
	if !ok {
		return
	}
	var body apiclient.StaticExportRequest
	if bad := gateway.ReadBody(w, req, &body, false, maxBodyBytes, ""); bad != nil {
		bad.Write(w)
		return
	}
	if err := body.Check(); err != nil {
		gateway.WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := r.g.Context(req)
	defer cancel()
	at, admitted := r.g.Config().Now(), false
	x, err := r.Start(ctx, Request{Project: project, Body: body, IdempotencyKey: key, Admit: r.starts.Admit(project, at, &admitted)})
	if err != nil {
		if admitted && gateway.NothingSent(err) {
			r.starts.Release(project, at)
		}
		r.failed(w, project, "start static export", err)
		return
	}
	v := ViewOf(x.Item)
	r.g.Audit(req, "static export started", project, "export", v.JobID, key, "domain", bounded.Label(body.Domain), "paths", len(body.Paths),
		"replayed", x.Replayed)
	gateway.WriteStarted(w, x.Code, http.StatusAccepted, x.Replayed, v)
}

// failed answers a failed export call. The API's 403 on these routes
// means static export is not enabled for the organization (an Enterprise
// beta): passed to the client as a 403 with the API's text, unlike other
// routes' 403 (the exporter's key).
func (r *routes) failed(w http.ResponseWriter, project, op string, err error) {
	if apiErr, ok := errors.AsType[*apiclient.APIError](err); ok && apiErr.StatusCode == http.StatusForbidden {
		level.Warn(r.g.Logger()).Log("msg", "static export refused upstream", "op", op, "project", project, "err", err)
		gateway.WriteError(w, http.StatusForbidden, "the Mintlify API refused the static export (HTTP 403: static export is not enabled for the organization, "+
			"or the exporter's key lacks the scope): "+gateway.OrDefault(bounded.Label(apiErr.Message), "no message"))
		return
	}
	r.g.Fail(w, project, op, err)
}

// one handles GET .../jobs/{jobId}: an export not followed is read
// through to the API with the organization's key, and answered as the
// API answers it (issue 44), not followed (track does that).
func (r *routes) one(w http.ResponseWriter, req *http.Request, project string) {
	id := req.PathValue("jobId")
	if it, ok := r.ops.One(project, id); ok {
		gateway.WriteJSON(w, http.StatusOK, ViewOf(it))
		return
	}
	ctx, cancel := r.g.Context(req)
	defer cancel()
	c, err := r.ops.Engine().Client(project, true)
	var x apiclient.StaticExportJob
	if err == nil {
		x, err = c.GetStaticExport(ctx, id)
	}
	if err != nil {
		r.failed(w, project, "read static export", err)
		return
	}
	gateway.WriteJSON(w, http.StatusOK, x)
}

// list handles GET .../jobs?status=&limit=.
func (r *routes) list(w http.ResponseWriter, req *http.Request, project string) {
	var views []View
	for _, it := range r.ops.List(project) {
		views = append(views, ViewOf(it))
	}
	gateway.ServeList(w, req, "static export", listStatuses, views, func(v View) string { return v.Status }, "exports")
}

// track handles POST .../jobs/{jobId}/track[?intent=].
func (r *routes) track(w http.ResponseWriter, req *http.Request, project string) {
	id, intent := req.PathValue("jobId"), req.URL.Query().Get("intent")
	ctx, cancel := r.g.Context(req)
	defer cancel()
	it, res, err := gateway.FollowOrSettle(intent,
		func() (engine.Item, engine.TrackResult, error) { return r.ops.Resolve(ctx, project, intent, id) },
		func() (engine.Item, engine.TrackResult, error) { return r.Track(ctx, project, id) })
	var v any
	if it.Rec != nil {
		v = ViewOf(it)
	}
	failed := func(w http.ResponseWriter, project string, err error) {
		r.failed(w, project, "track static export", err)
	}
	gateway.AnswerTrack(w, gateway.Tracked{What: "static export", Start: "static export start", Unknown: "unknown-starts", Failed: failed}, project, v, res, err,
		func() { r.g.Audit(req, "static export followed", project, "export", id, "", "intent", intent) })
}

// bundle handles POST .../jobs/{jobId}/bundle: the API's answer passed
// through (409 until the export is completed). The bundle's URL is a
// secret: it is in this answer only, never in a log line, a label or the
// status page.
func (r *routes) bundle(w http.ResponseWriter, req *http.Request, project string) {
	id := req.PathValue("jobId")
	ctx, cancel := r.g.Context(req)
	defer cancel()
	b, err := r.Bundle(ctx, project, id)
	if err != nil {
		r.failed(w, project, "bundle static export", err)
		return
	}
	r.g.Audit(req, "static export bundle made", project, "export", id, "", "expires_at", b.ExpiresAt.UTC())
	gateway.WriteJSON(w, http.StatusOK, map[string]any{"jobId": b.JobID, "bundleUrl": b.URL.Reveal(), "sizeBytes": b.SizeBytes, "expiresAt": b.ExpiresAt})
}

// row is a static export as the status page's JSON shows it: a bundle
// said ready with when it expires, never its URL (which is not kept).
type row struct {
	Project   string    `json:"project"`
	Progress  float64   `json:"progress"`
	JobID     string    `json:"job_id"`
	Pages     int64     `json:"pages"`
	Status    string    `json:"status"`
	Domain    string    `json:"domain,omitempty"`
	Bundle    string    `json:"bundle,omitempty"`
	CreatedAt time.Time `json:"created_at,omitzero"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// Section is the status page's section of the static exports followed
// last (newest first), of the projects followed.
func (k *Kind) Section(now time.Time) status.Section {
	s := status.Section{Key: "static_exports", Title: decl.Routes.Title, Empty: "No static export followed.",
		Columns: []status.Column{{Name: "Project"}, {Name: "Job"}, {Name: "Status"}, {Name: "Domain"}, {Name: "Progress", Num: true},
			{Name: "Pages", Num: true}, {Name: "Bundle"}, {Name: "Created"}, {Name: "Updated"}}}
	rows := []row{}
	for _, it := range k.ops.Newest(status.MaxRows) {
		v, rec := ViewOf(it), it.Rec.(*Record)
		x := row{Project: v.ProjectID, JobID: v.JobID, Status: v.Status, Domain: v.Domain, Progress: v.Progress, Pages: v.PageCount,
			CreatedAt: v.CreatedAt.Time, UpdatedAt: v.UpdatedAt.Time}
		switch exp := rec.BundleExpiresAt; {
		case exp.IsZero():
		case exp.After(now):
			x.Bundle = "bundle ready, expires at " + exp.UTC().Format(time.RFC3339)
		default:
			x.Bundle = "bundle expired at " + exp.UTC().Format(time.RFC3339)
		}
		level := ""
		if x.Status == apiclient.StaticExportFailed || x.Status == engine.StatusLost {
			level = status.LevelWarn
		}
		rows = append(rows, x)
		s.Rows = append(s.Rows, status.Row{Project: x.Project, Cells: []status.Cell{{Text: x.Project}, {Text: x.JobID, Code: true},
			{Text: x.Status, Code: true, Level: level}, {Text: x.Domain}, {Text: fmt.Sprintf("%.0f%%", x.Progress)}, {Text: strconv.FormatInt(x.Pages, 10)}, {Text: x.Bundle},
			{Time: true, At: x.CreatedAt}, {Time: true, At: x.UpdatedAt}}})
	}
	s.JSON = rows
	return s
}
