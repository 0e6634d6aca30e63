// Command mintlify_exporter exports Mintlify documentation analytics and
// agent jobs to Prometheus, and optionally acts as a gateway that submits
// agent jobs with a server-side API key and tracks each to its end.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	_ "time/tzdata" // --visitors.timezone works on any base image, scratch included
	"unicode/utf8"

	"github.com/alecthomas/kingpin/v2"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/model"
	"github.com/prometheus/common/version"
	"github.com/prometheus/exporter-toolkit/web"
	"github.com/prometheus/exporter-toolkit/web/kingpinflag"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/collector"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/exposition"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/flagvalue"
	"github.com/mintlify-exporter/mintlify_exporter/internal/gateway"
	"github.com/mintlify-exporter/mintlify_exporter/internal/history"
	"github.com/mintlify-exporter/mintlify_exporter/internal/logging"
	"github.com/mintlify-exporter/mintlify_exporter/internal/refresh"
	"github.com/mintlify-exporter/mintlify_exporter/internal/statecmd"
	"github.com/mintlify-exporter/mintlify_exporter/internal/tracker"
	"github.com/mintlify-exporter/mintlify_exporter/internal/validate"
	"github.com/mintlify-exporter/mintlify_exporter/internal/visitors"
	"github.com/mintlify-exporter/mintlify_exporter/internal/webauth"
)

const (
	exporterName = "mintlify_exporter"
	// defaultPort is this exporter's default; see the README.
	defaultPort = ":9871"
	apiKeyEnv   = "MINTLIFY_API_KEY"
)

// sandboxProjects are the simulated projects when none is given.
var sandboxProjects = []string{"acme-docs", "acme-api"}

// Commands.
const (
	cmdServe        = "serve"
	cmdBackfill     = "backfill"
	cmdHashPassword = "hash-password"
)

// config is everything the command line decides.
type config struct {
	command        string
	web            *web.FlagConfig
	telemetryPath  string
	maxRequests    int
	enableAgentAPI bool
	logLevel       string
	logFormat      string

	apiURL     string
	apiKeyFile string
	projects   []string
	timeout    time.Duration
	maxRetries int
	sandbox    bool
	budget     int

	visitors refresh.Config
	tracker  tracker.Config
	gateway  gateway.Config
	backfill history.Config
	// stateFileSet: --agent.state-file was given (the sandbox otherwise
	// uses a temporary file).
	stateFileSet bool
	// state is the state command, when it is the one given.
	state *statecmd.Command
}

