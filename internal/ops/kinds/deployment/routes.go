package deployment

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/gateway"
	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
)

// The API's documented preview limit, per organization, which the
// gateway applies before a preview leaves (updates draw on the gateway's
// Updates).
const (
	PreviewLimit  = 5
	PreviewWindow = time.Minute
)

// maxBodyBytes bounds a deployment route's body: a branch of at most
// MaxBranchBytes, JSON-escaped, fits many times over.
const maxBodyBytes = 4 << 10

// listStatuses are the values of the list's ?status=.
var listStatuses = []string{apiclient.DeploymentQueued, apiclient.DeploymentInProgress, apiclient.DeploymentSuccess, apiclient.DeploymentFailure,
	engine.StatusLost}

// routes are the deployment routes on a gateway.
type routes struct {
	*Kind
	g                 *gateway.Gateway
	updates, previews *gateway.Limiter
}

// Routes adds the deployment routes to g. The update-status path and a
// project's lists share one pattern (their paths would otherwise
// conflict), dispatched by get.
func (k *Kind) Routes(g *gateway.Gateway) error {
	r := &routes{Kind: k, g: g,
		updates:  g.Updates(),
		previews: g.Limit("previews", "preview", "previews", PreviewLimit, PreviewWindow, true)}
	r.updates.Seed(k.Recent(KindUpdate))
	r.previews.Seed(k.Recent(KindPreview))
	const base = "/api/v1/project"
	for _, kind := range []string{KindUpdate, KindPreview} {
		g.Handle(decl, "POST "+base+"/"+kind+"/{projectId}", func(w http.ResponseWriter, req *http.Request, p string) { r.trigger(w, req, p, kind) })
	}
	g.Handle(decl, "POST "+base+"/{projectId}/update-status/{statusId}/track", r.track)
	g.Handle(decl, "DELETE "+base+"/{projectId}/unknown-triggers/{intentId}", g.UnknownDismiss(decl))
	g.Allow(base+"/{projectId}/unknown-triggers/{intentId}", "DELETE")
	g.HandleFunc("GET "+base+"/{a}/{b}", r.get)
	g.Fallback(base+"/{a}/{b}", allowed)
	g.Allow(base+"/{projectId}/update-status/{statusId}/track", "POST")
	return nil
}

// get dispatches GET /api/v1/project/{a}/{b}: the update-status of a
// followed deployment, or a project's deployments or unknown triggers.
func (r *routes) get(w http.ResponseWriter, req *http.Request) {
	a, b := req.PathValue("a"), req.PathValue("b")
	list := map[string]func(http.ResponseWriter, *http.Request, string){"deployments": r.list, "unknown-triggers": r.g.UnknownList(decl, "unknownTriggers")}
	switch {
	case a == "update-status":
		if err := bounded.CheckID("status id", b); err != nil {
			gateway.WriteError(w, http.StatusBadRequest, err.Error())
			return
		}
		// Of any project that takes deployments now (the API's path
		// names none).
		it, ok := r.ops.Find(func(rec engine.Record) bool {
			_, takes := r.ops.Engine().Takes(Name, rec.Base().Project)
			return rec.ID() == b && takes
		})
		if !ok {
			r.readThrough(w, req, b)
			return
		}
		gateway.WriteJSON(w, http.StatusOK, ViewOf(it))
	case list[b] != nil:
		req.SetPathValue("projectId", a)
		r.g.Guard(decl, list[b])(w, req)
	default:
		gateway.NotAllowed(w, allowed(a, b))
	}
}

