// Package exporter wires the exporter's parts together for its two long
// running commands: serve (metrics, the status page, the job gateway,
// reloads) and backfill. main parses and validates the settings; each part
// owns its own.
package exporter

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/common/version"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/collector"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/history"
	"github.com/mintlify-exporter/mintlify_exporter/internal/logging"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/gateway"
	_ "github.com/mintlify-exporter/mintlify_exporter/internal/ops/kinds" // every kind of operation, registered
	"github.com/mintlify-exporter/mintlify_exporter/internal/orgs"
	"github.com/mintlify-exporter/mintlify_exporter/internal/refresh"
	"github.com/mintlify-exporter/mintlify_exporter/internal/secrets"
	"github.com/mintlify-exporter/mintlify_exporter/internal/server"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sharedredis"
)

const exporterName = "mintlify_exporter"

// Options are the validated settings, each part's own.
type Options struct {
	Config *config.Flags
	// Analytics is the configuration parsed with the flags (keys not
	// read yet); reloads read it again.
	Analytics *config.Config
	Plan      refresh.Config
	Sandbox   bool
	Client    *orgs.ClientFlags
	Server    server.Flags
	Engine    *engine.Flags
	Gateway   *gateway.Flags
	Backfill  *history.Flags
}

// loader returns what reads the analytics configuration and its keys: at
// start, and again at every reload (the key files too, for rotation).
func loader(o *Options, sb *fakeapi.Sandbox, redactor *secrets.Redactor) func() (*config.Config, error) {
	var defaults []string
	if o.Sandbox {
		defaults = fakeapi.SandboxProjects
	}
	return func() (*config.Config, error) {
		cfg := o.Analytics // parsed with the flags, at start
		o.Analytics = nil
		if cfg == nil {
			var err error
			if cfg, err = o.Config.Build(o.Plan.MinInterval, defaults); err != nil {
				return nil, err
			}
		}
		if len(cfg.Projects) == 0 {
			return nil, errors.New("no project: give --mintlify.project at least once, or --config.file (or try --mintlify.sandbox)")
		}
		for i := range cfg.Projects {
			// A path echoing the key never becomes a label.
			cfg.Projects[i].Paths.Redact = redactor.String
		}
		if sb != nil {
			sb.Keys(cfg)
			return cfg, nil
		}
		return cfg, cfg.LoadKeys(os.Getenv)
	}
}

// upstream starts the sandbox when asked (owned by wg until ctx ends) and
// returns the settings every organization's client and plan share, and the
// shared Redis when the configuration has one (the caller closes it).
func upstream(ctx context.Context, o *Options, cfg *config.Config, loggers logging.Loggers, reg prometheus.Registerer, client *apiclient.Metrics, sb *fakeapi.Sandbox, wg *sync.WaitGroup) (orgs.Settings, *sharedredis.Client, error) {
	logger := loggers.Logger
	s := orgs.Settings{Client: o.Client.Config, Refresh: o.Plan}
	var c *sharedredis.Client
	if cfg.Cluster.Enabled() {
		// Replicas share each organization's budget in Redis: every
		// request of every replica is paid there before it leaves.
		var err error
		if c, err = sharedredis.New(cfg.Cluster, reg, logger); err != nil {
			return s, nil, fmt.Errorf("cluster: %w", err)
		}
		wg.Go(func() { c.Run(ctx) }) // the health loop, until ctx ends
		s.Shared = func(org string) budget.SharedLedger { return budget.NewRedisLedger(c, org) }
	}
	s.Client.Metrics, s.Client.Logger, s.Client.Redactor = client, loggers.Logger, loggers.Redactor
	if sb == nil {
		return s, c, nil
	}
	url, wait, err := sb.Start(ctx, cfg, logger)
	if err != nil {
		return s, c, err
	}
	wg.Go(func() {
		if err := wait(); err != nil {
			level.Error(logger).Log("msg", "sandbox API stopped", "err", err)
		}
	})
	s.Client.BaseURL = url
	return s, c, nil
}

// Backfill runs the backfill command, organization by organization, until
// it is done or ctx ends.
func Backfill(ctx context.Context, o *Options, loggers logging.Loggers) error {
	var wg sync.WaitGroup
	var shared *sharedredis.Client
	// The sandbox's state directory goes last of all, once every goroutine
	// wg owns (the tracker's among them) has ended: a tracker still running
	// would find its state file deleted.
	removeDirs := func() {}
	defer func() { removeDirs() }()
	defer closeAfter(&wg, &shared)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sb := sandboxOf(o)
	cfg, err := loader(o, sb, loggers.Redactor)()
	if err != nil {
		return err
	}
	settings, shared, err := upstream(ctx, o, cfg, loggers, nil, apiclient.NewMetrics(nil), sb, &wg)
	if err != nil {
		return err
	}
	var orgsWithProjects []config.Organization
	for _, org := range cfg.Organizations {
		if len(cfg.ProjectsOf(org.Name)) > 0 {
			orgsWithProjects = append(orgsWithProjects, org)
		}
	}
	several := len(orgsWithProjects) > 1
	if several && (o.Backfill.Config.Output == "" || o.Backfill.Config.Output == "-") {
		return errors.New("--output: the configuration has several organizations, each backfilled on its own budget into its own output: give a file (or directory) name, OUTPUT-ORGANIZATION is written for each")
	}
	for _, org := range orgsWithProjects {
		// The projects as the plan reads them: each with its sources,
		// windows, time zone and paths.
		b := o.Backfill.Config
		b.Projects, b.PageSize, b.MaxPages = cfg.ProjectsOf(org.Name), o.Plan.PageSize, o.Plan.MaxPages
		if several {
			b.Output += "-" + org.Name
			if b.StateDir != "" {
				b.StateDir = filepath.Join(b.StateDir, org.Name)
			}
		}
		client, budget, err := orgs.Client(settings, org)
		if err != nil {
			return err
		}
		if err := history.Backfill(ctx, client, budget, b, os.Stderr); err != nil {
			return err
		}
	}
	return nil
}

