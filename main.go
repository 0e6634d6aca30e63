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
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	_ "time/tzdata" // --visitors.timezone works on any base image, scratch included
	"unicode/utf8"

	"github.com/alecthomas/kingpin/v2"
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
	"github.com/mintlify-exporter/mintlify_exporter/internal/agent"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/flagvalue"
	"github.com/mintlify-exporter/mintlify_exporter/internal/logging"
)

const (
	exporterName = "mintlify_exporter"
	// defaultPort is this exporter's default; see the README.
	defaultPort = ":9871"
	// defaultScrapeTimeout is used when Prometheus sends no
	// X-Prometheus-Scrape-Timeout-Seconds header: its own default timeout.
	defaultScrapeTimeout = 10 * time.Second
	apiKeyEnv            = "MINTLIFY_API_KEY"
)

// sandboxProjects are the simulated projects when none is given.
var sandboxProjects = []string{"acme-docs", "acme-api"}

// config is everything the command line decides.
type config struct {
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

	visitors collector.VisitorsConfig
	agent    agent.Config
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

	v := &c.visitors
	ttl := flagvalue.Duration(app, "visitors.cache-ttl", "How long fetched visitor counts are served before a scrape refreshes them.", "5m")
	staleness := flagvalue.Duration(app, "visitors.max-staleness", "Visitor counts older than this are no longer served when refreshes keep failing. 0 keeps them forever.", "1h")
	windows := app.Flag("visitors.window", "Date window to export, Nd = the last N calendar days including today (repeatable).").Default("1d").Strings()
	tz := app.Flag("visitors.timezone", "IANA time zone that decides where a day starts for the windows.").Default("UTC").String()
	pageSize := flagvalue.Int(app, "visitors.page-size", "Rows per visitors request (1-250).", "250")
	maxPaths := flagvalue.Int(app, "visitors.max-paths", "Keep at most this many paths per project and window, the most visited first. 0 = no cap.", "1000")
	include := app.Flag("visitors.path-include", "Only export paths matching this regular expression.").String()
	exclude := app.Flag("visitors.path-exclude", "Do not export paths matching this regular expression.").String()

	a := &c.agent
	poll := flagvalue.Duration(app, "agent.poll-interval", "How often each active agent job is polled.", "10s")
	maxPolls := flagvalue.Int(app, "agent.max-concurrent-polls", "Maximum number of job polls in flight at once.", "4")
	watch := flagvalue.Duration(app, "agent.archive-watch", "How long a completed job is re-checked, slowly, so that a later archive is counted. 0 disables the re-checks.", "24h")
	retention := flagvalue.Duration(app, "agent.retention", "How long finished jobs are kept before they are forgotten.", "7d")
	app.Flag("agent.state-file", "File where tracked agent jobs are persisted across restarts. Default "+agent.DefaultStatePath+" in the working directory; with --mintlify.sandbox a temporary file.").StringVar(&a.StatePath)
	maxPrompt := flagvalue.Bytes(app, "agent.max-prompt-bytes", "Largest request body (and so prompt) the gateway accepts for a job, e.g. 64KiB; larger ones get 413.", "64KiB")

	if _, err := app.Parse(args); err != nil {
		return nil, err
	}
	c.maxRequests, c.maxRetries, c.logLevel, c.logFormat = *maxRequests, *maxRetries, *logLevel, *logFormat
	v.PageSize, v.MaxPaths, a.MaxConcurrentPolls = *pageSize, *maxPaths, *maxPolls

	checks := []struct {
		flag string
		err  error
	}{
		{"--mintlify.timeout", positive(*timeout)},
		{"--mintlify.max-retries", nonNegative(c.maxRetries)},
		{"--web.max-requests", nonNegative(c.maxRequests)},
		{"--web.telemetry-path", absPath(c.telemetryPath)},
		{"--visitors.cache-ttl", positive(*ttl)},
		{"--visitors.page-size", inRange(v.PageSize, 1, apiclient.MaxPageSize)},
		{"--visitors.max-paths", nonNegative(v.MaxPaths)},
		{"--agent.poll-interval", positive(*poll)},
		{"--agent.max-concurrent-polls", inRange(a.MaxConcurrentPolls, 1, 1000)},
		{"--agent.retention", positive(*retention)},
		{"--agent.max-prompt-bytes", inRange(int(*maxPrompt), 1, 16<<20)},
	}
	for _, ch := range checks {
		if ch.err != nil {
			return nil, fmt.Errorf("%s: %w", ch.flag, ch.err)
		}
	}
	if *staleness != 0 && *staleness < *ttl {
		return nil, fmt.Errorf("--visitors.max-staleness: %s is shorter than --visitors.cache-ttl %s", model.Duration(*staleness), model.Duration(*ttl))
	}

	c.timeout = *timeout
	v.CacheTTL, v.MaxStaleness = *ttl, *staleness
	var err error
	if v.Location, err = time.LoadLocation(*tz); err != nil || *tz == "" || *tz == "Local" {
		return nil, fmt.Errorf("--visitors.timezone: unknown time zone %q (want an IANA name such as Europe/Berlin)", *tz)
	}
	seen := map[string]bool{}
	for _, s := range *windows {
		w, err := collector.ParseWindow(s)
		if err != nil {
			return nil, fmt.Errorf("--visitors.window: %w", err)
		}
		if !seen[w.Name] {
			seen[w.Name] = true
			v.Windows = append(v.Windows, w)
		}
	}
	if v.PathInclude, err = optionalRegexp(*include); err != nil {
		return nil, fmt.Errorf("--visitors.path-include: %w", err)
	}
	if v.PathExclude, err = optionalRegexp(*exclude); err != nil {
		return nil, fmt.Errorf("--visitors.path-exclude: %w", err)
	}
	for _, p := range c.projects {
		// Project ids become label values and URL path segments.
		if strings.TrimSpace(p) == "" || strings.ContainsAny(p, "/?#") || !utf8.ValidString(p) {
			return nil, fmt.Errorf("--mintlify.project: invalid project id %q", p)
		}
	}
	c.projects = dedupe(c.projects)
	a.PollInterval, a.ArchiveWatch, a.Retention = *poll, *watch, *retention
	if a.ArchiveWatch == 0 {
		a.ArchiveWatch = -1 // agent.Config reads 0 as "default"; the flag's 0 means off
	}
	a.MaxPromptBytes = int64(*maxPrompt)
	return c, nil
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
	loggers, err := logging.New(os.Stderr, cfg.logLevel, cfg.logFormat)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: error: %v\n", exporterName, err)
		return 2
	}
	logger := loggers.Logger

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, cfg, loggers); err != nil {
		level.Error(logger).Log("msg", "exiting", "err", err)
		return 1
	}
	return 0
}

