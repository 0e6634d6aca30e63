package exporter

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/gateway"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/leader"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sharedredis"
	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
)

// operations are the gateway and its engine as Serve runs them: in this
// process on its state file (local), or on whichever replica holds them
// when replicas share a Redis (leader.Leader).
type operations interface {
	http.Handler
	// Status is the operations for the status page (nil: none here).
	Status() *status.Jobs
	// Follow reads from the state the operations of the projects of ids
	// not followed yet (a reload adds them), before any of them takes an
	// operation: a reload whose new projects' state cannot be read fails
	// and changes nothing.
	Follow(ids []string) error
	// SetProjects makes a reload's projects take operations.
	SetProjects(ids []string)
	// Run polls until ctx ends, then records what is under way and closes
	// the state.
	Run(ctx context.Context)
}

// local is an engine and its gateway in this process.
type local struct {
	*gateway.Gateway
	e      *engine.Engine
	logger log.Logger
}

// newLocal opens the engine's state (ecfg.StatePath, or ecfg.Store) and
// puts the gateway in front of it; projects a reload added since the
// start (a term that starts later on replicas) are followed too.
func newLocal(api any, reg prometheus.Registerer, ecfg engine.Config, gcfg gateway.Config, logger log.Logger) (*local, error) {
	e, err := engine.New(api, reg, ecfg, logger)
	if err != nil {
		return nil, fmt.Errorf("operations: %w", err)
	}
	if err := e.Follow(gcfg.Projects); err != nil {
		_ = e.Close()
		return nil, err
	}
	g, err := gateway.New(e, reg, gcfg, logger)
	if err != nil {
		_ = e.Close()
		return nil, fmt.Errorf("gateway: %w", err)
	}
	return &local{Gateway: g, e: e, logger: logger}, nil
}

// sectioned is a kind whose operations have a section of the status page
// (every kind).
type sectioned interface {
	Section(now time.Time) status.Section
}

// Status is every kind's section of the status page, and the poll
// furthest past its time.
func (l *local) Status() *status.Jobs {
	now := l.e.Now()
	out := &status.Jobs{}
	for _, k := range l.e.Kinds() {
		if s, ok := k.(sectioned); ok {
			out.Sections = append(out.Sections, s.Section(now))
		}
	}
	if d, ok := l.e.MostOverdue(); ok {
		out.MostOverduePoll = &status.Poll{Project: d.Project, Kind: d.Kind, JobID: d.ID, DueAt: d.At}
	}
	return out
}

func (l *local) Follow(ids []string) error { return l.e.Follow(ids) }

// SetProjects follows ids (Follow has read them, or it reads them now: a
// term started since on replicas), and pre-creates their series.
func (l *local) SetProjects(ids []string) {
	if err := l.e.Follow(ids); err != nil {
		level.Error(l.logger).Log("msg", "projects added by the reload take no operation: their state could not be read", "err", err)
	}
	l.Gateway.SetProjects(l.e.Accepts(ids))
}

func (l *local) Run(ctx context.Context) {
	if err := l.e.Run(ctx); err != nil {
		level.Error(l.logger).Log("msg", "engine stopped", "err", err)
	}
	l.Close()
}

// Close closes the engine's state (Run does it when it ends).
func (l *local) Close() {
	if err := l.e.Close(); err != nil {
		level.Error(l.logger).Log("msg", "engine", "err", err)
	}
}

// replicated runs the gateway on the replica that holds it, with the state
// in the shared Redis; projects are the configuration's, kept current by
// reloads for the terms that start later.
func replicated(shared *sharedredis.Client, cc config.Cluster, owner, listen string, api any, reg prometheus.Registerer,
	ecfg engine.Config, gcfg gateway.Config, projects *atomic.Pointer[[]string], logger log.Logger) (*leader.Leader, error) {
	advertise := cc.AdvertiseURL
	if advertise == "" {
		var err error
		if advertise, err = defaultAdvertiseURL(listen); err != nil {
			return nil, fmt.Errorf("gateway on replicas: %w; set --cluster.advertise-url (cluster.advertise_url)", err)
		}
	}
	secret, err := sharedredis.ForwardSecret(&cc)
	if err != nil {
		return nil, fmt.Errorf("gateway on replicas: %w", err)
	}
	start := func(ctx context.Context, st engine.Store, treg prometheus.Registerer) (*leader.Term, error) {
		ec, gc := ecfg, gcfg
		ec.Store, gc.Projects = st, *projects.Load()
		l, err := newLocal(api, treg, ec, gc, logger)
		if err != nil {
			return nil, err
		}
		tctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { // owned by the term: Stop waits for it
			defer close(done)
			l.Run(tctx)
		}()
		return &leader.Term{Handler: l, Status: l.Status, Follow: l.Follow, SetProjects: l.SetProjects, Stop: func() { cancel(); <-done },
			Unsaved: l.e.Unsaved}, nil
	}
	return leader.New(leader.Options{Cluster: shared, Owner: owner, Advertise: advertise, LeaseDuration: cc.LeaseDuration,
		Start: start, ForwardSecret: secret, Registerer: reg, Logger: logger})
}

// defaultAdvertiseURL is http:// this host's first non-loopback address
// and the port of the listen address.
func defaultAdvertiseURL(listen string) (string, error) {
	_, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("listen address %q: %w", listen, err)
	}
	if _, err := strconv.Atoi(port); err != nil {
		return "", fmt.Errorf("listen address %q: no numeric port", listen)
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", fmt.Errorf("reading this host's addresses: %w", err)
	}
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && ip.IP.IsGlobalUnicast() {
			return "http://" + net.JoinHostPort(ip.IP.String(), port), nil
		}
	}
	return "", fmt.Errorf("no non-loopback address on this host")
}

