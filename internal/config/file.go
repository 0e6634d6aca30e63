package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/secrets"
)

// The file's shape. Every key is spelled here; an unknown one is an error.
type fileConfig struct {
	Organizations []fileOrganization `yaml:"organizations"`
	Projects      []fileProject      `yaml:"projects"`
	// Cluster: replicas sharing one state in Redis (internal/sharedredis).
	Cluster *Cluster `yaml:"cluster"`
}

type fileOrganization struct {
	Name            string  `yaml:"name"`
	APIKeyFile      string  `yaml:"api_key_file"`
	APIKeyEnv       string  `yaml:"api_key_env"`
	APIKey          *string `yaml:"api_key"` // refused: see check
	AnalyticsBudget *int    `yaml:"analytics_budget"`
	// APIKeyExpires: when the key expires (ParseKeyExpiry), for the
	// mintlify_api_key_expiry_timestamp_seconds gauge.
	APIKeyExpires string `yaml:"api_key_expires"`
}

type fileProject struct {
	ID           string    `yaml:"id"`
	Organization string    `yaml:"organization"`
	Windows      []string  `yaml:"windows"`
	Timezone     string    `yaml:"timezone"`
	Paths        filePaths `yaml:"paths"`
	// Kinds are its keys of the kinds of operation (KindSetting).
	Kinds kindKeys `yaml:",inline"`
	// Sources by name, or a list of names; left out: the default sources.
	Sources sourcesEntry `yaml:"sources"`
}

type fileSource struct {
	Windows []string `yaml:"windows"`
	// Settings are the source's own keys (sources.Def.Settings).
	Settings map[string]int `yaml:",inline"`
}

type filePaths struct {
	Include string `yaml:"include"`
	Exclude string `yaml:"exclude"`
	Max     *int   `yaml:"max"`
}

// Problems is every problem found in a configuration, one per line.
type Problems []Problem

// Problem is one invalid key (or flag), with the line where it stands.
type Problem struct {
	File string
	Line int
	// Key is the key's path (projects[1].windows) or the flag (--analytics.window).
	Key string
	Msg string
}

