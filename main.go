// Command mintlify_exporter exports Mintlify documentation analytics and
// agent jobs to Prometheus, and optionally acts as a gateway that submits
// agent jobs with a server-side API key and tracks each to its end.
//
// main.go only parses, validates and wires: each package owns its
// settings (defaults, flags, validation).
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	_ "time/tzdata" // time zones work on any base image, scratch included

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/collector"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/exposition"
	"github.com/mintlify-exporter/mintlify_exporter/internal/reload"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sandbox"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/flagvalue"
	"github.com/mintlify-exporter/mintlify_exporter/internal/gateway"
	"github.com/mintlify-exporter/mintlify_exporter/internal/history"
	"github.com/mintlify-exporter/mintlify_exporter/internal/logging"
	"github.com/mintlify-exporter/mintlify_exporter/internal/orgs"
	"github.com/mintlify-exporter/mintlify_exporter/internal/refresh"
	"github.com/mintlify-exporter/mintlify_exporter/internal/server"
	"github.com/mintlify-exporter/mintlify_exporter/internal/statecmd"
	"github.com/mintlify-exporter/mintlify_exporter/internal/tracker"
	"github.com/mintlify-exporter/mintlify_exporter/internal/webauth"
)

const (
	exporterName = "mintlify_exporter"
	// defaultPort is this exporter's default; see the README.
	defaultPort = ":9871"
)

// Commands.
const (
	cmdServe        = "serve"
	cmdBackfill     = "backfill"
	cmdHashPassword = "hash-password"
	cmdConfigCheck  = "config check"
)

// flags is everything the command line decides, each part owned by the
// package it configures.
type flags struct {
	command   string
	server    server.Flags
	maxReqs   *int
	logLevel  *string
	logFormat *string
	sandbox   bool

	config   *config.Flags
	client   *orgs.ClientFlags
	refresh  *refresh.Flags
	tracker  *tracker.Flags
	gateway  *gateway.Flags
	backfill *history.Flags
	state    *statecmd.Command

	// Validated settings.
	plan      refresh.Config
	analytics *config.Config // keys not read yet
	notice    string         // a deprecated flag was used
}