// serve runs the exporter until ctx ends. Every goroutine it starts has
// exited when it returns.
func serve(ctx context.Context, cfg *config, loggers logging.Loggers) error {
	logger := loggers.Logger
	level.Info(logger).Log("msg", "starting "+exporterName, "version", version.Info(), "build_context", version.BuildContext())

	apiKey, err := readAPIKey(cfg.apiKeyFile)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	if cfg.sandbox {
		if len(cfg.projects) == 0 {
			cfg.projects = sandboxProjects
		}
		apiKey = "mint_sandbox_" + randomHex(12)
		fake := fakeapi.New(fakeapi.Options{Projects: cfg.projects, APIKey: apiKey})
		url, wait, err := fake.Serve(ctx, "127.0.0.1:0")
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := wait(); err != nil {
				level.Error(logger).Log("msg", "sandbox API stopped", "err", err)
			}
		}()
		cfg.apiURL = url
		if cfg.agent.StatePath == "" {
			// The simulated API forgets its jobs when it stops, so a state
			// file kept across runs would only hold jobs it no longer knows.
			dir, err := os.MkdirTemp("", "mintlify_exporter-sandbox-")
			if err != nil {
				return fmt.Errorf("sandbox state directory: %w", err)
			}
			defer os.RemoveAll(dir)
			cfg.agent.StatePath = filepath.Join(dir, "agent.db")
		}
		level.Info(logger).Log("msg", "sandbox: exporting a simulated Mintlify API; no real API is contacted", "api_url", url, "projects", strings.Join(cfg.projects, ","))
	}
	if apiKey == "" {
		return fmt.Errorf("no API key: set %s or --mintlify.api-key-file (or try --mintlify.sandbox)", apiKeyEnv)
	}
	if len(cfg.projects) == 0 {
		return errors.New("no project: give --mintlify.project at least once (or try --mintlify.sandbox)")
	}
	if !strings.HasPrefix(apiKey, "mint_") {
		level.Warn(logger).Log("msg", "the API key does not start with mint_, the prefix of Mintlify admin keys; requests will likely be rejected")
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(
		versioncollector.NewCollector(exporterName),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	client, err := apiclient.New(apiclient.Config{
		BaseURL:    cfg.apiURL,
		APIKey:     apiKey,
		Timeout:    cfg.timeout,
		MaxRetries: cfg.maxRetries,
		Metrics:    apiclient.NewMetrics(reg),
		Logger:     logger,
	})
	if err != nil {
		return fmt.Errorf("--mintlify.api-url: %w", err)
	}

	cfg.visitors.Projects = cfg.projects
	visitors, err := collector.NewVisitors(client, cfg.visitors, logger)
	if err != nil {
		return fmt.Errorf("visitors collector: %w", err)
	}
	defer visitors.Close()
	reg.MustRegister(visitors)

	mux := http.NewServeMux()
	if cfg.enableAgentAPI {
		cfg.agent.Projects = cfg.projects
		if cfg.agent.StatePath == "" {
			cfg.agent.StatePath = agent.DefaultStatePath
		}
		svc, err := agent.New(client, reg, cfg.agent, logger)
		if err != nil {
			return fmt.Errorf("agent jobs: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := svc.Run(ctx); err != nil {
				level.Error(logger).Log("msg", "agent job tracker stopped", "err", err)
			}
			// Only now, with polling over (ctx ends after the HTTP server
			// stopped), may the state file close; Close also waits for
			// gateway creates still recording their job.
			if err := svc.Close(); err != nil {
				level.Error(logger).Log("msg", "closing the agent state file", "err", err)
			}
		}()
		mux.Handle("/api/", svc.Handler())
		level.Warn(logger).Log("msg", "agent job gateway enabled under /api/: anyone who can reach it can open pull requests", "web_config_file", *cfg.web.WebConfigFile)
	} else {
		mux.HandleFunc("/api/", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"error":"the agent job gateway is disabled; start the exporter with --web.enable-agent-api"}`+"\n")
		})
	}

	metricsHandler := promhttp.InstrumentMetricHandler(reg, promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:            logging.PromHTTPErrorLogger{Logger: logger},
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: cfg.maxRequests,
		Registry:            reg,
	}))
	mux.Handle(cfg.telemetryPath, collector.RefreshBeforeScrape(metricsHandler, visitors, defaultScrapeTimeout))

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
