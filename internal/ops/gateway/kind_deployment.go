package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/tracker"
)

// Deployer is what the deployment routes need from the tracker;
// *tracker.Tracker implements it.
type Deployer interface {
	// Deploy triggers a deployment upstream (after a durable intent) and
	// durably records it as followed before returning, or replays the
	// answer for an idempotency key used before.
	Deploy(ctx context.Context, req tracker.DeployRequest) (tracker.Deployed, error)
	// TrackDeployment follows a deployment started elsewhere.
	TrackDeployment(ctx context.Context, project, kind, id string) (tracker.DeploymentView, tracker.TrackResult, error)
	// Deployment returns a followed deployment of one of projects.
	Deployment(id string, projects map[string]bool) (tracker.DeploymentView, bool)
	// RecentDeployments returns when triggers of kind were sent within
	// window, per project, to seed the local limits after a restart.
	RecentDeployments(kind string, window time.Duration) map[string][]time.Time
	// DeploymentOps lists a project's followed deployments, and lists,
	// settles and dismisses its triggers of unknown outcome.
	DeploymentOps() tracker.Ops[tracker.DeploymentView, tracker.UnknownTrigger]
}

// The API's documented trigger limits, per organization, which the
// gateway applies before a trigger leaves.
const (
	// UpdateLimit update triggers per UpdateWindow, shared with the
	// automation triggers (one limiter counts both: orgLimits).
	UpdateLimit  = 10
	UpdateWindow = 10 * time.Second
	// PreviewLimit preview triggers per PreviewWindow.
	PreviewLimit  = 5
	PreviewWindow = time.Minute
)

// maxDeployBodyBytes bounds a deployment route's body: a branch of at
// most tracker.MaxBranchBytes, JSON-escaped, fits many times over.
const maxDeployBodyBytes = 4 << 10

// deployRoutes are the deployment routes' state: the tracker, and the
// unknown-triggers list route. Their limits are the gateway's (orgLimits).
type deployRoutes struct {
	dep     Deployer
	unknown http.HandlerFunc
}

// registerDeployments adds the deployment routes to g's mux. The update-
// status path and the deployments list share one pattern (their paths
// would otherwise conflict), dispatched by deployGet.
func (g *Gateway) registerDeployments(dep Deployer) {
	g.deploy = &deployRoutes{dep: dep}
	for _, k := range tracker.DeploymentKinds {
		lim, window := g.limits.of(k)
		g.limits.add(lim, window, func(window time.Duration) map[string][]time.Time { return dep.RecentDeployments(k, window) })
	}
	const base = "/api/v1/project"
	g.mux.HandleFunc("POST "+base+"/update/{projectId}", g.deployProject(func(w http.ResponseWriter, r *http.Request, p string) {
		g.trigger(w, r, p, tracker.KindUpdate)
	}))
	g.mux.HandleFunc("POST "+base+"/preview/{projectId}", g.deployProject(func(w http.ResponseWriter, r *http.Request, p string) {
		g.trigger(w, r, p, tracker.KindPreview)
	}))
	ops := dep.DeploymentOps()
	unknown, dismiss := unknownRoutes(g, "deployment trigger", ops.Unknown,
		func(l []tracker.UnknownTrigger) any { return UnknownTriggerList{UnknownTriggers: l} }, ops.Dismiss)
	g.deploy.unknown = g.deployProject(unknown)
	g.mux.HandleFunc("POST "+base+"/{projectId}/update-status/{statusId}/track", g.deployProject(g.trackDeployment))
	g.mux.HandleFunc("DELETE "+base+"/{projectId}/unknown-triggers/{intentId}", g.deployProject(dismiss))
	g.mux.HandleFunc(base+"/{projectId}/unknown-triggers/{intentId}", methodNotAllowed("DELETE"))
	g.mux.HandleFunc("GET "+base+"/{a}/{b}", g.deployGet)
	g.mux.HandleFunc(base+"/{a}/{b}", func(w http.ResponseWriter, r *http.Request) {
		switch a, b := r.PathValue("a"), r.PathValue("b"); {
		case a == "update" || a == "preview":
			methodNotAllowed("POST")(w, r)
		case a == "update-status" || b == "deployments" || b == "unknown-triggers":
			methodNotAllowed("GET, HEAD")(w, r)
		default:
			writeError(w, http.StatusNotFound, "not found")
		}
	})
	g.mux.HandleFunc(base+"/{projectId}/update-status/{statusId}/track", methodNotAllowed("POST"))
}

