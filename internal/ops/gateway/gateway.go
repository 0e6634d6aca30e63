// Package gateway serves the routes of every kind of operation under
// /api (the Mintlify API's own paths and shapes, so that a client only
// swaps the base URL and drops the key): each kind's package adds its own
// (Routed), behind the one rule for projects and ids, and the gateway
// gives them what every kind's routes share: the answers to upstream
// errors, Idempotency-Key, bodies, lists, track and settle, the local
// limits, the audit line. Starting, following and persisting operations
// is the engine's business (internal/ops/engine); the gateway loops over
// its kinds and names none.
//
// The gateway has no authentication of its own: it is served behind the
// exporter-toolkit web config (--web.config.file), like /metrics.
package gateway

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
)

// Routed is a kind with routes: it adds them to the gateway (Handle,
// HandleFunc), with its limits and metric families. Every kind has them.
type Routed interface {
	Routes(g *Gateway) error
}

// Config configures a Gateway. Start from Defaults: a zero value is never
// replaced by a default, it means what the field says it means.
type Config struct {
	// UpstreamTimeout bounds one call upstream. The call is detached from
	// the client's connection, so a client that hangs up does not leave an
	// operation started but unrecorded behind.
	UpstreamTimeout time.Duration
	// MaxPromptBytes bounds the body of an agent job's create and
	// follow-up, and so the prompt in it (1 byte to 16 MiB).
	MaxPromptBytes int64
	// CreateLimitPerHour and MessageLimitPerHour are the local limits of
	// agent job creates and follow-ups per project in any hour (429 beyond
	// them, nothing sent); 0 disables one.
	CreateLimitPerHour, MessageLimitPerHour int
	// StartLimits are the kinds' local limits of starts per project in
	// any hour (Routes.StartLimit), by kind: 0 disables one, a kind not
	// named has its declared default.
	StartLimits map[string]int
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Exported says whether the exporter exports a project, so that a
	// kind's route for one that does not take the kind answers 403 naming
	// the setting rather than 404; nil: none is.
	Exported func(project string) bool
	// Organization names a project's organization, whose limits it draws
	// on (nil: one organization).
	Organization func(project string) string
	// Projects are the projects configured at start, whose series the
	// kinds' routes pre-create (SetProjects adds those of a reload).
	Projects []string
}

// maxMaxPromptBytes bounds MaxPromptBytes.
const maxMaxPromptBytes = 16 << 20

// Defaults returns the configuration the exporter's flags start from.
func Defaults() Config {
	return Config{
		MaxPromptBytes: 64 << 10,
		// The API's documented limits: 100 creates and 100 follow-ups per
		// hour per project.
		CreateLimitPerHour:  100,
		MessageLimitPerHour: 100,
		UpstreamTimeout:     60 * time.Second,
	}
}

// Validate reports the first invalid field as a *config.FieldError.
func (c *Config) Validate() error {
	errs := []error{
		config.Field("MaxPromptBytes", config.InRange(c.MaxPromptBytes, 1, maxMaxPromptBytes)),
		config.Field("CreateLimitPerHour", config.AtLeast(c.CreateLimitPerHour, 0)),
		config.Field("MessageLimitPerHour", config.AtLeast(c.MessageLimitPerHour, 0)),
		config.Field("UpstreamTimeout", config.Positive(c.UpstreamTimeout)),
	}
	for _, kind := range slices.Sorted(maps.Keys(c.StartLimits)) {
		errs = append(errs, config.Field(startLimitField(kind), config.AtLeast(c.StartLimits[kind], 0)))
	}
	return config.First(errs...)
}

// startLimitField is the field of Validate's error of kind's start limit.
func startLimitField(kind string) string { return "StartLimits." + kind }

// StartLimit is the local limit of kind's starts per project in any hour
// (its Routes.StartLimit, as configured), named after the kind
// (its name and "_starts" in mintlify_gateway_requests_limited_total).
func (g *Gateway) StartLimit(kind *engine.Decl) *Limiter {
	perHour, set := g.cfg.StartLimits[kind.Name]
	if !set && kind.Routes.StartLimit != nil {
		perHour = kind.Routes.StartLimit.PerHour
	}
	return g.Limit(kind.Name+"_starts", kind.Request, kind.What+"s", perHour, time.Hour, false)
}

// Gateway is the HTTP handler of /api/.
type Gateway struct {
	engine *engine.Engine
	cfg    Config
	logger log.Logger
	reg    prometheus.Registerer
	mux    *http.ServeMux

	// limits are the local limits by name (Limit), shared by the kinds
	// that draw on one; series pre-create the kinds' series of a project
	// (SetProjects).
	mu       sync.Mutex
	limits   map[string]*Limiter
	limited  *prometheus.CounterVec
	series   []func(project string)
	projects []string
}