// parseFlags parses and validates args. Every error is one line naming
// its flag (or, for --config.file, every problem with its line).
func parseFlags(args []string) (*flags, error) {
	f := &flags{}
	app := kingpin.New(exporterName, "Prometheus exporter for Mintlify documentation analytics and agent jobs.")
	app.Version(version.Print(exporterName))
	app.HelpFlag.Short('h')
	app.UsageWriter(os.Stdout)
	app.ErrorWriter(io.Discard) // parse errors are printed once, by main

	// Flags every command shares: where the API is and what to read.
	f.logLevel = flagvalue.Enum(app, "log.level", "Only log messages with the given severity or above.", "info", logging.Levels...)
	f.logFormat = flagvalue.Enum(app, "log.format", "Output format of log messages.", "logfmt", logging.Formats...)
	app.Flag("mintlify.sandbox", "Serve a built-in simulation of the Mintlify API on loopback and export it; no key or project needed.").Default("false").BoolVar(&f.sandbox)
	f.config = config.RegisterFlags(app)
	f.client = orgs.RegisterClientFlags(app)
	f.refresh = refresh.RegisterFlags(app)

	serve := app.Command(cmdServe, "Serve metrics (the default).").Default()
	f.server.Web = kingpinflag.AddFlags(serve, defaultPort)
	serve.Flag("web.telemetry-path", "Path under which to expose metrics.").Default("/metrics").StringVar(&f.server.TelemetryPath)
	f.maxReqs = flagvalue.Int(serve, "web.max-requests", "Maximum number of parallel scrape requests. 0 disables the limit.", "40")
	f.tracker = tracker.RegisterFlags(serve)
	f.gateway = gateway.RegisterFlags(serve)

	f.backfill = history.RegisterFlags(app.Command(cmdBackfill, "Write the history of past days as OpenMetrics, for promtool tsdb create-blocks-from openmetrics."))
	app.Command(cmdHashPassword, "Read a password on standard input and print its bcrypt hash, for basic_auth_users in --web.config.file.")
	app.Command("config", "Work with the configuration file.").Command("check", "Validate --config.file, print what it exports and each organization's budget arithmetic; exit 0 or 1.")
	f.state = statecmd.Register(app)

	cmd, err := app.Parse(args)
	if err != nil {
		return nil, err
	}
	f.command = cmd
	if f.state.Handles(cmd) || cmd == cmdHashPassword {
		return f, nil
	}
	if f.plan, f.notice, err = f.refresh.Config(); err != nil {
		return nil, err
	}
	checks := []error{f.client.Validate(), f.tracker.ValidateFlags(), f.gateway.ValidateFlags()}
	if cmd == cmdServe {
		if err := server.CheckTelemetryPath(f.server.TelemetryPath); err != nil {
			checks = append(checks, fmt.Errorf("--web.telemetry-path: %w", err))
		}
		if *f.maxReqs < 0 {
			checks = append(checks, fmt.Errorf("--web.max-requests: must be 0 or greater, got %d", *f.maxReqs))
		}
	}
	if cmd == cmdBackfill {
		checks = append(checks, f.backfill.Validate())
	}
	var defaults []string
	if f.sandbox {
		defaults = sandbox.Projects
	}
	if cmd != cmdConfigCheck { // which reports every problem of the file itself
		f.analytics, err = f.config.Build(f.plan.MinInterval, defaults)
		checks = append(checks, err)
	}
	for _, err := range checks {
		if err != nil {
			return nil, err
		}
	}
	return f, nil
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	f, err := parseFlags(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: error: %v\n", exporterName, err)
		return 2
	}
	fail := func(code int, err error) int {
		fmt.Fprintf(os.Stderr, "%s: error: %v\n", exporterName, err)
		return code
	}
	switch {
	case f.state.Handles(f.command):
		if err := f.state.Run(f.command, os.Stdout); err != nil {
			return fail(1, err)
		}
		return 0
	case f.command == cmdHashPassword:
		if err := webauth.HashPassword(os.Stdin, os.Stdout); err != nil {
			return fail(1, err)
		}
		return 0
	case f.command == cmdConfigCheck:
		return configCheck(f)
	}
	loggers, err := logging.New(os.Stderr, *f.logLevel, *f.logFormat)
	if err != nil {
		return fail(2, err)
	}
	if f.notice != "" {
		level.Warn(loggers.Logger).Log("msg", f.notice)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	run := serve
	if f.command == cmdBackfill {
		run = backfill
	}
	if err := run(ctx, f, loggers); err != nil {
		level.Error(loggers.Logger).Log("msg", "exiting", "err", err)
		return 1
	}
	return 0
}

// configCheck validates the configuration without reading keys or
// contacting anything, like promtool check config.
func configCheck(f *flags) int {
	if f.config.File == "" {
		fmt.Fprintf(os.Stderr, "%s: error: config check: --config.file is required\n", exporterName)
		return 1
	}
	cfg, err := f.config.Build(f.plan.MinInterval, nil)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%v\nFAILED: %s\n", err, f.config.File)
		return 1
	}
	config.Describe(os.Stdout, cfg, f.plan.MinInterval)
	fmt.Printf("\nSUCCESS: %s is valid\n", f.config.File)
	return 0
}

