package config

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/mintlify-exporter/mintlify_exporter/internal/cluster"
	"github.com/mintlify-exporter/mintlify_exporter/internal/flagvalue"
	"github.com/mintlify-exporter/mintlify_exporter/internal/refresh"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
	"github.com/mintlify-exporter/mintlify_exporter/internal/visitors"
)

// Flags are the command line's route to a Config: --config.file, or the
// flags that describe one organization and its projects.
type Flags struct {
	File string
	// DefaultSources are read when no --analytics.source is given (the
	// sandbox's: every source); nil: sources.Defaults().
	DefaultSources []string
	// DefaultTopQueries is --analytics.search-top-queries when not given
	// (the sandbox's queries are made up: no personal data).
	DefaultTopQueries int

	keyFile  string
	projects []string
	budget   *int
	windows  []string
	timezone string
	maxPaths *int
	include  string
	exclude  string
	sources  []string
	topQ     *int

	// set records which per-organization or per-project flags the user
	// gave, to refuse them beside --config.file.
	set map[string]*bool
	// cluster: the --cluster.* flags, the flag route's cluster section.
	cluster *cluster.Flags
}

// RegisterFlags adds the configuration flags to app.
func RegisterFlags(app flagvalue.Flagger) *Flags {
	f := &Flags{set: map[string]*bool{}}
	app.Flag("config.file", "YAML file of the organizations and projects to export (see docs/configuration.md); reloaded on SIGHUP and POST /-/reload. Replaces the --mintlify.project, --mintlify.api-key-file, --mintlify.analytics-budget and --visitors.window/timezone/path-*/max-paths flags.").
		PlaceHolder("PATH").StringVar(&f.File)
	track := func(c *kingpin.FlagClause) *kingpin.FlagClause {
		b := new(bool)
		f.set["--"+c.Model().Name] = b
		return c.IsSetByUser(b)
	}
	track(app.Flag("mintlify.api-key-file", "File holding the Mintlify admin API key (else the "+DefaultAPIKeyEnv+" environment variable).")).PlaceHolder("PATH").StringVar(&f.keyFile)
	track(app.Flag("mintlify.project", "Mintlify project id to export (repeatable).")).PlaceHolder("ID").StringsVar(&f.projects)
	f.budget = flagvalue.Int(app, "mintlify.analytics-budget", "Analytics requests this process may send per rolling hour, for all projects, windows, pages and retries together. The API allows 100 per organization (one admin key) per hour, shared with every other tool of the organization.", strconv.Itoa(DefaultBudget))
	f.set["--mintlify.analytics-budget"] = new(bool)
	trackSet(app, "mintlify.analytics-budget", f.set["--mintlify.analytics-budget"])
	track(app.Flag("visitors.window", "Date window to export, Nd = the last N calendar days including today, optionally with its own shortest refresh interval, Nd:INTERVAL (repeatable).")).Default(DefaultWindow).StringsVar(&f.windows)
	track(app.Flag("visitors.timezone", "IANA time zone that decides where a day starts for the windows.")).Default(DefaultTimezone).StringVar(&f.timezone)
	f.maxPaths = flagvalue.Int(app, "visitors.max-paths", "Keep at most this many paths per project and window, the most visited first. 0 = no cap.", strconv.Itoa(DefaultMaxPaths))
	f.set["--visitors.max-paths"] = new(bool)
	trackSet(app, "visitors.max-paths", f.set["--visitors.max-paths"])
	track(app.Flag("visitors.path-include", "Only export paths matching this regular expression.")).PlaceHolder("REGEXP").StringVar(&f.include)
	track(app.Flag("visitors.path-exclude", "Do not export paths matching this regular expression.")).PlaceHolder("REGEXP").StringVar(&f.exclude)
	track(app.Flag("analytics.source", "Analytics source to export, one of "+strings.Join(sources.Names(), ", ")+" (repeatable; default: "+strings.Join(sources.Defaults(), ", ")+"), each over the --visitors.window windows.")).PlaceHolder("SOURCE").StringsVar(&f.sources)
	f.topQ = flagvalue.Int(app, "analytics.search-top-queries", "Export the N most searched queries with their text as a label (0: none; queries may hold personal data).", "0")
	f.set["--analytics.search-top-queries"] = new(bool)
	trackSet(app, "analytics.search-top-queries", f.set["--analytics.search-top-queries"])
	f.cluster = cluster.RegisterFlags(app)
	return f
}