// New validates cfg and serves the routes of e's kinds: those whose
// routes are on (engine.Config.On) add theirs, the others answer 404
// saying how to turn them on. Metrics register with reg (when not nil).
func New(e *engine.Engine, reg prometheus.Registerer, cfg Config, logger log.Logger) (*Gateway, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("gateway config: %w", err)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if logger == nil {
		logger = log.NewNopLogger()
	}
	g := &Gateway{engine: e, cfg: cfg, logger: logger, reg: reg, mux: http.NewServeMux(), limits: map[string]*Limiter{}, limited: newLimited()}
	if err := g.Register(g.limited); err != nil {
		return nil, err
	}
	for _, k := range e.Kinds() {
		d := k.Declare()
		if !e.Config().On[d.Name] {
			g.mux.Handle(d.Routes.Prefix, disabled(d))
			continue
		}
		r, ok := k.(Routed)
		if !ok {
			return nil, fmt.Errorf("gateway: kind %s has no routes", d.Name)
		}
		if err := r.Routes(g); err != nil {
			return nil, fmt.Errorf("gateway: %s: %w", d.Name, err)
		}
	}
	g.mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { WriteError(w, http.StatusNotFound, "not found") })
	g.SetProjects(e.Accepts(cfg.Projects))
	return g, nil
}

// newLimited counts the requests each local limit (Limit) refused.
func newLimited() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mintlify_gateway_requests_limited_total",
		Help: "Requests a local limit of the gateway refused (429, nothing sent upstream), by limit.",
	}, []string{"limit"})
}

// Series adds what pre-creates a kind's series of its routes of a project
// (at 0), called for each project the gateway accepts (SetProjects).
func (g *Gateway) Series(fn func(project string)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.series = append(g.series, fn)
}

// SetProjects pre-creates the kinds' series of the routes of projects (at
// start, and for a configuration reload): each kind's for the projects
// that take it.
func (g *Gateway) SetProjects(projects []string) {
	g.mu.Lock()
	series := slices.Clone(g.series)
	g.projects = slices.Clone(projects)
	g.mu.Unlock()
	for _, p := range projects {
		for _, fn := range series {
			fn(p)
		}
	}
}

// Projects are the projects the gateway accepts (the last SetProjects).
func (g *Gateway) Projects() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.projects)
}

func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) { g.mux.ServeHTTP(w, r) }

// Engine is the engine whose operations the gateway serves.
func (g *Gateway) Engine() *engine.Engine { return g.engine }

// Config is the gateway's configuration.
func (g *Gateway) Config() *Config { return &g.cfg }

// Logger is the gateway's logger.
func (g *Gateway) Logger() log.Logger { return g.logger }

// Register registers a kind's own families of its routes (its
// requests refused or answered, by reason).
func (g *Gateway) Register(c prometheus.Collector) error {
	if g.reg == nil {
		return nil
	}
	if err := g.reg.Register(c); err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	return nil
}

// HandleFunc registers h as it is (a kind's dispatcher of paths the mux
// cannot tell apart, or its 405 for a known path).
func (g *Gateway) HandleFunc(pattern string, h http.HandlerFunc) { g.mux.HandleFunc(pattern, h) }

// Handle registers h for kind's route pattern (with {projectId}) behind
// the one rule for projects and ids: 404 when the exporter does not know
// the project at all, 403 when it exports the project but the project does
// not take the kind (naming the setting to change), 400 for a path value
// or ?intent= no operation's id can be.
func (g *Gateway) Handle(kind *engine.Decl, pattern string, h func(w http.ResponseWriter, r *http.Request, project string)) {
	g.mux.HandleFunc(pattern, g.Guard(kind, h))
}

// Guard is h behind the rule of Handle, for a kind's dispatcher.
func (g *Gateway) Guard(kind *engine.Decl, h func(w http.ResponseWriter, r *http.Request, project string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		project := r.PathValue("projectId")
		if _, ok := g.engine.Takes(kind.Name, project); !ok {
			g.refuse(w, kind, project)
			return
		}
		if badIDs(w, r) {
			return
		}
		h(w, r, project)
	}
}

// refuse answers a route of kind for a project that does not take it, by
// the one rule of every kind's routes: 404 when the exporter does not know
// the project at all (nothing of it exists here), 403 when it exports the
// project but the project does not take the kind (it exists, and this
// exporter refuses it: the setting to change is named).
func (g *Gateway) refuse(w http.ResponseWriter, kind *engine.Decl, project string) {
	s := kind.Setting
	if g.cfg.Exported != nil && g.cfg.Exported(project) {
		how := s.Key + ": false in --config.file; set " + s.Key + ": true on it, as every --mintlify.project of the flags has"
		if s.IDs != nil {
			how = "list them under " + s.Key + ": on it in --config.file"
		}
		WriteError(w, http.StatusForbidden, "this project does not take "+s.Noun+" through the exporter ("+how+")")
		return
	}
	WriteError(w, http.StatusNotFound, "project not found: it is not configured in this exporter (--mintlify.project, or projects: in --config.file)")
}

// disabled is what a kind's routes answer while they are off: 404 in
// JSON, saying how to turn them on.
func disabled(d *engine.Decl) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		WriteError(w, http.StatusNotFound, "the "+d.Setting.Noun+" routes are disabled; start the exporter with --"+d.Routes.Flag)
	})
}

