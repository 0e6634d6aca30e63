package config

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"

	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
)

// Flags are the command line's route to a Config: --config.file, or the
// flags that describe one organization and its projects.
type Flags struct {
	File string
	// DefaultSources are read when no --analytics.source is given (the
	// sandbox's: every source); nil: the default sources.
	DefaultSources []string
	// DefaultSettings are the values of sources' setting flags that are
	// not given, by flag name without "--" (the sandbox's top queries: its
	// queries are made up, so they hold no personal data).
	DefaultSettings map[string]int
	// DefaultBudget, when above 0, is the analytics budget when
	// --mintlify.analytics-budget is not given (the sandbox's: no other
	// tool shares its simulated quota, so its first round of every
	// source and window fits in its first minute).
	DefaultBudget int

	keyFile  string
	expires  string
	projects []string
	budget   *int
	windows  []string
	timezone string
	maxPaths *int
	include  string
	exclude  string
	sources  []string
	// settings are the sources' setting flags (sources.Setting.Flag).
	settings []settingFlag

	// set records which per-organization or per-project flags the user
	// gave, to refuse them beside --config.file.
	set map[string]*bool
	// renames are the old names of the analytics flags (--visitors.*);
	// oldWindows is what the old --visitors.window gave (it repeats, so
	// it cannot share the new flag's value).
	renames    Renames
	oldWindows []string
	// cluster: the --cluster.* flags, the flag route's cluster section.
	cluster *ClusterFlags
}

// RegisterFlags adds the configuration flags to app.
func RegisterFlags(app Flagger) *Flags {
	f := &Flags{set: map[string]*bool{}}
	app.Flag("config.file", "YAML file of the organizations and projects to export (see docs/configuration.md); reloaded on SIGHUP and POST /-/reload. Replaces the --mintlify.project, --mintlify.api-key-file, --mintlify.api-key-expires, --mintlify.analytics-budget, --analytics.window/timezone/path-*/max-paths/source and sources' setting flags.").
		PlaceHolder("PATH").StringVar(&f.File)
	track := func(c *kingpin.FlagClause) *kingpin.FlagClause {
		b := new(bool)
		f.set["--"+c.Model().Name] = b
		return c.IsSetByUser(b)
	}
	intFlag := func(name, help string, def int) *int {
		n := new(int)
		track(app.Flag(name, help)).Default(strconv.Itoa(def)).SetValue(&intValue{name: name, n: n})
		return n
	}
	track(app.Flag("mintlify.api-key-file", "File holding the Mintlify admin API key (else the "+DefaultAPIKeyEnv+" environment variable).")).PlaceHolder("PATH").StringVar(&f.keyFile)
	track(app.Flag("mintlify.api-key-expires", "When the admin API key expires: a date (2027-02-24, read as its start in UTC) or an RFC 3339 time; exported for an alert two weeks before.")).PlaceHolder("DATE").StringVar(&f.expires)
	track(app.Flag("mintlify.project", "Mintlify project id to export (repeatable).")).PlaceHolder("ID").StringsVar(&f.projects)
	f.budget = intFlag("mintlify.analytics-budget", "Analytics requests this process may send per rolling hour, for all projects, windows, pages and retries together. The API allows 100 per organization (one admin key) per hour, shared with every other tool of the organization.", DefaultBudget)
	track(app.Flag("analytics.window", "Date window to export, Nd = the last N calendar days including today, optionally with its own shortest refresh interval, Nd:INTERVAL (repeatable).")).Default(DefaultWindow).StringsVar(&f.windows)
	track(app.Flag("analytics.timezone", "IANA time zone that decides where a day starts for the windows.")).Default(DefaultTimezone).StringVar(&f.timezone)
	f.maxPaths = intFlag("analytics.max-paths", "Keep at most this many paths per project, source and window, the most visited first. 0 = no cap.", DefaultMaxPaths)
	track(app.Flag("analytics.path-include", "Only export paths matching this regular expression.")).PlaceHolder("REGEXP").StringVar(&f.include)
	track(app.Flag("analytics.path-exclude", "Do not export paths matching this regular expression.")).PlaceHolder("REGEXP").StringVar(&f.exclude)
	track(app.Flag("analytics.source", "Analytics source to export, one of "+strings.Join(analytics.SourceNames(false), ", ")+" (repeatable; default: "+strings.Join(analytics.SourceNames(true), ", ")+"), each over the --analytics.window windows.")).PlaceHolder("SOURCE").StringsVar(&f.sources)
	for _, def := range analytics.Sources() {
		for _, s := range def.Settings {
			if s.Flag == "" {
				continue
			}
			f.settings = append(f.settings, settingFlag{source: def.Name, setting: s, value: intFlag(s.Flag, s.Help, 0)})
		}
	}
	// The old names: every analytics flag was --visitors.* when visitors
	// was the one source.
	app.Flag("visitors.window", "Deprecated name of --analytics.window.").Hidden().IsSetByUser(f.renames.AddOwn("visitors.window", "analytics.window")).StringsVar(&f.oldWindows)
	for _, name := range []string{"timezone", "max-paths", "path-include", "path-exclude"} {
		f.renames.Add(app, "visitors."+name, "analytics."+name)
	}
	f.cluster = RegisterClusterFlags(app)
	return f
}