// deployGet dispatches GET /api/v1/project/{a}/{b}: the update-status of
// a followed deployment, or a project's deployments.
func (g *Gateway) deployGet(w http.ResponseWriter, r *http.Request) {
	a, b := r.PathValue("a"), r.PathValue("b")
	switch {
	case a == "update-status":
		if err := bounded.CheckID("status id", b); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		g.deploymentStatus(w, b)
	case b == "deployments":
		r.SetPathValue("projectId", a)
		g.deployProject(g.listDeployments)(w, r)
	case b == "unknown-triggers":
		r.SetPathValue("projectId", a)
		g.deploy.unknown(w, r)
	case a == "update" || a == "preview":
		methodNotAllowed("POST")(w, r)
	default:
		writeError(w, http.StatusNotFound, "not found")
	}
}

// deploymentProjects is the set of projects that take deployments now.
func (g *Gateway) deploymentProjects() map[string]bool { return projectSet(g.cfg.DeploymentProjects) }

// deployProject wraps h behind the project check: 404 for a project not
// configured, 403 for one without deployments.
func (g *Gateway) deployProject(h func(http.ResponseWriter, *http.Request, string)) http.HandlerFunc {
	return g.kindProject(g.cfg.DeploymentProjects, "deployments", h)
}

// organization is the organization whose trigger limits project draws on.
func (g *Gateway) organization(project string) string {
	if g.cfg.Organization == nil {
		return ""
	}
	return g.cfg.Organization(project)
}

// trigger handles POST .../update/{projectId} and .../preview/{projectId}.
func (g *Gateway) trigger(w http.ResponseWriter, r *http.Request, project, kind string) {
	key, ok := startHeaders(w, r)
	if !ok {
		return
	}
	var body struct {
		Branch json.RawMessage `json:"branch"`
	}
	if bad := readBody(w, r, &body, kind == tracker.KindUpdate, maxDeployBodyBytes); bad != nil {
		writeError(w, bad.status, bad.msg)
		return
	}
	branch := ""
	if kind == tracker.KindPreview {
		var err error
		if branch, err = parseBranch(body.Branch); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	org, at := g.organization(project), g.cfg.Now()
	lim, _ := g.limits.of(kind)
	lim = g.limits.seed(lim, org, g.organization, at)
	admitted := false
	ctx, cancel := g.upstreamContext(r)
	defer cancel()
	d, err := g.deploy.dep.Deploy(ctx, tracker.DeployRequest{Project: project, Kind: kind, Branch: branch, IdempotencyKey: key,
		Admit: admitTrigger(lim, org, at, &admitted)})
	if err != nil {
		g.triggerFailed(w, project, kind, err, func() {
			if admitted {
				lim.release(org, at)
			}
		})
		return
	}
	g.auditOp(r, "deployment triggered", project, "deployment", d.Op.ID, key, "kind", kind, "branch", bounded.Label(branch), "replayed", d.Replayed)
	out := map[string]string{"statusId": d.Op.ID}
	if kind == tracker.KindPreview {
		out["previewUrl"] = d.Op.PreviewURL
	}
	writeStarted(w, d.Code, http.StatusAccepted, d.Replayed, out)
}

// triggerFailed answers a failed trigger; release gives its limit slot
// back, called when nothing was sent.
func (g *Gateway) triggerFailed(w http.ResponseWriter, project, kind string, err error, release func()) {
	var limited *limitError
	if nothingSent(err) {
		release()
	}
	switch {
	case errors.As(err, &limited):
		setRetryAfter(w, limited.wait)
		writeError(w, http.StatusTooManyRequests, limitMsg(kind, limited.wait))
	default:
		a := g.upstreamAnswer(w, project, "deploy", err)
		writeError(w, a.status, a.msg)
	}
}

// parseBranch validates a preview's branch: a string of 1 to
// tracker.MaxBranchBytes bytes of UTF-8 without control characters.
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
	case len(branch) > tracker.MaxBranchBytes:
		return "", fmt.Errorf("branch too long: at most %d bytes", tracker.MaxBranchBytes)
	case !utf8.ValidString(branch) || strings.ContainsFunc(branch, unicode.IsControl):
		return "", errors.New("branch must be UTF-8 without control characters")
	}
	return branch, nil
}