func (p Problem) String() string {
	var b strings.Builder
	if p.File != "" {
		b.WriteString(p.File)
		if p.Line > 0 {
			b.WriteString(":" + strconv.Itoa(p.Line))
		}
		b.WriteString(": ")
	}
	if p.Key != "" {
		b.WriteString(p.Key + ": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// MaxFileBytes bounds a read of --config.file: thousands of projects fit,
// and a wrong path (/dev/zero) is refused instead of read until memory
// runs out.
const MaxFileBytes = 4 << 20

// LoadFile reads and validates a configuration file. Keys are not read
// (LoadKeys does that), so `config check` works where the keys are not.
// The error is Problems: every problem, each with file and line.
// minInterval is the shortest refresh interval a window may ask for.
func LoadFile(path string, minInterval time.Duration) (*Config, error) {
	data, err := secrets.ReadAtMost(path, MaxFileBytes)
	if err != nil {
		return nil, Problems{{File: path, Msg: err.Error()}}
	}
	return Parse(path, data, minInterval)
}

// Parse reads and validates a configuration file's content.
func Parse(file string, data []byte, minInterval time.Duration) (*Config, error) {
	defaults := ClusterDefaults() // keys the cluster section leaves out
	raw := fileConfig{Cluster: &defaults}
	// Not strict: an unknown key or a value of the wrong type is one
	// problem among the others, all reported together (unknownKeys).
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var typeErrors Problems
	var te *yaml.TypeError
	switch err := dec.Decode(&raw); {
	case err == nil || errors.Is(err, io.EOF):
	case errors.As(err, &te):
		typeErrors = yamlProblems(file, err) // the rest was read
	default:
		return nil, yamlProblems(file, err) // not YAML: nothing more to read
	}
	var root yaml.Node
	_ = yaml.Unmarshal(data, &root)
	b := builder{file: file, lines: map[string]int{}, badType: map[string]bool{}}
	b.index(&root, "")
	b.typeProblems(&root, reflect.TypeFor[fileConfig](), "")
	if len(b.problems) == 0 {
		b.problems = typeErrors // one the walk does not know: the library's words
	}
	b.unknownKeys(&root, reflect.TypeFor[fileConfig](), "")
	cfg := b.build(&raw, minInterval)
	cfg.Cluster = *raw.Cluster
	var fe *FieldError
	if err := cfg.Cluster.Validate(); errors.As(err, &fe) {
		b.problem(cmp.Or(ClusterFileKeys[fe.Field], "cluster"), "%v", fe.Err)
	} else if err != nil {
		b.problem("cluster", "%v", err)
	}
	if len(b.problems) > 0 {
		slices.SortStableFunc(b.problems, func(x, y Problem) int { return cmp.Compare(x.Line, y.Line) })
		return nil, b.problems
	}
	cfg.File = file
	return cfg, nil
}

// yamlLine finds "line N: " in a YAML library message.
var yamlLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// typeNames turns the Go names in the YAML library's messages into the
// file's words.
var typeNames = strings.NewReplacer(
	"config.fileConfig", "the top level", "config.fileOrganization", "an organization",
	"config.fileProject", "a project", "config.filePaths", "paths", "config.fileSource", "a source",
	"config.ClusterTLS", "cluster.tls", "config.ClusterSentinel", "cluster.sentinel", "config.Cluster", "cluster",
)

func yamlProblems(file string, err error) Problems {
	var msgs []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	} else {
		msgs = []string{err.Error()}
	}
	var out Problems
	for _, m := range msgs {
		m = typeNames.Replace(m)
		p := Problem{File: file, Msg: strings.TrimPrefix(m, "yaml: ")}
		if g := yamlLine.FindStringSubmatch(m); g != nil {
			p.Line, _ = strconv.Atoi(g[1])
			p.Msg = g[2]
		}
		out = append(out, p)
	}
	return out
}

// builder turns the file's values into a Config, collecting problems.
type builder struct {
	file     string
	lines    map[string]int // key path -> line
	problems Problems
	// flagOf, on the flag route, names the flag of a key path: problems
	// name flags, and a problem common to every project is told once.
	flagOf func(key string) string
	// badType are the key paths whose value had the wrong type (or an
	// unknown key of a source): told once, not again as the zero value
	// the library left there.
	badType map[string]bool
}

// index records the line of every key path below n.
func (b *builder) index(n *yaml.Node, path string) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			b.index(c, path)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if path != "" {
				k = path + "." + k
			}
			b.lines[k] = n.Content[i].Line
			b.index(n.Content[i+1], k)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			k := fmt.Sprintf("%s[%d]", path, i)
			b.lines[k] = c.Line
			b.index(c, k)
		}
	}
}

// problemAtLine records msg at a line, naming no key (msg does).
func (b *builder) problemAtLine(line int, msg string, args ...any) {
	b.problems = append(b.problems, Problem{File: b.file, Line: line, Msg: fmt.Sprintf(msg, args...)})
}

// problem records msg at key (the line of the nearest key path known).
func (b *builder) problem(key, msg string, args ...any) {
	for k := key; k != ""; {
		if b.badType[k] {
			return
		}
		i := strings.LastIndexAny(k, ".[")
		if i < 0 {
			break
		}
		k = k[:i]
	}
	line := 0
	for k := key; k != ""; {
		if l, ok := b.lines[k]; ok {
			line = l
			break
		}
		i := strings.LastIndexAny(k, ".[")
		if i < 0 {
			break
		}
		k = k[:i]
	}
	p := Problem{File: b.file, Line: line, Key: key, Msg: fmt.Sprintf(msg, args...)}
	if b.flagOf != nil {
		p.Key = b.flagOf(key)
		if slices.Contains(b.problems, p) {
			return
		}
	}
	b.problems = append(b.problems, p)
}

