// Package config is the exporter's configuration of what it exports: the
// organizations (one admin key, one analytics budget each) and their
// projects (windows, time zone, paths, agent jobs). It comes from a YAML
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
	// AgentJobs: the gateway accepts agent jobs for it.
	AgentJobs bool
	// Deployments: the gateway triggers and follows its deployments (with
	// --web.enable-deployment-api).
	Deployments bool
	// StaticExports: the gateway starts and follows its static exports
	// (with --web.enable-static-export-api). The API's exports are per
	// organization: the project names which organization's key is used
	// and which project label counts them.
	StaticExports bool
	// Automations are the automations the gateway triggers for it (with
	// --web.enable-automation-api): ids named here are label values;
	// AnyAutomation allows any other, counted as "other". Empty: none.
	Automations []string
}

// Automations: what a project's automations: key may hold.
const (
	// MaxAutomations bounds the automations named per project: each is a
	// label value of mintlify_automation_* series.
	MaxAutomations = 20
	// AnyAutomation, listed, allows triggering any automation of the
	// project; those not named count as "other".
	AnyAutomation = "*"
	// OtherAutomation is the label value of automations not named.
	OtherAutomation = "other"
)

// automationID is the shape of an automation id the configuration takes
// (the API's ids are short tokens): 1 to 64 letters, digits, _ and -.
var automationID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// CheckAutomationID refuses what cannot be an automation id (nor a label
// value of one); "other" is refused too, being the label of the rest.
func CheckAutomationID(id string) error {
	switch {
	case !automationID.MatchString(id):
		return fmt.Errorf("automation id %q: want 1 to 64 letters, digits, _ or -", id)
	case id == OtherAutomation:
		return fmt.Errorf("automation id %q is the label of automations not named; it cannot be named", id)
	}
	return nil
}

// AutomationProjects are the ids of the projects that take automation
// triggers: those that list automations.
func (c *Config) AutomationProjects() []string {
	var out []string
	for _, p := range c.Projects {
		if len(p.Automations) > 0 {
			out = append(out, p.ID)
		}
	}
	return out
}

// NamedAutomations are each project's automations named (label values),
// and whether it allows any other (AnyAutomation), of projects that take
// automation triggers.
func (c *Config) NamedAutomations() (named map[string][]string, others map[string]bool) {
	named, others = map[string][]string{}, map[string]bool{}
	for _, p := range c.Projects {
		for _, a := range p.Automations {
			if a == AnyAutomation {
				others[p.ID] = true
			} else {
				named[p.ID] = append(named[p.ID], a)
			}
		}
	}
	return named, others
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

// AgentProjects are the ids of the projects that accept agent jobs.
func (c *Config) AgentProjects() []string {
	var out []string
	for _, p := range c.Projects {
		if p.AgentJobs {
			out = append(out, p.ID)
		}
	}
	return out
}

// DeploymentProjects are the ids of the projects whose deployments the
// gateway triggers and follows.
func (c *Config) DeploymentProjects() []string {
	var out []string
	for _, p := range c.Projects {
		if p.Deployments {
			out = append(out, p.ID)
		}
	}
	return out
}

// ExportProjects are the ids of the projects whose static exports the
// gateway starts and follows.
func (c *Config) ExportProjects() []string {
	var out []string
	for _, p := range c.Projects {
		if p.StaticExports {
			out = append(out, p.ID)
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
	for _, p := range c.Projects {
		if p.ID == id {
			return p.Organization
		}
	}
	return ""
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

func checkBudget(n int) error {
	if n < 1 || n > maxBudget {
		return fmt.Errorf("must be between 1 and %d, got %d", maxBudget, n)
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