// readThrough answers the update-status of a deployment not followed as
// the API answers it (issue 44: a client that swaps the base URL reads
// every status): read with the key of the organization of each project
// that takes deployments, in turn, until the API knows it for one of
// them; at most one request per such project, nothing followed (track
// does that) nor kept. A status of a project the gateway does not serve
// is answered 404, as one the API does not know.
func (r *routes) readThrough(w http.ResponseWriter, req *http.Request, id string) {
	ctx, cancel := r.g.Context(req)
	defer cancel()
	var err error
	unknown := map[string]bool{} // organizations that do not know id
	for _, p := range r.g.Projects() {
		org := r.g.Organization(p)
		if _, takes := r.ops.Engine().Takes(Name, p); !takes || unknown[org] {
			continue
		}
		var c *apiclient.Client
		if c, err = r.ops.Engine().Client(p, true); err != nil {
			break
		}
		d, derr := c.DeploymentStatus(ctx, p, id)
		if err = derr; err == nil {
			gateway.WriteJSON(w, http.StatusOK, d)
			return
		}
		apiErr, ok := errors.AsType[*apiclient.APIError](err)
		if !errors.Is(err, apiclient.ErrOtherProject) && (!ok || apiErr.StatusCode != http.StatusNotFound) {
			break
		}
		unknown[org] = !errors.Is(err, apiclient.ErrOtherProject)
	}
	if err == nil || errors.Is(err, apiclient.ErrOtherProject) {
		gateway.WriteError(w, http.StatusNotFound, "deployment status not found (the API does not know it for the projects this exporter serves)")
		return
	}
	r.g.Fail(w, "", "read deployment status", err)
}

// allowed are the methods of the paths /api/v1/project/{a}/{b}.
func allowed(a, b string) string {
	switch {
	case a == KindUpdate || a == KindPreview:
		return "POST"
	case a == "update-status" || b == "deployments" || b == "unknown-triggers":
		return "GET, HEAD"
	}
	return ""
}

