package exporter

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/gateway"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/leader"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/tracker"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sharedredis"
	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
)

// agentJobs is the agent job gateway as Serve runs it: in this process on
// its state file (localJobs), or on whichever replica holds it when
// replicas share a Redis (leader.Leader).
type agentJobs interface {
	http.Handler
	// Status is the jobs for the status page (nil: none here).
	Status() *status.Jobs
	// Follow reads from the state the jobs of the projects of ids not
	// followed yet (a reload adds them), before any of them accepts a
	// job: a reload whose new projects' jobs cannot be read fails and
	// changes nothing.
	Follow(ids []string) error
	// SetProjects changes the projects that accept jobs (a reload).
	SetProjects(ids []string)
	// Run polls until ctx ends, then records what is under way and closes
	// the state.
	Run(ctx context.Context)
}

// localJobs is a tracker and its gateway in this process.
type localJobs struct {
	*gateway.Gateway
	trk    *tracker.Tracker
	logger log.Logger
}

// newLocalJobs opens the tracker's state (trkCfg.StatePath, or
// trkCfg.Store) and puts the gateway in front of it.
func newLocalJobs(api tracker.Upstream, reg prometheus.Registerer, trkCfg tracker.Config, gwCfg gateway.Config, logger log.Logger) (*localJobs, error) {
	trk, err := tracker.New(api, reg, trkCfg, logger)
	if err != nil {
		return nil, fmt.Errorf("agent jobs: %w", err)
	}
	// Agent projects a reload added since the start (a term that starts
	// later on replicas) are followed too.
	followed := gwCfg.Projects
	if gwCfg.DeploymentProjects != nil {
		followed = append(slices.Clone(followed), gwCfg.DeploymentProjects()...)
	}
	if gwCfg.ExportProjects != nil {
		followed = append(slices.Clone(followed), gwCfg.ExportProjects()...)
	}
	if gwCfg.AutomationProjects != nil {
		followed = append(slices.Clone(followed), gwCfg.AutomationProjects()...)
	}
	if err := trk.AddProjects(followed); err != nil {
		_ = trk.Close()
		return nil, err
	}
	gw, err := gateway.New(trk, reg, gwCfg, logger)
	if err != nil {
		_ = trk.Close()
		return nil, fmt.Errorf("agent job gateway: %w", err)
	}
	return &localJobs{Gateway: gw, trk: trk, logger: logger}, nil
}

func (j *localJobs) Status() *status.Jobs { return j.trk.Status() }

func (j *localJobs) Follow(ids []string) error { return j.trk.AddProjects(ids) }

// SetProjects accepts jobs for ids, once followed: Follow has read their
// jobs, or it reads them now (a term started since Follow on replicas).
func (j *localJobs) SetProjects(ids []string) {
	if err := j.trk.AddProjects(ids); err != nil {
		level.Error(j.logger).Log("msg", "projects added by the reload do not accept agent jobs: their state could not be read", "err", err)
	}
	j.Gateway.SetProjects(j.trk.Accepts(ids))
}

func (j *localJobs) Run(ctx context.Context) {
	if err := j.trk.Run(ctx); err != nil {
		level.Error(j.logger).Log("msg", "agent job tracker stopped", "err", err)
	}
	j.Close()
}

// Close closes the tracker's state (Run does it when it ends).
func (j *localJobs) Close() {
	if err := j.trk.Close(); err != nil {
		level.Error(j.logger).Log("msg", "agent job tracker", "err", err)
	}
}