// trackSet marks *set when the flag name was given, for flags whose clause
// flagvalue built.
func trackSet(app flagvalue.Flagger, name string, set *bool) {
	if a, ok := app.(interface {
		GetFlag(string) *kingpin.FlagClause
	}); ok {
		if c := a.GetFlag(name); c != nil {
			c.IsSetByUser(set)
		}
	}
}

// Build returns the validated Config the flags describe (keys not read
// yet). minInterval is the shortest refresh interval a window may ask for;
// defaultProjects are exported when no --mintlify.project is given (the
// sandbox's).
// Every error is one line naming its flag (or, for a file, every problem
// with its line).
func (f *Flags) Build(minInterval time.Duration, defaultProjects []string) (*Config, error) {
	if f.File != "" {
		for _, name := range []string{"--mintlify.project", "--mintlify.api-key-file", "--mintlify.analytics-budget",
			"--visitors.window", "--visitors.timezone", "--visitors.max-paths", "--visitors.path-include", "--visitors.path-exclude",
			"--analytics.source", "--analytics.search-top-queries"} {
			if *f.set[name] {
				return nil, fmt.Errorf("%s: not with --config.file, which holds every organization's and project's settings", name)
			}
		}
		if f.cluster.Set() {
			return nil, errors.New("--cluster.redis-address: not with --config.file: give its cluster: section instead")
		}
		return LoadFile(f.File, minInterval)
	}
	org := Organization{Name: DefaultOrganization, APIKeyFile: f.keyFile, AnalyticsBudget: *f.budget}
	org.origin = "--mintlify.api-key-file"
	if f.keyFile == "" {
		org.APIKeyEnv, org.origin = DefaultAPIKeyEnv, "--mintlify.api-key-file or "+DefaultAPIKeyEnv
	}
	if err := checkBudget(org.AnalyticsBudget); err != nil {
		return nil, fmt.Errorf("--mintlify.analytics-budget: %w", err)
	}
	var p visitors.Project
	var err error
	if p.Windows, err = ParseWindows(f.windows, minInterval); err != nil {
		return nil, fmt.Errorf("--visitors.window: %w", err)
	}
	if p.Location, err = ParseTimezone(f.timezone); err != nil {
		return nil, fmt.Errorf("--visitors.timezone: %w", err)
	}
	if *f.maxPaths < 0 {
		return nil, fmt.Errorf("--visitors.max-paths: must be 0 or greater, got %d", *f.maxPaths)
	}
	p.Paths.MaxPaths = *f.maxPaths
	if p.Paths.Include, err = OptionalRegexp(f.include); err != nil {
		return nil, fmt.Errorf("--visitors.path-include: %w", err)
	}
	if p.Paths.Exclude, err = OptionalRegexp(f.exclude); err != nil {
		return nil, fmt.Errorf("--visitors.path-exclude: %w", err)
	}
	topQ := f.topQ
	if !*f.set["--analytics.search-top-queries"] && f.DefaultTopQueries > 0 {
		topQ = &f.DefaultTopQueries
	}
	specs := DefaultSources(topQ)
	if names := f.sources; len(names) > 0 || len(f.DefaultSources) > 0 {
		if len(names) == 0 {
			names = f.DefaultSources
		}
		specs = nil
		for _, name := range sources.Names() { // the registry's order, each once
			if slices.Contains(names, name) {
				specs = append(specs, sources.Spec{Name: name})
			}
		}
		for _, name := range f.sources {
			if _, ok := sources.ByName(name); !ok {
				return nil, fmt.Errorf("--analytics.source: unknown source %q (want one of %s)", name, strings.Join(sources.Names(), ", "))
			}
		}
		for i := range specs {
			if specs[i].Name == sources.NameSearches {
				specs[i].TopQueries = *topQ
			}
		}
	}
	if *f.topQ < 0 || *f.topQ > 1000 {
		return nil, fmt.Errorf("--analytics.search-top-queries: must be between 0 and 1000, got %d", *f.topQ)
	}
	if err := f.cluster.Validate(); err != nil {
		return nil, err
	}
	cfg := &Config{Organizations: []Organization{org}, Cluster: f.cluster.Config}
	seen := map[string]bool{}
	ids := f.projects
	if len(ids) == 0 {
		ids = defaultProjects
	}
	for _, id := range ids {
		if err := checkProjectID(id); err != nil {
			return nil, fmt.Errorf("--mintlify.project: %w", err)
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		q := p
		q.ID = id
		cfg.Projects = append(cfg.Projects, Project{Project: refresh.Project{Project: q, Sources: specs}, Organization: org.Name, AgentJobs: true})
	}
	return cfg, nil
}