// trigger handles POST .../update/{projectId} and .../preview/{projectId}.
func (r *routes) trigger(w http.ResponseWriter, req *http.Request, project, kind string) {
	key, ok := gateway.StartHeaders(w, req)
	if !ok {
		return
	}
	var body struct {
		Branch json.RawMessage `json:"branch"`
	}
	if bad := gateway.ReadBody(w, req, &body, kind == KindUpdate, maxBodyBytes, ""); bad != nil {
		bad.Write(w)
		return
	}
	branch := ""
	if kind == KindPreview {
		var err error
		if branch, err = parseBranch(body.Branch); err != nil {
			gateway.WriteError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	lim := r.updates
	if kind == KindPreview {
		lim = r.previews
	}
	at, admitted := r.g.Config().Now(), false
	ctx, cancel := r.g.Context(req)
	defer cancel()
	d, err := r.Deploy(ctx, Request{Project: project, Kind: kind, Branch: branch, IdempotencyKey: key, Admit: lim.Admit(project, at, &admitted)})
	if err != nil {
		if admitted && gateway.NothingSent(err) {
			lim.Release(project, at)
		}
		r.g.Fail(w, project, "deploy", err)
		return
	}
	v := ViewOf(d.Item)
	r.g.Audit(req, "deployment triggered", project, "deployment", v.ID, key, "kind", kind, "branch", bounded.Label(branch), "replayed", d.Replayed)
	out := map[string]string{"statusId": v.ID}
	if kind == KindPreview {
		out["previewUrl"] = v.PreviewURL
	}
	gateway.WriteStarted(w, d.Code, http.StatusAccepted, d.Replayed, out)
}

// parseBranch validates a preview's branch: a string of 1 to
// MaxBranchBytes bytes of UTF-8 without control characters.
func parseBranch(raw json.RawMessage) (string, error) {
	if s := strings.TrimSpace(string(raw)); s == "" || s == "null" {
		return "", errors.New(`branch is required: want {"branch": "..."}`)
	}
	var branch string
	if json.Unmarshal(raw, &branch) != nil {
		return "", errors.New("branch must be a string")
	}
	switch {
	case strings.TrimSpace(branch) == "":
		return "", errors.New("branch must not be empty")
	case len(branch) > MaxBranchBytes:
		return "", fmt.Errorf("branch too long: at most %d bytes", MaxBranchBytes)
	case !utf8.ValidString(branch) || strings.ContainsFunc(branch, unicode.IsControl):
		return "", errors.New("branch must be UTF-8 without control characters")
	}
	return branch, nil
}

// track handles POST .../{projectId}/update-status/{statusId}/track with
// an optional {"kind": "update"|"preview"} (with ?intent=, the trigger's
// intent knows its kind).
func (r *routes) track(w http.ResponseWriter, req *http.Request, project string) {
	var body struct {
		Kind *string `json:"kind"`
	}
	if bad := gateway.ReadBody(w, req, &body, true, maxBodyBytes, ""); bad != nil {
		bad.Write(w)
		return
	}
	kind := KindUpdate
	if body.Kind != nil {
		kind = *body.Kind
	}
	if !validKind(kind) {
		gateway.WriteError(w, http.StatusBadRequest, `kind must be "update" or "preview"`)
		return
	}
	id, intent := req.PathValue("statusId"), req.URL.Query().Get("intent")
	ctx, cancel := r.g.Context(req)
	defer cancel()
	it, res, err := gateway.FollowOrSettle(intent,
		func() (engine.Item, engine.TrackResult, error) { return r.ops.Resolve(ctx, project, intent, id) },
		func() (engine.Item, engine.TrackResult, error) { return r.Track(ctx, project, kind, id) })
	var v View
	if it.Rec != nil {
		v = ViewOf(it)
	}
	gateway.AnswerTrack(w, gateway.Tracked{What: "deployment", Start: "deployment trigger", Unknown: "unknown-triggers", Failed: r.g.Failed("track deployment")},
		project, v, res, err, func() {
			r.g.Audit(req, "deployment followed", project, "deployment", id, "", "kind", v.Kind, "intent", intent)
		})
}

// list handles GET .../{projectId}/deployments?status=&limit=.
func (r *routes) list(w http.ResponseWriter, req *http.Request, project string) {
	var views []View
	for _, it := range r.ops.List(project) {
		views = append(views, ViewOf(it))
	}
	gateway.ServeList(w, req, "deployment", listStatuses, views, func(v View) string { return v.Status }, "deployments")
}

// row is a deployment as the status page's JSON shows it.
type row struct {
	Project string `json:"project"`
	// Kind is update or preview, StatusID the API's id of it.
	Kind     string `json:"kind"`
	StatusID string `json:"status_id"`
	Status   string `json:"status"`
	span
	Branch     string `json:"branch,omitempty"`
	SHA        string `json:"sha,omitempty"`
	PreviewURL string `json:"preview_url,omitempty"`
}

// span is when a deployment was created and ended.
type span struct {
	CreatedAt time.Time `json:"created_at,omitzero"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
}

// Section is the status page's section of the deployments followed last
// (newest first), of the projects followed.
func (k *Kind) Section(time.Time) status.Section {
	s := status.Section{Key: "deployments", Title: decl.Routes.Title, Empty: "No deployment followed.",
		Columns: []status.Column{{Name: "Project"}, {Name: "Kind"}, {Name: "Status"}, {Name: "Branch"}, {Name: "Commit"}, {Name: "Preview"},
			{Name: "Created"}, {Name: "Ended"}}}
	rows := []row{}
	for _, it := range k.ops.Newest(status.MaxRows) {
		v := ViewOf(it)
		level := ""
		if v.Status == apiclient.DeploymentFailure || v.Status == engine.StatusLost {
			level = status.LevelWarn
		}
		rows = append(rows, row{Project: v.ProjectID, Kind: v.Kind, StatusID: v.ID, Status: v.Status, Branch: v.Commit.Ref, SHA: v.Commit.SHA,
			PreviewURL: v.PreviewURL, span: span{v.CreatedAt.Time, v.EndedAt.Time}})
		s.Rows = append(s.Rows, status.Row{Project: v.ProjectID, Cells: []status.Cell{{Text: v.ProjectID}, {Text: v.Kind},
			{Text: v.Status, Code: true, Level: level}, {Text: v.Commit.Ref, Code: true}, {Text: v.Commit.SHA, Code: true}, {Text: v.PreviewURL},
			{Time: true, At: v.CreatedAt.Time}, {Time: true, At: v.EndedAt.Time}}})
	}
	s.JSON = rows
	return s
}