// parseFlags parses and validates args. Every error names its flag.
func parseFlags(args []string) (*config, error) {
	c := &config{}
	app := kingpin.New(exporterName, "Prometheus exporter for Mintlify documentation analytics and agent jobs.")
	app.Version(version.Print(exporterName))
	app.HelpFlag.Short('h')
	app.UsageWriter(os.Stdout)
	app.ErrorWriter(io.Discard) // parse errors are printed once, by main

	c.web = kingpinflag.AddFlags(app, defaultPort)
	app.Flag("web.telemetry-path", "Path under which to expose metrics.").Default("/metrics").StringVar(&c.telemetryPath)
	maxRequests := flagvalue.Int(app, "web.max-requests", "Maximum number of parallel scrape requests. 0 disables the limit.", "40")
	app.Flag("web.enable-agent-api", "Serve the agent job gateway under /api/. Anyone who can reach it can open pull requests: protect it with --web.config.file.").Default("false").BoolVar(&c.enableAgentAPI)
	logLevel := flagvalue.Enum(app, "log.level", "Only log messages with the given severity or above.", "info", logging.Levels...)
	logFormat := flagvalue.Enum(app, "log.format", "Output format of log messages.", "logfmt", logging.Formats...)

	app.Flag("mintlify.api-url", "Base URL of the Mintlify API.").Default(apiclient.DefaultBaseURL).StringVar(&c.apiURL)
	app.Flag("mintlify.api-key-file", "File holding the Mintlify admin API key (else the "+apiKeyEnv+" environment variable).").StringVar(&c.apiKeyFile)
	app.Flag("mintlify.project", "Mintlify project id to export (repeatable).").StringsVar(&c.projects)
	timeout := flagvalue.Duration(app, "mintlify.timeout", "Timeout of each HTTP request to the API.", "30s")
	maxRetries := flagvalue.Int(app, "mintlify.max-retries", "Retries of a failed read (visitors, get job) after the first try.", "2")
	app.Flag("mintlify.sandbox", "Serve a built-in simulation of the Mintlify API on loopback and export it; no key or project needed.").Default("false").BoolVar(&c.sandbox)
	analyticsBudget := flagvalue.Int(app, "mintlify.analytics-budget", "Analytics requests this process may send per rolling hour, for all projects, windows, pages and retries together. The API allows 100 per organization (one admin key) per hour, shared with every other tool of the organization.", strconv.Itoa(budget.DefaultLimit))

	v := &c.visitors
	ttl := flagvalue.Duration(app, "visitors.cache-ttl", "Shortest interval between two refreshes of a project and window; the analytics budget may plan longer ones.", "5m")
	staleness := flagvalue.Duration(app, "visitors.max-staleness", "How long past its planned refresh a window's visitor counts are still served while refreshes fail. 0 keeps them forever.", "1h")
	windows := app.Flag("visitors.window", "Date window to export, Nd = the last N calendar days including today, optionally with its own shortest refresh interval, Nd:INTERVAL (repeatable).").Default("1d").Strings()
	finalDelay := flagvalue.Duration(app, "visitors.final-day-delay", "How long after midnight the finished day is fetched once more, for its settled numbers (exported as window=\"yesterday\" until 01:00).", "10m")
	tz := app.Flag("visitors.timezone", "IANA time zone that decides where a day starts for the windows.").Default("UTC").String()
	pageSize := flagvalue.Int(app, "visitors.page-size", "Rows per visitors request (1-250).", "250")
	maxPaths := flagvalue.Int(app, "visitors.max-paths", "Keep at most this many paths per project and window, the most visited first. 0 = no cap.", "1000")
	include := app.Flag("visitors.path-include", "Only export paths matching this regular expression.").String()
	exclude := app.Flag("visitors.path-exclude", "Do not export paths matching this regular expression.").String()

	c.tracker, c.gateway = tracker.Defaults(), gateway.Defaults()
	a := &c.tracker
	flagvalue.DurationVar(app, "agent.poll-interval", "How often each active agent job is polled.", &a.PollInterval)
	flagvalue.IntVar(app, "agent.max-concurrent-polls", "Maximum number of job polls in flight at once.", &a.MaxConcurrentPolls)
	flagvalue.DurationVar(app, "agent.archive-watch", "How long a completed job is re-checked, slowly, so that a later archive is counted. 0 disables the re-checks.", &a.ArchiveWatch)
	flagvalue.DurationVar(app, "agent.retention", "How long finished jobs are kept before they are forgotten.", &a.Retention)
	app.Flag("agent.state-file", "File where tracked agent jobs are persisted across restarts, relative to the working directory; with --mintlify.sandbox and no value, a temporary file.").
		Default(a.StatePath).IsSetByUser(&c.stateFileSet).StringVar(&a.StatePath)
	flagvalue.BytesVar(app, "agent.max-prompt-bytes", "Largest request body (and so prompt) the gateway accepts for a job, e.g. 64KiB; larger ones get 413.", &c.gateway.MaxPromptBytes)

	app.Command(cmdServe, "Serve metrics (the default).").Default()
	bf := app.Command(cmdBackfill, "Write the visitor history of past days as TSDB blocks for Prometheus, or as OpenMetrics for promtool tsdb create-blocks-from openmetrics.")
	from := bf.Flag("from", "First day to backfill, YYYY-MM-DD in --visitors.timezone.").Required().String()
	to := bf.Flag("to", "Last day to backfill, YYYY-MM-DD; it must be over (before today).").Required().String()
	bf.Flag("output", "File to write the OpenMetrics text to (- is standard output), or with --output.format=blocks a new or empty directory for the blocks.").Default("-").StringVar(&c.backfill.Output)
	bfFormat := flagvalue.Enum(bf, "output.format", "openmetrics: text for promtool tsdb create-blocks-from openmetrics; blocks: TSDB blocks to copy into Prometheus' data directory.", history.FormatOpenMetrics, history.FormatOpenMetrics, history.FormatBlocks)
	bf.Flag("backfill.state-dir", "Directory keeping each finished day, so that an interrupted backfill resumes without fetching them again. Default: OUTPUT.days next to --output, or ./mintlify-backfill.days with standard output, removed once the output is written.").StringVar(&c.backfill.StateDir)
	bfConcurrency := flagvalue.Int(bf, "backfill.concurrency", "Days fetched at once.", "1")
	app.Command(cmdHashPassword, "Read a password on standard input and print its bcrypt hash, for basic_auth_users in --web.config.file.")
	bf.Flag("backfill.totals-only", "Fetch only site totals: one request per project and day, whatever the number of paths.").Default("false").BoolVar(&c.backfill.TotalsOnly)
	bfLabels := bf.Flag("backfill.label", "Label NAME=VALUE added to every sample (repeatable), e.g. the job and instance labels of the exporter's scrape target, which Prometheus adds to scraped series but not to imported blocks.").Strings()

	stateCmd := statecmd.Register(app)

	cmd, err := app.Parse(args)
	if err != nil {
		return nil, err
	}
	c.command = cmd
	if stateCmd.Handles(cmd) {
		c.state = stateCmd
		return c, nil
	}
	c.maxRequests, c.maxRetries, c.logLevel, c.logFormat = *maxRequests, *maxRetries, *logLevel, *logFormat
	v.PageSize, v.Paths.MaxPaths = *pageSize, *maxPaths
	c.budget = *analyticsBudget

	checks := []struct {
		flag string
		err  error
	}{
		{"--mintlify.timeout", positive(*timeout)},
		{"--mintlify.max-retries", nonNegative(c.maxRetries)},
		{"--web.max-requests", nonNegative(c.maxRequests)},
		{"--web.telemetry-path", absPath(c.telemetryPath)},
		{"--visitors.cache-ttl", positive(*ttl)},
		{"--mintlify.analytics-budget", inRange(c.budget, 1, 100000)},
		{"--visitors.page-size", inRange(v.PageSize, 1, apiclient.MaxPageSize)},
		{"--visitors.max-paths", nonNegative(v.Paths.MaxPaths)},
		{"--visitors.final-day-delay", belowFinalDayExport(*finalDelay)},
	}
	for _, ch := range checks {
		if ch.err != nil {
			return nil, fmt.Errorf("%s: %w", ch.flag, ch.err)
		}
	}

	c.timeout = *timeout
	v.MinInterval, v.MaxStaleness, v.FinalDayDelay = *ttl, *staleness, *finalDelay
	if v.Location, err = time.LoadLocation(*tz); err != nil || *tz == "" || *tz == "Local" {
		return nil, fmt.Errorf("--visitors.timezone: unknown time zone %q (want an IANA name such as Europe/Berlin)", *tz)
	}
	seen := map[string]bool{}
	for _, s := range *windows {
		w, err := visitors.ParseWindow(s)
		if err != nil {
			return nil, fmt.Errorf("--visitors.window: %w", err)
		}
		if w.Interval != 0 && w.Interval < v.MinInterval {
			return nil, fmt.Errorf("--visitors.window: %s refreshes every %s, more often than --visitors.cache-ttl %s, the shortest interval of any window", s, model.Duration(w.Interval), model.Duration(v.MinInterval))
		}
		if !seen[w.Name] {
			seen[w.Name] = true
			v.Windows = append(v.Windows, w)
		}
	}
	if v.Paths.Include, err = optionalRegexp(*include); err != nil {
		return nil, fmt.Errorf("--visitors.path-include: %w", err)
	}
	if v.Paths.Exclude, err = optionalRegexp(*exclude); err != nil {
		return nil, fmt.Errorf("--visitors.path-exclude: %w", err)
	}
	for _, p := range c.projects {
		// Project ids become label values and URL path segments.
		if strings.TrimSpace(p) == "" || strings.ContainsAny(p, "/?#") || !utf8.ValidString(p) {
			return nil, fmt.Errorf("--mintlify.project: invalid project id %q", p)
		}
	}
	c.projects = dedupe(c.projects)
	if err := validateAgent(c); err != nil {
		return nil, err
	}
	if c.command == cmdBackfill {
		b := &c.backfill
		b.Concurrency, b.Format = *bfConcurrency, *bfFormat
		if err := inRange(b.Concurrency, 1, 64); err != nil {
			return nil, fmt.Errorf("--backfill.concurrency: %w", err)
		}
		for _, l := range *bfLabels {
			label, err := history.ParseLabel(l)
			if err != nil {
				return nil, fmt.Errorf("--backfill.label: %w", err)
			}
			b.Labels = append(b.Labels, label)
		}
		if b.From, err = parseDay(*from); err != nil {
			return nil, fmt.Errorf("--from: %w", err)
		}
		if b.To, err = parseDay(*to); err != nil {
			return nil, fmt.Errorf("--to: %w", err)
		}
		if b.From.After(b.To) {
			return nil, fmt.Errorf("--from: %s is after --to %s", *from, *to)
		}
		if today := visitors.Today(time.Now(), v.Location); !b.To.Before(today) {
			return nil, fmt.Errorf("--to: %s is not over yet in %s (today is %s); backfill whole past days only", *to, v.Location, today.Format(visitors.DateLayout))
		}
	}
	return c, nil
}