// Disabled is what /api/ answers when no kind's routes are on: each
// kind's prefix says how to turn its routes on.
func Disabled() http.Handler {
	mux := http.NewServeMux()
	for _, k := range engine.Kinds() {
		mux.Handle(k.Declare().Routes.Prefix, disabled(k.Declare()))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { WriteError(w, http.StatusNotFound, "not found") })
	return mux
}

// badIDs answers 400 and reports true when a path value of the route
// that matched r (its pattern's wildcards, apart from the project, which
// Takes checks) or the ?intent= of r is not an id any operation can have,
// before a handler runs: no route stores, logs, answers or sends an id of
// 10,000 characters, or one with a NUL or a newline. The wildcards come
// from the pattern, so a kind's new route is checked without a list here.
func badIDs(w http.ResponseWriter, r *http.Request) bool {
	for rest := r.Pattern; ; {
		open, end := strings.IndexByte(rest, '{'), strings.IndexByte(rest, '}')
		if open < 0 || end < open {
			break
		}
		name := strings.TrimSuffix(rest[open+1:end], "...")
		rest = rest[end+1:]
		if v := r.PathValue(name); name != "projectId" && v != "" {
			if err := bounded.CheckID(name, v); err != nil {
				WriteError(w, http.StatusBadRequest, err.Error())
				return true
			}
		}
	}
	if r.URL.Query().Has("intent") {
		if err := bounded.CheckID("intent id", r.URL.Query().Get("intent")); err != nil {
			WriteError(w, http.StatusBadRequest, err.Error())
			return true
		}
	}
	return false
}

// HandoffRequest is the request that settles an operation acknowledged
// upstream but not saved (engine.Unsaved) on whichever replica runs the
// gateway: the route an operator uses for an outcome it found, its kind's
// track with ?intent=, so that the operation is followed, its
// Idempotency-Key bound to it and its intent deleted in one write.
func HandoffRequest(ctx context.Context, u engine.Unsaved) (*http.Request, error) {
	k, ok := engine.Lookup(u.Kind)
	if !ok {
		return nil, fmt.Errorf("handing over an operation of unknown kind %q", u.Kind)
	}
	path := fmt.Sprintf(k.Declare().Routes.Track, url.PathEscape(u.Project), url.PathEscape(u.ID))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://handoff"+path+"?intent="+url.QueryEscape(u.Intent), http.NoBody)
	if err != nil {
		return nil, fmt.Errorf("handing over %s %s: %w", u.Kind, u.ID, err)
	}
	req.RemoteAddr = "handoff"
	return req, nil
}

// Context is the context of a call upstream for r: detached from the
// client's connection (a client that hangs up must not leave an operation
// started but unrecorded behind), bounded by UpstreamTimeout, and carrying
// the basic-auth user for the record.
func (g *Gateway) Context(r *http.Request) (context.Context, context.CancelFunc) {
	user, _ := ClientOf(r)
	return context.WithTimeout(engine.WithUser(context.WithoutCancel(r.Context()), user), g.cfg.UpstreamTimeout)
}

// Audit logs an accepted request at info: what, for which project and
// operation (idKey names its id: the kind's key of every log line), by
// whom (the basic-auth user, when there is one) and from where, with its
// Idempotency-Key. Fields of kv whose value is an empty string are left
// out: an empty field reads as a value that was lost.
func (g *Gateway) Audit(r *http.Request, msg, project, idKey, id, key string, kv ...any) {
	user, remote := ClientOf(r)
	args := []any{"msg", msg, "project", project, idKey, id}
	if user != "" {
		args = append(args, "user", user)
	}
	args = append(args, "remote", remote)
	if remote != r.RemoteAddr {
		args = append(args, "via", r.RemoteAddr)
	}
	if key != "" {
		args = append(args, "idempotency_key", key)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if s, ok := kv[i+1].(string); ok && s == "" {
			continue
		}
		args = append(args, kv[i], kv[i+1])
	}
	level.Info(g.logger).Log(args...)
}

type clientKey struct{}

// Client is who sent a request another replica forwarded, as that replica
// saw it: its address and basic-auth user.
type Client struct {
	Addr, User string
}

// WithClient marks ctx as a forwarded request's, sent by c. Only a request
// whose forwarding replica was authenticated may carry it (package
// leader): a client cannot name itself.
func WithClient(ctx context.Context, c Client) context.Context {
	return context.WithValue(ctx, clientKey{}, c)
}

// ClientOf is the user and address of r's client: those the forwarding
// replica passed (WithClient), else r's own.
func ClientOf(r *http.Request) (user, addr string) {
	if c, ok := r.Context().Value(clientKey{}).(Client); ok {
		return c.User, c.Addr
	}
	user, _, _ = r.BasicAuth()
	return user, r.RemoteAddr
}

// Organization is the organization whose limits project draws on.
func (g *Gateway) Organization(project string) string {
	if g.cfg.Organization == nil {
		return ""
	}
	return g.cfg.Organization(project)
}