func (b *builder) build(raw *fileConfig, minInterval time.Duration) *Config {
	cfg := &Config{}
	orgs := map[string]bool{}
	for i, o := range raw.Organizations {
		cfg.Organizations = append(cfg.Organizations, b.organization(fmt.Sprintf("organizations[%d]", i), o, orgs))
	}
	if len(raw.Organizations) == 0 {
		b.problem("organizations", "no organization: give at least one, with its key")
	}
	if len(raw.Projects) == 0 {
		b.problem("projects", "no project: give at least one")
	}
	ids := map[string]int{}
	for i, fp := range raw.Projects {
		key := fmt.Sprintf("projects[%d]", i)
		p := Project{Organization: fp.Organization}
		p.ID = fp.ID
		b.projectID(key, i, fp.ID, ids)
		p.Organization = b.projectOrganization(key, fp.Organization, raw.Organizations, orgs)
		windows := fp.Windows
		if len(windows) == 0 {
			windows = []string{DefaultWindow}
		}
		p.Windows = b.windows(key+".windows", windows, minInterval)
		var err error
		if p.Location, err = ParseTimezone(cmp.Or(fp.Timezone, DefaultTimezone)); err != nil {
			b.problem(key+".timezone", "%v", err)
		}
		p.Paths = b.paths(key+".paths", fp.Paths)
		p.Sources = b.sources(key, fp, minInterval)
		p.Kinds = b.kinds(key, fp.Kinds)
		cfg.Projects = append(cfg.Projects, p)
	}
	return cfg
}

// organization reads the organization at key; orgs are the names seen so
// far (its own is added).
func (b *builder) organization(key string, o fileOrganization, orgs map[string]bool) Organization {
	org := Organization{Name: o.Name, APIKeyFile: o.APIKeyFile, APIKeyEnv: o.APIKeyEnv, AnalyticsBudget: DefaultBudget}
	if err := checkOrgName(o.Name); err != nil {
		b.problem(key+".name", "%v", err)
	} else if orgs[o.Name] {
		b.problem(key+".name", "organization %q given twice", o.Name)
	}
	orgs[o.Name] = true
	switch {
	case o.APIKey != nil:
		b.problem(key+".api_key", "an API key is never written in the configuration file: put it in a file (api_key_file) or an environment variable (api_key_env)")
	case o.APIKeyFile == "" && o.APIKeyEnv == "":
		b.problem(key, "give api_key_file or api_key_env")
	case o.APIKeyFile != "" && o.APIKeyEnv != "":
		b.problem(key, "give api_key_file or api_key_env, not both")
	}
	if o.AnalyticsBudget != nil {
		if err := InRange(*o.AnalyticsBudget, 1, maxBudget); err != nil {
			b.problem(key+".analytics_budget", "%v", err)
		}
		org.AnalyticsBudget = *o.AnalyticsBudget
	}
	if o.APIKeyExpires != "" {
		var err error
		if org.APIKeyExpires, err = ParseKeyExpiry(o.APIKeyExpires); err != nil {
			b.problem(key+".api_key_expires", "%v", err)
		}
	}
	return org
}

// projectID checks the id of the i-th project (at key); ids are the
// indexes of the ids seen so far (its own is added when valid and new).
func (b *builder) projectID(key string, i int, id string, ids map[string]int) {
	if err := checkProjectID(id); err != nil {
		b.problem(key+".id", "%v", err)
	} else if prev, dup := ids[id]; dup {
		b.problem(key+".id", "project %q given twice (first at line %d)", id, b.lines[fmt.Sprintf("projects[%d].id", prev)])
	} else {
		ids[id] = i
	}
}

// projectOrganization is the organization of the project at key: the one
// given, which must be known (in orgs), or the only one there is.
func (b *builder) projectOrganization(key, given string, all []fileOrganization, orgs map[string]bool) string {
	switch {
	case given == "" && len(all) == 1:
		return all[0].Name
	case given == "":
		b.problem(key, "organization: required when there is more than one organization")
	case !orgs[given]:
		b.problem(key+".organization", "unknown organization %q", given)
	}
	return given
}