// loader returns what reads the analytics configuration and its keys: at
// start, and again at every reload (the key files too, for rotation).
func loader(f *flags, sb *sandbox.Sandbox) func() (*config.Config, error) {
	var defaults []string
	if f.sandbox {
		defaults = sandbox.Projects
	}
	return func() (*config.Config, error) {
		cfg := f.analytics // parsed with the flags, at start
		f.analytics = nil
		if cfg == nil {
			var err error
			if cfg, err = f.config.Build(f.plan.MinInterval, defaults); err != nil {
				return nil, err
			}
		}
		if len(cfg.Projects) == 0 {
			return nil, errors.New("no project: give --mintlify.project at least once, or --config.file (or try --mintlify.sandbox)")
		}
		if sb != nil {
			sb.Keys(cfg)
			return cfg, nil
		}
		return cfg, cfg.LoadKeys(os.Getenv)
	}
}

// upstream starts the sandbox when asked (owned by wg until ctx ends) and
// returns the settings every organization's client and plan share.
func upstream(ctx context.Context, f *flags, cfg *config.Config, logger log.Logger, reg prometheus.Registerer, sb *sandbox.Sandbox, wg *sync.WaitGroup) (orgs.Settings, error) {
	s := orgs.Settings{Client: f.client.Config, Refresh: f.plan}
	s.Client.Metrics, s.Client.Logger = apiclient.NewMetrics(reg), logger
	if sb == nil {
		return s, nil
	}
	url, wait, err := sb.Start(ctx, cfg, logger)
	if err != nil {
		return s, err
	}
	wg.Go(func() {
		if err := wait(); err != nil {
			level.Error(logger).Log("msg", "sandbox API stopped", "err", err)
		}
	})
	s.Client.BaseURL = url
	return s, nil
}

// backfill runs the backfill command, organization by organization, until
// it is done or ctx ends.
func backfill(ctx context.Context, f *flags, loggers logging.Loggers) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sb := sandboxOf(f)
	cfg, err := loader(f, sb)()
	if err != nil {
		return err
	}
	settings, err := upstream(ctx, f, cfg, loggers.Logger, nil, sb, &wg)
	if err != nil {
		return err
	}
	for _, o := range cfg.Organizations {
		b := f.backfill.Config
		if err := history.ForProjects(&b, cfg.ProjectsOf(o.Name), f.plan.PageSize, f.plan.MaxPages); err != nil {
			return fmt.Errorf("organization %s: %w", o.Name, err)
		}
		client, budget, err := orgs.Client(settings, o)
		if err != nil {
			return err
		}
		if err := history.Backfill(ctx, client, budget, b, os.Stderr); err != nil {
			return err
		}
	}
	return nil
}

func sandboxOf(f *flags) *sandbox.Sandbox {
	if f.sandbox {
		return sandbox.New()
	}
	return nil
}