// trackDeployment handles POST .../{projectId}/update-status/{statusId}/track
// with an optional {"kind": "update"|"preview"}.
func (g *Gateway) trackDeployment(w http.ResponseWriter, r *http.Request, project string) {
	if !jsonContentType(r) {
		writeError(w, http.StatusUnsupportedMediaType, contentTypeMsg)
		return
	}
	var body struct {
		Kind *string `json:"kind"`
	}
	if bad := readBody(w, r, &body, true, maxDeployBodyBytes); bad != nil {
		writeError(w, bad.status, bad.msg)
		return
	}
	kind := tracker.KindUpdate
	if body.Kind != nil {
		kind = *body.Kind
	}
	if kind != tracker.KindUpdate && kind != tracker.KindPreview {
		writeError(w, http.StatusBadRequest, `kind must be "update" or "preview"`)
		return
	}
	id := r.PathValue("statusId")
	ctx, cancel := g.upstreamContext(r)
	defer cancel()
	intent := r.URL.Query().Get("intent")
	v, res, err := followOrSettle(intent,
		// The trigger's intent knows its kind: a body's kind is not needed.
		func() (tracker.DeploymentView, tracker.TrackResult, error) {
			return g.deploy.dep.DeploymentOps().Resolve(ctx, project, intent, id)
		},
		func() (tracker.DeploymentView, tracker.TrackResult, error) {
			return g.deploy.dep.TrackDeployment(ctx, project, kind, id)
		})
	answerTrack(w, tracked{what: "deployment", start: "deployment trigger", unknown: "unknown-triggers", failed: g.answerFailed("track deployment")},
		project, v, res, err, func() {
			g.auditOp(r, "deployment followed", project, "deployment", id, "", "kind", v.Kind, "intent", intent)
		})
}

// deploymentStatus handles GET .../update-status/{statusId}.
func (g *Gateway) deploymentStatus(w http.ResponseWriter, id string) {
	v, ok := g.deploy.dep.Deployment(id, g.deploymentProjects())
	serveOne(w, v, ok, "deployment not followed by this exporter (POST /api/v1/project/{projectId}/update-status/{statusId}/track follows one started elsewhere)")
}

// DeploymentList is the body of GET .../{projectId}/deployments.
type DeploymentList struct {
	Deployments []tracker.DeploymentView `json:"deployments"`
}

// listDeployments handles GET .../{projectId}/deployments?status=&limit=.
func (g *Gateway) listDeployments(w http.ResponseWriter, r *http.Request, project string) {
	serveList(w, r, "deployment", deploymentListStatuses, func(status string) []tracker.DeploymentView {
		return slices.DeleteFunc(g.deploy.dep.DeploymentOps().List(project), func(v tracker.DeploymentView) bool { return status != "" && v.Status != status })
	}, func(l []tracker.DeploymentView) any { return DeploymentList{Deployments: l} })
}

// UnknownTriggerList is the body of GET .../{projectId}/unknown-triggers.
type UnknownTriggerList struct {
	UnknownTriggers []tracker.UnknownTrigger `json:"unknownTriggers"`
}