// paths reads a project's path policy (at key).
func (b *builder) paths(key string, fp filePaths) analytics.PathPolicy {
	var (
		p   analytics.PathPolicy
		err error
	)
	if p.Include, err = OptionalRegexp(fp.Include); err != nil {
		b.problem(key+".include", "%v", err)
	}
	if p.Exclude, err = OptionalRegexp(fp.Exclude); err != nil {
		b.problem(key+".exclude", "%v", err)
	}
	p.MaxPaths = DefaultMaxPaths
	if fp.Max != nil {
		if *fp.Max < 0 {
			b.problem(key+".max", "must be 0 (no cap) or more, got %d", *fp.Max)
		}
		p.MaxPaths = *fp.Max
	}
	return p
}

// sources reads a project's sources, in the registry's order; none given
// are the default sources over the project's windows.
func (b *builder) sources(key string, fp fileProject, minInterval time.Duration) []analytics.SourceSpec {
	if fp.Sources == nil {
		return analytics.DefaultSources()
	}
	for name := range fp.Sources {
		if _, ok := analytics.Source(name); !ok {
			b.problem(key+".sources."+name, "unknown source %q (want one of %s)", name, strings.Join(analytics.SourceNames(false), ", "))
		}
	}
	var out []analytics.SourceSpec
	for _, def := range analytics.Sources() {
		fs, ok := fp.Sources[def.Name]
		if !ok {
			continue
		}
		if fs == nil {
			fs = &fileSource{}
		}
		k := key + ".sources." + def.Name
		spec := analytics.SourceSpec{Name: def.Name}
		if fs.Windows != nil {
			if spec.Windows = b.windows(k+".windows", fs.Windows, minInterval); len(fs.Windows) == 0 {
				b.problem(k+".windows", "no window: leave the key out for the project's windows")
			}
		}
		for _, field := range slices.Sorted(maps.Keys(fs.Settings)) {
			v := fs.Settings[field]
			setting, ok := def.Setting(field)
			if !ok {
				b.problem(k+"."+field, "%s", notASetting(def, field))
				continue
			}
			if err := setting.CheckGiven(v); err != nil {
				b.problem(k+"."+field, "%v", err)
				continue
			}
			if v != 0 {
				if spec.Settings == nil {
					spec.Settings = map[string]int{}
				}
				spec.Settings[field] = v
			}
		}
		out = append(out, spec)
	}
	if len(out) == 0 && len(fp.Sources) == 0 {
		b.problem(key+".sources", "no source: leave the key out for the default sources")
	}
	return out
}

// notASetting says why field is not a key of def's entry: another
// source's setting, or no key at all.
func notASetting(def analytics.SourceInfo, field string) string {
	for _, o := range analytics.Sources() {
		if _, ok := o.Setting(field); ok {
			return fmt.Sprintf("only the %s source has %s", o.Name, field)
		}
	}
	keys := []string{"windows"}
	for _, s := range def.Settings {
		keys = append(keys, s.Key)
	}
	return fmt.Sprintf("unknown key %q (the %s source has %s)", field, def.Name, strings.Join(keys, ", "))
}

// windows reads the window specs at key, dropping exact repeats; every bad
// entry is a problem of its own (key[i]), not only the first.
func (b *builder) windows(key string, specs []string, minInterval time.Duration) []analytics.Window {
	var out []analytics.Window
	for i, s := range specs {
		at := fmt.Sprintf("%s[%d]", key, i)
		w, err := analytics.ParseWindow(s)
		if err != nil {
			b.problem(at, "%v", err)
			continue
		}
		if w.Interval != 0 && minInterval > 0 && w.Interval < minInterval {
			b.problem(at, "%s refreshes more often than the shortest interval of any window (--analytics.min-interval %s)", s, minInterval)
			continue
		}
		if j := slices.IndexFunc(out, func(o analytics.Window) bool { return o.Name == w.Name }); j >= 0 {
			if out[j] != w {
				b.problem(at, "window %s given twice, with different intervals", w.Name)
			}
			continue
		}
		out = append(out, w)
	}
	return out
}
