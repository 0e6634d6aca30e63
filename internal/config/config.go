// Package config is the exporter's configuration of what it exports: the
// organizations (one admin key, one analytics budget each) and their
// projects (windows, time zone, paths, sources, the kinds of operation
// they take). It comes from a YAML
// file (--config.file, reloadable) or, for one organization, from flags;
// both routes produce the same validated Config, so everything after
// parsing has one code path. Process settings (listen address, logging,
// state file, timeouts) stay flags, owned by the packages that use them.
package config

import (
	"cmp"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/secrets"
)

// Defaults of the keys a file may leave out (and of the flags).
const (
	DefaultOrganization = "default"
	DefaultMaxPaths     = 1000
	DefaultWindow       = "1d"
	DefaultTimezone     = "UTC"
	// DefaultAPIKeyEnv is where the flag route reads the key when no key
	// file is given.
	DefaultAPIKeyEnv = "MINTLIFY_API_KEY"
	maxBudget        = 100000
)

// Config is what the exporter exports and with which keys.
type Config struct {
	Organizations []Organization
	Projects      []Project
	// File is the file it was read from ("" when it came from flags).
	File string
	// Cluster is the Redis that replicas share (not Enabled: none); a
	// reload cannot change it.
	Cluster Cluster
}

// Organization is one admin key and the analytics budget it draws on.
type Organization struct {
	Name string
	// APIKeyFile or APIKeyEnv says where the key is; Load reads it into
	// APIKey (never printed, never logged).
	APIKeyFile, APIKeyEnv string
	APIKey                string
	// AnalyticsBudget is the requests per rolling hour this exporter may
	// send with the key.
	AnalyticsBudget int
	// APIKeyExpires is when the key expires, as the operator wrote it down
	// (the API does not tell: an expired key just answers 401); zero when
	// not given.
	APIKeyExpires time.Time
	// origin names where the organization was configured, for errors
	// (a flag, or "organization NAME").
	origin string
}

// Project is one documentation project and how it is exported: its
// windows, time zone, paths and analytics sources.
type Project struct {
	analytics.PlanProject
	// Organization is the name of the organization whose key reads it.
	Organization string
	// Kinds are the kinds of operation the project takes (its keys of
	// the kinds, KindSetting), by kind name: present when it takes the
	// kind, with the ids the key lists (none for a key that is true).
	Kinds map[string][]string
}

// Organization returns the organization named name.
func (c *Config) Organization(name string) (*Organization, bool) {
	i := slices.IndexFunc(c.Organizations, func(o Organization) bool { return o.Name == name })
	if i < 0 {
		return nil, false
	}
	return &c.Organizations[i], true
}

// ProjectsOf is the plan's configuration of the projects of organization org.
func (c *Config) ProjectsOf(org string) []analytics.PlanProject {
	var out []analytics.PlanProject
	for _, p := range c.Projects {
		if p.Organization == org {
			out = append(out, p.PlanProject)
		}
	}
	return out
}

// ProjectIDs are every project's id, in configuration order.
func (c *Config) ProjectIDs() []string {
	out := make([]string, len(c.Projects))
	for i, p := range c.Projects {
		out[i] = p.ID
	}
	return out
}

// OrganizationOf is the organization of project id ("" when unknown).
func (c *Config) OrganizationOf(id string) string {
	if p, ok := c.Project(id); ok {
		return p.Organization
	}
	return ""
}

// Project is the project id.
func (c *Config) Project(id string) (*Project, bool) {
	i := slices.IndexFunc(c.Projects, func(p Project) bool { return p.ID == id })
	if i < 0 {
		return nil, false
	}
	return &c.Projects[i], true
}

// LoadKeys reads every organization's key from its file or environment
// variable, into APIKey. Reloads call it again, so a rotated key file takes
// effect without a restart.
func (c *Config) LoadKeys(getenv func(string) string) error {
	for i := range c.Organizations {
		o := &c.Organizations[i]
		key, err := o.readKey(getenv)
		if err != nil {
			return fmt.Errorf("%s: %w", cmp.Or(o.origin, "organization "+o.Name), err)
		}
		o.APIKey = key
	}
	return nil
}

func (o *Organization) readKey(getenv func(string) string) (string, error) {
	if o.APIKeyFile == "" {
		key := strings.TrimSpace(getenv(o.APIKeyEnv))
		if key == "" {
			return "", fmt.Errorf("no API key: the environment variable %s is empty or unset (or try --mintlify.sandbox)", o.APIKeyEnv)
		}
		return key, nil
	}
	return secrets.Read(o.APIKeyFile, secrets.MaxBytes)
}

var orgName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)

// checkProjectID: project ids become label values and URL path segments.
func checkProjectID(id string) error {
	if strings.TrimSpace(id) == "" || strings.ContainsAny(id, "/?#") || !utf8.ValidString(id) || len(id) > 200 {
		return fmt.Errorf("invalid project id %q: want a non-empty id without / ? #", id)
	}
	return nil
}

func checkOrgName(name string) error {
	if !orgName.MatchString(name) {
		return fmt.Errorf("invalid organization name %q: want letters, digits, _ . - (at most 63)", name)
	}
	return nil
}

// ParseKeyExpiry reads an API key's expiry: an RFC 3339 time, or a date,
// which means the start of that day in UTC (the earliest moment a key
// shown to expire that day can stop working, so an alert is never late).
func ParseKeyExpiry(s string) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("invalid expiry %q: want a date (2027-02-24, the start of that day in UTC) or an RFC 3339 time (2027-02-24T09:30:00Z)", s)
}

// ParseTimezone reads an IANA time zone name ("Local" is refused: it
// differs between machines).
func ParseTimezone(s string) (*time.Location, error) {
	loc, err := time.LoadLocation(s)
	if err != nil || s == "" || s == "Local" {
		return nil, fmt.Errorf("unknown time zone %q (want an IANA name such as Europe/Berlin)", s)
	}
	return loc, nil
}

// OptionalRegexp compiles s, nil for "".
func OptionalRegexp(s string) (*regexp.Regexp, error) {
	if s == "" {
		return nil, nil
	}
	re, err := regexp.Compile(s)
	if err != nil {
		return nil, fmt.Errorf("invalid regular expression: %w", err)
	}
	return re, nil
}

// LedgerPath is where organization org's analytics ledger is kept, in dir
// (beside the agent job state).
func LedgerPath(dir, org string) string {
	return dir + string(os.PathSeparator) + "analytics-ledger-" + org + ".log"
}

// DefaultBudget is an organization's analytics budget when none is given:
// budget.DefaultLimit (TestDefaultBudget), 40 of the organization's 100
// requests per hour left to its other tools.
const DefaultBudget = 60