// replicatedJobs runs the gateway on the replica that holds it, with the
// job state in the shared Redis; projects are the agent projects, kept
// current by reloads for the terms that start later.
func replicatedJobs(shared *sharedredis.Client, cc config.Cluster, owner, listen string, api tracker.Upstream, reg prometheus.Registerer,
	trkCfg tracker.Config, gwCfg gateway.Config, projects *atomic.Pointer[[]string], logger log.Logger) (*leader.Leader, error) {
	advertise := cc.AdvertiseURL
	if advertise == "" {
		var err error
		if advertise, err = defaultAdvertiseURL(listen); err != nil {
			return nil, fmt.Errorf("agent job gateway on replicas: %w; set --cluster.advertise-url (cluster.advertise_url)", err)
		}
	}
	secret, err := sharedredis.ForwardSecret(&cc)
	if err != nil {
		return nil, fmt.Errorf("agent job gateway on replicas: %w", err)
	}
	start := func(ctx context.Context, st tracker.StateStore, treg prometheus.Registerer) (*leader.Term, error) {
		tc, gc := trkCfg, gwCfg
		tc.Store, gc.Projects = st, *projects.Load()
		j, err := newLocalJobs(api, treg, tc, gc, logger)
		if err != nil {
			return nil, err
		}
		tctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { // owned by the term: Stop waits for it
			defer close(done)
			j.Run(tctx)
		}()
		return &leader.Term{Handler: j, Status: j.Status, Follow: j.Follow, SetProjects: j.SetProjects, Stop: func() { cancel(); <-done },
			Unsaved: j.trk.Unsaved}, nil
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

// jobsPart is the jobs subsystem as Serve wires it: the gateway's handler,
// what the status page reads of it, its share of applying a configuration
// (prepare, then commit) and its start and stop.
type jobsPart struct {
	jobs agentJobs // nil: the gateway is off
	// replica authenticates requests another replica forwarded (nil:
	// no replicas).
	replica func(*http.Request) (*http.Request, error)
	// agentProjects accept jobs; exported are every project, for the
	// gateway's 404; deployProjects take deployments; orgOf names each
	// project's organization. All as the last configuration applied left
	// them.
	agentProjects, exported, deployProjects, exportProjects *atomic.Pointer[[]string]
	orgOf                                                   *atomic.Pointer[map[string]string]
	// closeIdle closes the local state when Run never took it over (an
	// early return of Serve); stopRun ends Run once started.
	closeIdle, stopRun func()
	// agentOn and deploymentsOn: --web.enable-agent-api and
	// --web.enable-deployment-api.
	agentOn, deploymentsOn bool
	// exportsOn: --web.enable-static-export-api.
	exportsOn bool
	// autoProjects take automation triggers; named are each project's
	// automations named, others those that allow any other.
	autoProjects atomic.Pointer[[]string]
	named        atomic.Pointer[map[string][]string]
	others       atomic.Pointer[map[string]bool]
	// automationsOn: --web.enable-automation-api.
	automationsOn bool
}

// jobsSettings are what the jobs subsystem is built from.
type jobsSettings struct {
	o       *Options
	cfg     *config.Config
	tracker tracker.Config // with the state path of this run
	shared  *sharedredis.Client
	owner   string
	api     tracker.Upstream
	reg     prometheus.Registerer
	logger  log.Logger
}

// newJobs opens the tracker's state (and locks it), or with replicas
// joins the election for the gateway; the gateway is off when not enabled.
func newJobs(s jobsSettings) (*jobsPart, error) {
	j := &jobsPart{agentProjects: &atomic.Pointer[[]string]{}, exported: &atomic.Pointer[[]string]{},
		deployProjects: &atomic.Pointer[[]string]{}, exportProjects: &atomic.Pointer[[]string]{}, orgOf: &atomic.Pointer[map[string]string]{},
		closeIdle: func() {}, stopRun: func() {}}
	j.agentOn, j.deploymentsOn, j.exportsOn = s.o.Gateway.Enabled, s.o.Gateway.Deployments, s.o.Gateway.StaticExports
	j.automationsOn = s.o.Gateway.Automations
	j.store(s.cfg)
	if !s.o.Gateway.On() {
		return j, nil
	}
	trkCfg := s.tracker
	trkCfg.Projects = s.cfg.ProjectIDs()
	trkCfg.Deployments = s.o.Gateway.Deployments
	trkCfg.StaticExports = s.o.Gateway.StaticExports
	trkCfg.Automations = j.automations
	gwCfg := s.o.Gateway.Config
	gwCfg.Projects = *j.agentProjects.Load()
	gwCfg.NoAgentJobs = !s.o.Gateway.Enabled
	gwCfg.Deployments = s.o.Gateway.Deployments
	gwCfg.DeploymentProjects = func() []string { return *j.deployProjects.Load() }
	gwCfg.StaticExports = s.o.Gateway.StaticExports
	gwCfg.ExportProjects = func() []string { return *j.exportProjects.Load() }
	gwCfg.Organization = func(id string) string { return (*j.orgOf.Load())[id] }
	gwCfg.Automations = s.o.Gateway.Automations
	gwCfg.AutomationProjects = func() []string { return *j.autoProjects.Load() }
	gwCfg.NamedAutomations = func(id string) ([]string, bool) { return (*j.named.Load())[id], (*j.others.Load())[id] }
	gwCfg.Exported = func(id string) bool { return slices.Contains(*j.exported.Load(), id) }
	if s.shared != nil {
		listen := (*s.o.Server.Web.WebListenAddresses)[0]
		leader, err := replicatedJobs(s.shared, s.cfg.Cluster, s.owner, listen, s.api, s.reg, trkCfg, gwCfg, j.agentProjects, s.logger)
		if err != nil {
			return nil, err
		}
		j.jobs, j.replica = leader, leader.Authenticate
		return j, nil
	}
	local, err := newLocalJobs(s.api, s.reg, trkCfg, gwCfg, s.logger)
	if err != nil {
		return nil, err
	}
	j.jobs, j.closeIdle = local, local.Close
	return j, nil
}

// handler is the gateway, or what answers under /api/ when it is off.
func (j *jobsPart) handler() http.Handler {
	if j.jobs == nil {
		return gateway.Disabled()
	}
	return j.jobs
}

// prepare reads from the state the jobs of the agent projects cfg adds,
// before any of them accepts a job. It either fails and changes nothing,
// or succeeds and the tracker follows them: applying a configuration
// runs it last of the prepares, so that nothing after it fails.
func (j *jobsPart) prepare(cfg *config.Config) error {
	if j.jobs == nil {
		return nil
	}
	follow := cfg.AgentProjects()
	if j.deploymentsOn {
		follow = append(follow, cfg.DeploymentProjects()...)
	}
	if j.exportsOn {
		follow = append(follow, cfg.ExportProjects()...)
	}
	if j.automationsOn {
		follow = append(follow, cfg.AutomationProjects()...)
	}
	return j.jobs.Follow(follow)
}

// commit makes cfg's agent projects accept jobs (prepare read them).
func (j *jobsPart) commit(cfg *config.Config) {
	if j.jobs == nil {
		return
	}
	j.store(cfg)
	j.jobs.SetProjects(*j.agentProjects.Load())
}

// store keeps what the gateway reads of cfg: the projects that accept
// jobs and deployments (none when deployments are off), every project,
// and each project's organization.
func (j *jobsPart) store(cfg *config.Config) {
	var agent []string
	if j.agentOn {
		agent = cfg.AgentProjects()
	}
	j.agentProjects.Store(&agent)
	j.exported.Store(new(cfg.ProjectIDs()))
	var deploy []string
	if j.deploymentsOn {
		deploy = cfg.DeploymentProjects()
	}
	j.deployProjects.Store(&deploy)
	var export []string
	if j.exportsOn {
		export = cfg.ExportProjects()
	}
	j.exportProjects.Store(&export)
	var auto []string
	named, others := cfg.NamedAutomations()
	if j.automationsOn {
		auto = cfg.AutomationProjects()
	}
	j.autoProjects.Store(&auto)
	j.named.Store(&named)
	j.others.Store(&others)
	orgs := make(map[string]string, len(cfg.Projects))
	for _, p := range cfg.Projects {
		orgs[p.ID] = p.Organization
	}
	j.orgOf.Store(&orgs)
}

// start runs the tracker (owned by wg) until stop; from here on Run
// closes the state.
func (j *jobsPart) start(wg *sync.WaitGroup) {
	if j.jobs == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	j.closeIdle, j.stopRun = func() {}, cancel
	wg.Go(func() { j.jobs.Run(ctx) })
}

// stop ends the tracker, once the server has stopped: requests in flight
// have finished and every job they acknowledged is recorded. Before start
// it closes the state.
func (j *jobsPart) stop() {
	j.stopRun()
	j.closeIdle()
}

// report adds the jobs and their links to the status page's report.
func (j *jobsPart) report(r *status.Report, telemetryPath string) {
	r.Links = links(telemetryPath, nil, nil)
	if j.jobs != nil {
		r.Jobs = j.jobs.Status()
		r.Links = links(telemetryPath, *j.agentProjects.Load(), *j.deployProjects.Load(), *j.exportProjects.Load()...)
	}
}

// automations is the tracker's view of the automations a project takes
// (tracker.Config.Automations): those named, and whether it takes any.
func (j *jobsPart) automations(project string) ([]string, bool) {
	return (*j.named.Load())[project], slices.Contains(*j.autoProjects.Load(), project)
}