// parseDay reads YYYY-MM-DD as a date value (midnight UTC of that date).
func parseDay(s string) (time.Time, error) {
	d, err := time.Parse(visitors.DateLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("invalid date %q: want YYYY-MM-DD", s)
	}
	return d, nil
}

func belowFinalDayExport(d time.Duration) error {
	if d >= refresh.FinalDayExport {
		return fmt.Errorf("must be shorter than %s, while yesterday's numbers are exported", model.Duration(refresh.FinalDayExport))
	}
	return nil
}

// agentFlags names the flag that sets each tracker.Config and
// gateway.Config field.
var agentFlags = map[string]string{
	"PollInterval":       "--agent.poll-interval",
	"MaxConcurrentPolls": "--agent.max-concurrent-polls",
	"ArchiveWatch":       "--agent.archive-watch",
	"Retention":          "--agent.retention",
	"StatePath":          "--agent.state-file",
	"MaxPromptBytes":     "--agent.max-prompt-bytes",
}

// validateAgent runs the tracker's and the gateway's own validation and
// names the flag of the field it rejects.
func validateAgent(c *config) error {
	for _, err := range []error{c.tracker.Validate(), c.gateway.Validate()} {
		var fe *validate.FieldError
		if errors.As(err, &fe) && agentFlags[fe.Field] != "" {
			return fmt.Errorf("%s: %w", agentFlags[fe.Field], fe.Err)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func positive(d time.Duration) error {
	if d <= 0 {
		return errors.New("must be greater than 0")
	}
	return nil
}

func nonNegative(n int) error {
	if n < 0 {
		return fmt.Errorf("must be 0 or greater, got %d", n)
	}
	return nil
}

func inRange(n, lo, hi int) error {
	if n < lo || n > hi {
		return fmt.Errorf("must be between %d and %d, got %d", lo, hi, n)
	}
	return nil
}

func absPath(p string) error {
	if !strings.HasPrefix(p, "/") || p == "/" {
		return fmt.Errorf("must start with / and not be the root, got %q", p)
	}
	return nil
}

func optionalRegexp(s string) (*regexp.Regexp, error) {
	if s == "" {
		return nil, nil
	}
	re, err := regexp.Compile(s)
	if err != nil {
		return nil, fmt.Errorf("invalid regular expression: %w", err)
	}
	return re, nil
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	out := in[:0]
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// readAPIKey takes the key from the file when given, else the environment;
// never from a flag, since flags show in ps.
func readAPIKey(file string) (string, error) {
	if file == "" {
		return strings.TrimSpace(os.Getenv(apiKeyEnv)), nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("--mintlify.api-key-file: %w", err)
	}
	key := strings.TrimSpace(string(data))
	if key == "" {
		return "", fmt.Errorf("--mintlify.api-key-file: %s is empty", file)
	}
	return key, nil
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	cfg, err := parseFlags(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: error: %v\n", exporterName, err)
		return 2
	}
	if cfg.state != nil {
		if err := cfg.state.Run(cfg.command, os.Stdout); err != nil {
			fmt.Fprintf(os.Stderr, "%s: error: %v\n", exporterName, err)
			return 1
		}
		return 0
	}
	loggers, err := logging.New(os.Stderr, cfg.logLevel, cfg.logFormat)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: error: %v\n", exporterName, err)
		return 2
	}
	logger := loggers.Logger

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if cfg.command == cmdHashPassword {
		if err := webauth.HashPassword(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintf(os.Stderr, "%s: error: %v\n", exporterName, err)
			return 1
		}
		return 0
	}
	run := serve
	if cfg.command == cmdBackfill {
		run = backfill
	}
	if err := run(ctx, cfg, loggers); err != nil {
		level.Error(logger).Log("msg", "exiting", "err", err)
		return 1
	}
	return 0
}

// upstream is the API this process talks to: the real one, or the sandbox.
type upstream struct {
	client *apiclient.Client
	budget *budget.Budget
}

// connect reads the key, starts the sandbox when asked (owned by wg until
// ctx ends), and builds the API client with the analytics budget.
func connect(ctx context.Context, cfg *config, logger log.Logger, reg prometheus.Registerer, wg *sync.WaitGroup) (*upstream, error) {
	apiKey, err := readAPIKey(cfg.apiKeyFile)
	if err != nil {
		return nil, err
	}
	if cfg.sandbox {
		if len(cfg.projects) == 0 {
			cfg.projects = sandboxProjects
		}
		apiKey = "mint_sandbox_" + randomHex(12)
		// The sandbox enforces the organization's analytics quota as the
		// real service does, so the demo shows the exporter living in it.
		// Job ids unique per run: a state file kept across runs
		// (--agent.state-file) never meets an id of an earlier run.
		fake := fakeapi.New(fakeapi.Options{Projects: cfg.projects, APIKey: apiKey, AnalyticsBudget: fakeapi.AnalyticsLimit,
			JobIDPrefix: "job_" + randomHex(3) + "_", Location: cfg.visitors.Location})
		url, wait, err := fake.Serve(ctx, "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := wait(); err != nil {
				level.Error(logger).Log("msg", "sandbox API stopped", "err", err)
			}
		}()
		cfg.apiURL = url
		level.Info(logger).Log("msg", "sandbox: a simulated Mintlify API; no real API is contacted", "api_url", url, "projects", strings.Join(cfg.projects, ","))
	}
	if apiKey == "" {
		return nil, fmt.Errorf("no API key: set %s or --mintlify.api-key-file (or try --mintlify.sandbox)", apiKeyEnv)
	}
	if len(cfg.projects) == 0 {
		return nil, errors.New("no project: give --mintlify.project at least once (or try --mintlify.sandbox)")
	}
	if !strings.HasPrefix(apiKey, "mint_") {
		level.Warn(logger).Log("msg", "the API key does not start with mint_, the prefix of Mintlify admin keys; requests will likely be rejected")
	}
	b, err := budget.New(budget.Config{Limit: cfg.budget})
	if err != nil {
		return nil, fmt.Errorf("--mintlify.analytics-budget: %w", err)
	}
	client, err := apiclient.New(apiclient.Config{
		BaseURL:         cfg.apiURL,
		APIKey:          apiKey,
		Timeout:         cfg.timeout,
		MaxRetries:      cfg.maxRetries,
		Metrics:         apiclient.NewMetrics(reg),
		Logger:          logger,
		AnalyticsBudget: b,
	})
	if err != nil {
		return nil, fmt.Errorf("--mintlify.api-url: %w", err)
	}
	return &upstream{client: client, budget: b}, nil
}

// backfill runs the backfill command until it is done or ctx ends.
func backfill(ctx context.Context, cfg *config, loggers logging.Loggers) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	up, err := connect(ctx, cfg, loggers.Logger, nil, &wg)
	if err != nil {
		return err
	}
	b := cfg.backfill
	b.Projects, b.Windows, b.Location = cfg.projects, cfg.visitors.Windows, cfg.visitors.Location
	b.PageSize, b.MaxPages, b.Paths = cfg.visitors.PageSize, cfg.visitors.MaxPages, cfg.visitors.Paths
	return history.Backfill(ctx, up.client, up.budget, b, os.Stderr)
}

// serve runs the exporter until ctx ends. Every goroutine it starts has
// exited when it returns.
func serve(ctx context.Context, cfg *config, loggers logging.Loggers) error {
	logger := loggers.Logger
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	reg := prometheus.NewRegistry()
	reg.MustRegister(
		versioncollector.NewCollector(exporterName),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	up, err := connect(ctx, cfg, logger, reg, &wg)
	if err != nil {
		return err
	}
	// Logged once the configuration is known good: a missing key or project
	// says so in one line, not after a line that suggests all is well.
	level.Info(logger).Log("msg", "starting "+exporterName, "version", version.Info(), "build_context", version.BuildContext())
	client := up.client
	reg.MustRegister(up.budget)
	if cfg.sandbox && !cfg.stateFileSet {
		// The simulated API forgets its jobs when it stops, so a state
		// file kept across runs would only hold jobs it no longer knows.
		dir, err := os.MkdirTemp("", "mintlify_exporter-sandbox-")
		if err != nil {
			return fmt.Errorf("sandbox state directory: %w", err)
		}
		defer os.RemoveAll(dir)
		cfg.tracker.StatePath = filepath.Join(dir, "agent.db")
	}

	cfg.visitors.Projects = cfg.projects
	sched, err := refresh.New(client, up.budget, cfg.visitors, logger)
	if err != nil {
		return fmt.Errorf("visitors: %w", err)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		sched.Run(ctx) // refreshes on the budget's plan, not on scrapes
	}()
	// The data series are encoded once per snapshot and written after the
	// registry's families by the /metrics handler; the registry keeps the
	// status series.
	reg.MustRegister(collector.NewVisitorsStatus(sched, logger))
	encoded := collector.NewEncoded(sched, logger)

	mux := http.NewServeMux()
	api := gateway.Disabled()
	if cfg.enableAgentAPI {
		cfg.tracker.Projects, cfg.gateway.Projects = cfg.projects, cfg.projects
		trk, err := tracker.New(client, reg, cfg.tracker, logger)
		if err != nil {
			return fmt.Errorf("agent jobs: %w", err)
		}
		gw, err := gateway.New(trk, reg, cfg.gateway, logger)
		if err != nil {
			_ = trk.Close()
			return fmt.Errorf("agent job gateway: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := trk.Run(ctx); err != nil {
				level.Error(logger).Log("msg", "agent job tracker stopped", "err", err)
			}
			// Only now, with polling over (ctx ends after the HTTP server
			// stopped), may the state file close; Close also waits for
			// gateway creates still recording their job.
			if err := trk.Close(); err != nil {
				level.Error(logger).Log("msg", "agent job tracker", "err", err)
			}
		}()
		api = gw
		protected, err := webauth.BasicAuthConfigured(*cfg.web.WebConfigFile)
		if err != nil {
			return err
		}
		if protected {
			level.Info(logger).Log("msg", "agent job gateway enabled under /api/, behind the basic auth of --web.config.file")
		} else {
			level.Warn(logger).Log("msg", "agent job gateway enabled under /api/ without basic auth: anyone who can reach it can open pull requests; set basic_auth_users in --web.config.file", "web_config_file", *cfg.web.WebConfigFile)
		}
	}
	mux.Handle("/api/", api)

	metricsHandler := promhttp.InstrumentMetricHandler(reg, exposition.NewHandler(reg, encoded, exposition.Opts{
		ErrorLog:            logging.PromHTTPErrorLogger{Logger: logger},
		MaxRequestsInFlight: cfg.maxRequests,
		Registry:            reg,
	}))
	mux.Handle(cfg.telemetryPath, metricsHandler)

	var shuttingDown atomic.Bool
	mux.HandleFunc("/-/healthy", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "Healthy\n")
	})
	mux.HandleFunc("/-/ready", func(w http.ResponseWriter, _ *http.Request) {
		if shuttingDown.Load() {
			http.Error(w, "Shutting down", http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "Ready\n")
	})
	landing, err := landingPage(cfg)
	if err != nil {
		return err
	}
	mux.Handle("/", landing)

	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		// Scrapes may wait up to their deadline for a refresh; jobs are
		// small. Bound everything so slow clients cannot pin goroutines.
		ReadTimeout:  30 * time.Second,
		WriteTimeout: 2 * time.Minute,
		IdleTimeout:  2 * time.Minute,
	}
	for _, addr := range *cfg.web.WebListenAddresses {
		level.Info(logger).Log("msg", "serving metrics", "url", metricsURL(addr, cfg.telemetryPath))
	}
	errc := make(chan error, 1)
	go func() { errc <- web.ListenAndServe(srv, cfg.web, loggers.Slog) }()
	select {
	case err := <-errc:
		return fmt.Errorf("web server: %w", err)
	case <-ctx.Done():
	}
	level.Info(logger).Log("msg", "shutting down")
	shuttingDown.Store(true)
	shutdownCtx, cancelShutdown := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancelShutdown()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutting down web server: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("web server: %w", err)
	}
	return nil
}

func landingPage(cfg *config) (http.Handler, error) {
	links := []web.LandingLinks{
		{Address: cfg.telemetryPath, Text: "Metrics"},
		{Address: "/-/healthy", Text: "Health"},
	}
	if cfg.enableAgentAPI {
		for _, p := range cfg.projects {
			links = append(links, web.LandingLinks{Address: "/api/v2/agent/" + p + "/jobs", Text: "Agent jobs of " + p})
		}
	}
	desc := "Prometheus exporter for Mintlify documentation analytics and agent jobs"
	if cfg.sandbox {
		desc += " (sandbox: simulated data)"
	}
	h, err := web.NewLandingPage(web.LandingConfig{
		Name:        exporterName,
		Description: desc,
		Version:     version.Info(),
		Links:       links,
		// The pprof handlers are not served: link nothing that 404s.
		Profiling: "false",
	})
	if err != nil {
		return nil, fmt.Errorf("landing page: %w", err)
	}
	return h, nil
}

// metricsURL turns a listen address into a URL a person can open.
func metricsURL(addr, path string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr + path
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + path
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