// serve runs the exporter until ctx ends. Every goroutine it starts has
// exited when it returns.
func serve(ctx context.Context, f *flags, loggers logging.Loggers) error {
	logger := loggers.Logger
	var wg sync.WaitGroup
	defer wg.Wait()
	sb := sandboxOf(f)
	load := loader(f, sb)
	cfg, err := load()
	if err != nil {
		return err
	}
	trkCfg := f.tracker.Config
	if sb != nil && !f.tracker.StateFileSet {
		// The simulated API forgets its jobs when it stops, so a state
		// file kept across runs would only hold jobs it no longer knows.
		dir, err := os.MkdirTemp("", "mintlify_exporter-sandbox-")
		if err != nil {
			return fmt.Errorf("sandbox state directory: %w", err)
		}
		defer os.RemoveAll(dir)
		trkCfg.StatePath = filepath.Join(dir, "agent.db")
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(versioncollector.NewCollector(exporterName), collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	settings, err := upstream(ctx, f, cfg, logger, reg, sb, &wg)
	if err != nil {
		return err
	}
	// Each organization's ledger lives beside the job state.
	settings.LedgerDir = filepath.Dir(trkCfg.StatePath)
	set := orgs.New(ctx, settings, logger)
	defer set.Wait()

	// The tracker opens (and locks) the state file before any analytics
	// request: a second exporter on the same file exits before it walks.
	api, gw, trk := gateway.Disabled(), (*gateway.Gateway)(nil), (*tracker.Tracker)(nil)
	if f.gateway.Enabled {
		trkCfg.Projects = cfg.ProjectIDs()
		if trk, err = tracker.New(set, reg, trkCfg, logger); err != nil {
			return fmt.Errorf("agent jobs: %w", err)
		}
		gwCfg := f.gateway.Config
		gwCfg.Projects = cfg.AgentProjects()
		if gw, err = gateway.New(trk, reg, gwCfg, logger); err != nil {
			_ = trk.Close()
			return fmt.Errorf("agent job gateway: %w", err)
		}
		api = gw
		if err := logGateway(logger, *f.server.Web.WebConfigFile); err != nil {
			_ = trk.Close()
			return err
		}
	}
	if err := set.Apply(cfg); err != nil {
		if trk != nil {
			_ = trk.Close()
		}
		return err
	}
	level.Info(logger).Log("msg", "starting "+exporterName, "version", version.Info(), "build_context", version.BuildContext(),
		"organizations", len(cfg.Organizations), "projects", len(cfg.Projects), "config", cmp.Or(cfg.File, "flags"))
	reg.MustRegister(budget.Set(set.Budgets), collector.NewVisitorsStatus(set, logger))
	encoded := collector.NewEncoded(set, logger)

	reloader := reload.New(reg, func() error {
		next, err := load()
		if err != nil {
			return err
		}
		if err := set.Apply(next); err != nil {
			return err
		}
		if gw != nil {
			gw.SetProjects(trk.Accepts(next.AgentProjects()))
		}
		return nil
	}, logger, nil)
	wg.Go(func() { reloader.WatchSignals(ctx) })

	srv, err := server.New(f.server, server.Routes{
		Metrics: promhttp.InstrumentMetricHandler(reg, exposition.NewHandler(reg, encoded, exposition.Opts{
			ErrorLog:            logging.PromHTTPErrorLogger{Logger: logger},
			MaxRequestsInFlight: *f.maxReqs,
			Registry:            reg,
		})),
		API:         api,
		Reload:      reloader.Handler(),
		Description: description(sb != nil),
		Links:       jobLinks(gw != nil, cfg.AgentProjects()),
	}, logger, loggers.Slog)
	if err != nil {
		return err
	}
	// The tracker stops only after the server has: requests in flight
	// finish and every job they acknowledge is recorded.
	trkCtx, stopTracker := context.WithCancel(context.Background())
	if trk != nil {
		wg.Go(func() {
			if err := trk.Run(trkCtx); err != nil {
				level.Error(logger).Log("msg", "agent job tracker stopped", "err", err)
			}
			if err := trk.Close(); err != nil {
				level.Error(logger).Log("msg", "agent job tracker", "err", err)
			}
		})
	}
	err = srv.Run(ctx)
	stopTracker()
	return err
}

func logGateway(logger log.Logger, webConfig string) error {
	protected, err := webauth.BasicAuthConfigured(webConfig)
	if err != nil {
		return err
	}
	if protected {
		level.Info(logger).Log("msg", "agent job gateway enabled under /api/, behind the basic auth of --web.config.file")
	} else {
		level.Warn(logger).Log("msg", "agent job gateway enabled under /api/ without basic auth: anyone who can reach it can open pull requests; set basic_auth_users in --web.config.file", "web_config_file", webConfig)
	}
	return nil
}

func description(sandbox bool) string {
	desc := "Prometheus exporter for Mintlify documentation analytics and agent jobs"
	if sandbox {
		desc += " (sandbox: simulated data)"
	}
	return desc
}

func jobLinks(enabled bool, projects []string) []web.LandingLinks {
	var links []web.LandingLinks
	for _, p := range projects {
		if enabled {
			links = append(links, web.LandingLinks{Address: "/api/v2/agent/" + p + "/jobs", Text: "Agent jobs of " + p})
		}
	}
	return links
}
