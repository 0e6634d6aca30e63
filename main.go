// Command mintlify_exporter exports Mintlify documentation analytics and
// agent jobs to Prometheus, and optionally acts as a gateway that submits
// agent jobs with a server-side API key and tracks each to its end.
//
// main.go only parses, validates and wires: each package owns its
// settings (defaults, flags, validation).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	_ "time/tzdata" // time zones work on any base image, scratch included

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log/level"
	"github.com/prometheus/common/version"

	"github.com/mintlify-exporter/mintlify_exporter/internal/exporter"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/history"
	"github.com/mintlify-exporter/mintlify_exporter/internal/logging"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/gateway"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/statecmd"
	"github.com/mintlify-exporter/mintlify_exporter/internal/orgs"
	"github.com/mintlify-exporter/mintlify_exporter/internal/refresh"
	"github.com/mintlify-exporter/mintlify_exporter/internal/server"
)

const exporterName = "mintlify_exporter"

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
	server    *server.Flags
	logLevel  *string
	logFormat *string
	sandbox   bool

	config   *config.Flags
	client   *orgs.ClientFlags
	refresh  *refresh.Flags
	engine   *engine.Flags
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
	app.UsageTemplate(usageTemplate)
	app.UsageFuncs(usageFuncs)
	app.ErrorWriter(io.Discard) // parse errors are printed once, by main

	// Flags every command shares: where the API is and what to read.
	f.logLevel = config.Enum(app, "log.level", "Only log messages with the given severity or above.", "info", logging.Levels...)
	f.logFormat = config.Enum(app, "log.format", "Output format of log messages.", "logfmt", logging.Formats...)
	app.Flag("mintlify.sandbox", "Serve a built-in simulation of the Mintlify API on loopback and export it; no key or project needed.").Default("false").BoolVar(&f.sandbox)
	f.config = config.RegisterFlags(app)
	f.client = orgs.RegisterClientFlags(app)
	f.refresh = refresh.RegisterFlags(app)

	serve := app.Command(cmdServe, "Serve metrics (the default). Its own flags (--web.listen-address, the job gateway's --web.enable-agent-api and --agent.*) are listed by serve --help.").Default()
	f.server = server.RegisterFlags(serve)
	f.engine = engine.RegisterFlags(serve)
	f.gateway = gateway.RegisterFlags(serve)

	f.backfill = history.RegisterFlags(app.Command(cmdBackfill, "Write the history of past days as TSDB blocks for Prometheus, or as OpenMetrics for promtool tsdb create-blocks-from openmetrics."))
	app.Command(cmdHashPassword, "Read a password on standard input and print its bcrypt hash, for basic_auth_users in --web.config.file.")
	app.Command("config", "Work with the configuration file.").Command("check", "Validate --config.file, print what it exports and each organization's budget arithmetic; exit 0 or 1.")
	f.state = statecmd.Register(app)
	setPlaceholders(app)

	cmd, err := app.Parse(args)
	if err != nil {
		return nil, err
	}
	f.command = cmd
	if f.state.NeedsRedis(cmd) { // the cluster settings of --config.file or --cluster.*
		if f.plan, _, err = f.refresh.Config(); err == nil {
			f.analytics, err = f.config.Build(f.plan.MinInterval, nil)
		}
		if err != nil {
			return nil, err
		}
		f.state.Cluster = f.analytics.Cluster
		return f, nil
	}
	if f.state.Handles(cmd) || cmd == cmdHashPassword {
		return f, nil
	}
	if f.plan, f.notice, err = f.refresh.Config(); err != nil {
		return nil, err
	}
	checks := []error{f.client.Validate(), f.engine.ValidateFlags(), f.gateway.ValidateFlags()}
	if cmd == cmdServe {
		checks = append(checks, f.server.Validate())
	}
	if cmd == cmdBackfill {
		checks = append(checks, f.backfill.Validate())
	}
	var defaults []string
	if f.sandbox {
		defaults = fakeapi.SandboxProjects
		if cmd == cmdServe { // the dashboards' data; a backfill reads the usual sources
			f.config.DefaultSources, f.config.DefaultSettings = fakeapi.SandboxSources(), fakeapi.SandboxSettings
			f.config.DefaultBudget = fakeapi.SandboxBudget
		}
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
	fail := func(code int, err error) int {
		fmt.Fprintf(os.Stderr, "%s: error: %v\n", exporterName, err)
		return code
	}
	exit := func(err error) int {
		if err != nil {
			return fail(1, err)
		}
		return 0
	}
	f, err := parseFlags(args)
	if err != nil {
		return fail(2, err)
	}
	switch {
	case f.state.Handles(f.command):
		return exit(f.state.Run(f.command, os.Stdout))
	case f.command == cmdHashPassword:
		return exit(server.HashPassword(os.Stdin, os.Stdout))
	case f.command == cmdConfigCheck:
		return configCheck(f)
	}
	loggers, err := logging.New(os.Stderr, *f.logLevel, *f.logFormat)
	if err != nil {
		return fail(2, err)
	}
	for _, notice := range []string{f.notice, f.config.Deprecated()} { // deprecated flag names
		if notice != "" {
			level.Warn(loggers.Logger).Log("msg", notice)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	run := exporter.Serve
	if f.command == cmdBackfill {
		run = exporter.Backfill
	}
	// An error ends in the flag errors' form: one line a person reads
	// once, whatever --log.format (the last line of a crash loop).
	return exit(run(ctx, f.options(), loggers))
}

// configCheck validates the configuration without reading keys or
// contacting anything, like promtool check config.
func configCheck(f *flags) int {
	if f.config.File == "" {
		fmt.Fprintf(os.Stderr, "%s: error: config check: --config.file is required\n", exporterName)
		return 1
	}
	cfg, err := f.config.Build(f.plan.MinInterval, nil)
	if err == nil {
		err = orgs.Describe(os.Stdout, cfg, f.plan)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%v\nFAILED: %s\n", err, f.config.File)
		return 1
	}
	if n := cfg.Cluster.Sentinel.Notice(); n != "" {
		fmt.Printf("\nnotice: %s\n", n)
	}
	fmt.Printf("\nSUCCESS: %s is valid\n", f.config.File)
	return 0
}

// options are the validated settings the exporter runs with.
func (f *flags) options() *exporter.Options {
	return &exporter.Options{
		Config: f.config, Analytics: f.analytics, Plan: f.plan, Sandbox: f.sandbox, Client: f.client,
		Server: *f.server, Engine: f.engine, Gateway: f.gateway, Backfill: f.backfill,
	}
}