// jobsPart is the operations as Serve wires them: the gateway's handler,
// what the status page reads of them, their share of applying a
// configuration (prepare, then commit) and their start and stop.
type jobsPart struct {
	ops operations // nil: the gateway is off
	// replica authenticates requests another replica forwarded (nil:
	// no replicas).
	replica func(*http.Request) (*http.Request, error)
	// on are the kinds whose routes are on; cfg is the configuration the
	// last reload applied, and projects its projects.
	on       map[string]bool
	cfg      atomic.Pointer[config.Config]
	projects *atomic.Pointer[[]string]
	// closeIdle closes the local state when Run never took it over (an
	// early return of Serve); stopRun ends Run once started.
	closeIdle, stopRun func()
}

// jobsSettings are what the operations are built from.
type jobsSettings struct {
	o      *Options
	cfg    *config.Config
	engine engine.Config // with the state path of this run
	shared *sharedredis.Client
	owner  string
	api    any
	reg    prometheus.Registerer
	logger log.Logger
}

// newJobs opens the engine's state (and locks it), or with replicas joins
// the election for the gateway; the gateway is off when no kind's routes
// are on.
func newJobs(s jobsSettings) (*jobsPart, error) {
	j := &jobsPart{on: s.o.Gateway.Kinds(), projects: &atomic.Pointer[[]string]{}, closeIdle: func() {}, stopRun: func() {}}
	j.store(s.cfg)
	if !s.o.Gateway.Serves() {
		return j, nil
	}
	ecfg := s.engine
	ecfg.Projects, ecfg.On = s.cfg.ProjectIDs(), j.on
	ecfg.Takes = func(kind, project string) ([]string, bool) {
		if p, ok := j.cfg.Load().Project(project); ok {
			return p.Takes(kind)
		}
		return nil, false
	}
	gcfg := s.o.Gateway.Config
	gcfg.Projects = *j.projects.Load()
	gcfg.Organization = func(id string) string { return j.cfg.Load().OrganizationOf(id) }
	gcfg.Exported = func(id string) bool { _, ok := j.cfg.Load().Project(id); return ok }
	if s.shared != nil {
		listen := (*s.o.Server.Web.WebListenAddresses)[0]
		l, err := replicated(s.shared, s.cfg.Cluster, s.owner, listen, s.api, s.reg, ecfg, gcfg, j.projects, s.logger)
		if err != nil {
			return nil, err
		}
		j.ops, j.replica = l, l.Authenticate
		return j, nil
	}
	l, err := newLocal(s.api, s.reg, ecfg, gcfg, s.logger)
	if err != nil {
		return nil, err
	}
	j.ops, j.closeIdle = l, l.Close
	return j, nil
}

// handler is the gateway, or what answers under /api/ when it is off.
func (j *jobsPart) handler() http.Handler {
	if j.ops == nil {
		return gateway.Disabled()
	}
	return j.ops
}

// prepare reads from the state the operations of the projects cfg adds,
// before any of them takes one. It either fails and changes nothing, or
// succeeds and the engine follows them: applying a configuration runs it
// last of the prepares, so that nothing after it fails.
func (j *jobsPart) prepare(cfg *config.Config) error {
	if j.ops == nil {
		return nil
	}
	return j.ops.Follow(cfg.ProjectIDs())
}

// commit makes cfg's projects take operations (prepare read them).
func (j *jobsPart) commit(cfg *config.Config) {
	j.store(cfg)
	if j.ops != nil {
		j.ops.SetProjects(*j.projects.Load())
	}
}

// store keeps what the gateway reads of cfg.
func (j *jobsPart) store(cfg *config.Config) {
	j.cfg.Store(cfg)
	j.projects.Store(new(cfg.ProjectIDs()))
}

// start runs the engine (owned by wg) until stop; from here on Run closes
// the state.
func (j *jobsPart) start(wg *sync.WaitGroup) {
	if j.ops == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	j.closeIdle, j.stopRun = func() {}, cancel
	wg.Go(func() { j.ops.Run(ctx) })
}

// stop ends the engine, once the server has stopped: requests in flight
// have finished and every operation they acknowledged is recorded. Before
// start it closes the state.
func (j *jobsPart) stop() {
	j.stopRun()
	j.closeIdle()
}

// report adds the operations and the links to the status page's report:
// metrics, health, and each kind's list of each project that takes it.
func (j *jobsPart) report(r *status.Report, telemetryPath string) {
	r.Links = []status.Link{{Text: "Metrics", Href: telemetryPath}, {Text: "Health", Href: "/-/healthy"}}
	if j.ops == nil {
		return
	}
	r.Jobs = j.ops.Status()
	cfg := j.cfg.Load()
	for _, k := range engine.Kinds() {
		d := k.Declare()
		for _, p := range cfg.Projects {
			if _, ok := p.Takes(d.Name); ok && j.on[d.Name] {
				r.Links = append(r.Links, status.Link{Text: d.Routes.Title + " of " + p.ID, Href: fmt.Sprintf(d.Routes.List, url.PathEscape(p.ID))})
			}
		}
	}
}

// gatewayName names what the gateway serves, for its log line: the kinds
// of operation whose routes are on, e.g. "agent job and automation run
// gateway".
func gatewayName(on map[string]bool) string {
	var kinds []string
	for _, k := range engine.Kinds() {
		if d := k.Declare(); on[d.Name] {
			kinds = append(kinds, d.What)
		}
	}
	if len(kinds) > 1 {
		return strings.Join(kinds[:len(kinds)-1], ", ") + " and " + kinds[len(kinds)-1] + " gateway"
	}
	return strings.Join(kinds, "") + " gateway"
}