// Deprecated tells which old flag names were given and their new names
// ("" when none was), for the log.
func (f *Flags) Deprecated() string { return f.renames.Notice() }

// settingFlag is the flag of one source's setting.
type settingFlag struct {
	source  string
	setting analytics.Setting
	value   *int
}

// Build returns the validated Config the flags describe (keys not read
// yet). minInterval is the shortest refresh interval a window may ask for;
// defaultProjects are exported when no --mintlify.project is given (the
// sandbox's).
// Every error is one line naming its flag (or, for a file, every problem
// with its line).
func (f *Flags) Build(minInterval time.Duration, defaultProjects []string) (*Config, error) {
	if f.File != "" {
		for _, name := range slices.Sorted(maps.Keys(f.set)) {
			if *f.set[name] {
				return nil, fmt.Errorf("%s: not with --config.file, which holds every organization's and project's settings", f.renames.Name(strings.TrimPrefix(name, "--")))
			}
		}
		if old := f.renames.Given(); len(old) > 0 {
			return nil, fmt.Errorf("%s: not with --config.file, which holds every organization's and project's settings", old[0])
		}
		if f.cluster.Set() {
			return nil, errors.New("--cluster.redis-address: not with --config.file: give its cluster: section instead")
		}
		return LoadFile(f.File, minInterval)
	}
	// The flags fill the file's structure, and the file's builder
	// validates it: one rule in one place, its problems named by flag.
	budget := *f.budget
	if f.DefaultBudget > 0 && !*f.set["--mintlify.analytics-budget"] {
		budget = f.DefaultBudget
	}
	raw := fileConfig{Organizations: []fileOrganization{{Name: DefaultOrganization, APIKeyFile: f.keyFile, AnalyticsBudget: &budget, APIKeyExpires: f.expires}}}
	origin := "--mintlify.api-key-file"
	if f.keyFile == "" {
		raw.Organizations[0].APIKeyEnv, origin = DefaultAPIKeyEnv, "--mintlify.api-key-file or "+DefaultAPIKeyEnv
	}
	maxPaths := *f.maxPaths
	windows := f.windows
	if f.renames.Used("visitors.window") {
		if !*f.set["--analytics.window"] {
			windows = nil // the new flag's default
		}
		windows = append(slices.Clone(windows), f.oldWindows...)
	}
	project := fileProject{Organization: DefaultOrganization, Windows: windows, Timezone: f.timezone, Kinds: kindKeys{},
		Paths: filePaths{Include: f.include, Exclude: f.exclude, Max: &maxPaths}, Sources: f.sourcesEntry()}
	for _, s := range kindSettings { // the flag route's projects take every kind
		project.Kinds[s.Key] = s.flagValue()
	}
	ids := f.projects
	if len(ids) == 0 {
		ids = defaultProjects
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if !seen[id] { // a repeated --mintlify.project is one project
			seen[id] = true
			p := project
			p.ID = id
			raw.Projects = append(raw.Projects, p)
		}
	}
	if len(raw.Projects) == 0 {
		// The project flags are checked without a project too (the
		// exporter asks for one when it serves; other commands need none).
		raw.Projects = []fileProject{project}
		raw.Projects[0].ID = "-"
	}
	b := builder{lines: map[string]int{}, flagOf: func(key string) string {
		flag := flagOf(key)
		if name, ok := strings.CutPrefix(flag, "--"); ok {
			return f.renames.Name(name) // the name the user gave
		}
		return flag
	}}
	cfg := b.build(&raw, minInterval)
	if len(b.problems) > 0 {
		return nil, b.problems
	}
	if len(seen) == 0 {
		cfg.Projects = nil
	}
	cfg.Organizations[0].origin = origin
	if err := f.cluster.Validate(); err != nil {
		return nil, err
	}
	cfg.Cluster = f.cluster.Config
	return cfg, nil
}