// closeAfter waits for wg, then closes the shared Redis client, if any:
// the goroutines wg owns (the plans releasing their leases among them)
// use it until they end.
func closeAfter(wg *sync.WaitGroup, shared **sharedredis.Client) {
	wg.Wait()
	if *shared != nil {
		_ = (*shared).Close()
	}
}

func sandboxOf(o *Options) *fakeapi.Sandbox {
	if o.Sandbox {
		return fakeapi.NewSandbox()
	}
	return nil
}

// Serve runs the exporter until ctx ends. Every goroutine it starts has
// exited when it returns. It reads as its subsystems in the order they
// start; they stop in the reverse order (the deferred stops): the jobs
// first, once the server has stopped, the shared Redis last.
func Serve(ctx context.Context, o *Options, loggers logging.Loggers) error {
	logger := loggers.Logger
	var wg sync.WaitGroup
	var shared *sharedredis.Client
	// The sandbox's state directory goes last of all, once every goroutine
	// wg owns (the tracker's among them) has ended: a tracker still running
	// would find its state file deleted.
	removeDirs := func() {}
	defer func() { removeDirs() }()
	defer closeAfter(&wg, &shared)
	sb := sandboxOf(o)
	load := loader(o, sb, loggers.Redactor)
	cfg, err := load()
	if err != nil {
		return err
	}
	ledgerDir, trkCfg, remove, err := stateDirs(o, sb)
	if err != nil {
		return err
	}
	removeDirs = remove
	// Ends the goroutines wg owns when Serve returns early (a port in use).
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	reg := newRegistry()
	// The API client's series change only with its requests: /metrics
	// encodes them once per change (metricsOptions.Client), not in reg.
	client := apiclient.NewMetrics(nil)

	// The cluster (Redis) and the sandbox's API, which the others use.
	settings, shared, err := upstream(ctx, o, cfg, loggers, reg, client, sb, &wg)
	if err != nil {
		return err
	}
	owner := replicate(ctx, &wg, shared, &settings)
	// Analytics: the organizations, their budgets and plans.
	set, stopAnalytics, snaps := newAnalytics(ctx, settings, ledgerDir, logger)
	defer stopAnalytics()
	reg.MustRegister(set.KeyExpiry()) // every replica: its own configuration's dates
	// Web: the basic-auth front.
	front, err := server.NewAuthFront(server.AuthOptions{ConfigFile: *o.Server.Web.WebConfigFile, Logger: logger, Registerer: reg})
	if err != nil {
		return err
	}
	defer front.Close()
	// Jobs: the tracker opens (and locks) the state file before any
	// analytics request, so that a second exporter on the same file exits
	// before it walks. With replicas, the state is in Redis and one
	// replica at a time runs the gateway; the others forward to it.
	jobs, err := newJobs(jobsSettings{o: o, cfg: cfg, engine: trkCfg, shared: shared, owner: owner, api: set, reg: reg, logger: logger})
	if err != nil {
		return err
	}
	// The tracker stops first of all, once the server has: requests in
	// flight finish and every job they acknowledge is recorded.
	defer jobs.stop()
	if o.Gateway.Serves() {
		logGateway(logger, gatewayName(o.Gateway.Kinds()), front.Protected(), o.Sandbox, *o.Server.Web.WebConfigFile)
	}
	// The jobs were built from cfg: at the start, the organizations apply it.
	if err := set.Apply(cfg); err != nil {
		return err
	}
	keepSnapshotsOf(snaps, cfg, logger)
	level.Info(logger).Log("msg", "starting "+exporterName, "version", version.Info(), "build_context", version.BuildContext(),
		"organizations", len(cfg.Organizations), "projects", len(cfg.Projects), "config", cmp.Or(cfg.File, "flags"))
	configs := &applier{load: load, cluster: cfg.Cluster, orgs: set, jobs: jobs, current: cfg, logger: logger}
	reloader := NewReloader(reg, configs.reload, logger, nil)
	wg.Go(func() { reloader.WatchSignals(ctx) })

	// Web: the server, its routes and the status page.
	srv, err := newServer(ctx, &wg, &web{o: o, reg: reg, client: client, front: front, reloader: reloader, set: set, jobs: jobs,
		shared: shared, owner: owner, configFile: cfg.File, sandbox: sb != nil, started: time.Now(), snaps: snaps}, loggers)
	if err != nil {
		return err
	}
	jobs.start(&wg)
	return srv.Run(ctx)
}

// newRegistry is the exporter's registry, with the build information, Go
// and process collectors.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(versioncollector.NewCollector(exporterName), collectors.NewGoCollector(), collector.NewProcessCollector())
	return reg
}

// logGateway says who can reach the gateway: a warning when anyone can,
// but on the sandbox, whose jobs are simulated with no real key, so that
// the quick start logs no fault.
func logGateway(logger log.Logger, name string, protected, sandbox bool, webConfig string) {
	switch {
	case protected:
		level.Info(logger).Log("msg", name+" enabled under /api/, behind the basic auth of --web.config.file")
	case sandbox:
		level.Info(logger).Log("msg", name+" enabled under /api/ without basic auth, on the sandbox: its operations are simulated; with a real key set basic_auth_users in --web.config.file")
	default:
		level.Warn(logger).Log("msg", name+" enabled under /api/ without basic auth: anyone who can reach it can open pull requests or deploy the documentation; set basic_auth_users in --web.config.file", "web_config_file", webConfig)
	}
}