// sourcesEntry is the sources: entry of the flag route's projects: nil (the
// default sources) unless --analytics.source or a setting's flag is given,
// each setting under its source when that source is exported.
func (f *Flags) sourcesEntry() map[string]*fileSource {
	names := f.sources
	if len(names) == 0 {
		names = f.DefaultSources
	}
	if len(names) == 0 {
		given := slices.ContainsFunc(f.settings, func(sf settingFlag) bool { return *f.set["--"+sf.setting.Flag] })
		if !given {
			return nil
		}
		names = analytics.SourceNames(true)
	}
	out := map[string]*fileSource{}
	for _, name := range names {
		out[name] = &fileSource{}
	}
	for _, sf := range f.settings {
		e := out[sf.source]
		if e == nil {
			continue
		}
		v, given := *sf.value, *f.set["--"+sf.setting.Flag]
		if d, ok := f.DefaultSettings[sf.setting.Flag]; ok && !given {
			v, given = d, true
		}
		if given {
			if e.Settings == nil {
				e.Settings = map[string]int{}
			}
			e.Settings[sf.setting.Key] = v
		}
	}
	return out
}

// projectFlags are the flags of a project's keys on the flag route.
var projectFlags = map[string]string{
	"id": "--mintlify.project", "windows": "--analytics.window", "timezone": "--analytics.timezone",
	"paths.include": "--analytics.path-include", "paths.exclude": "--analytics.path-exclude", "paths.max": "--analytics.max-paths",
}

// projectKey is a project's key path: projects[N].rest.
var projectKey = regexp.MustCompile(`^projects\[\d+\]\.(.*)$`)

// entryIndex is the index of a list's entry at the end of a key path.
var entryIndex = regexp.MustCompile(`\[\d+\]$`)

// flagOf names the flag of a key path the flag route filled.
func flagOf(key string) string {
	switch key {
	case "organizations[0].analytics_budget":
		return "--mintlify.analytics-budget"
	case "organizations[0].api_key_expires":
		return "--mintlify.api-key-expires"
	}
	g := projectKey.FindStringSubmatch(key)
	if g == nil {
		return key
	}
	g[1] = entryIndex.ReplaceAllString(g[1], "") // windows[1]: the one flag of every window
	if flag, ok := projectFlags[g[1]]; ok {
		return flag
	}
	parts := strings.Split(g[1], ".")
	switch {
	case len(parts) == 2 && parts[0] == "sources":
		return "--analytics.source"
	case len(parts) == 3 && parts[0] == "sources":
		if info, ok := analytics.Source(parts[1]); ok {
			if s, ok := info.Setting(parts[2]); ok && s.Flag != "" {
				return "--" + s.Flag
			}
		}
	}
	return key
}
