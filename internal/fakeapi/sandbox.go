// The sandbox: the built-in simulation of the Mintlify API that
// --mintlify.sandbox exports: the fake API on loopback, with one made-up
// key per configured organization, each with the real service's analytics
// quota, so the demo lives within its budget as a real deployment would.
// It reads every source (SandboxSources, SandboxSettings), so that every dashboard has
// data, and keeps its state for one run (SandboxStateDir). Every project
// has the DefaultAutomations (AutomationAgentJob's runs are agent jobs,
// AutomationUnfollowed's cannot be followed), and static exports complete
// in DefaultStaticExportDuration ("fail*" domains fail, "noexport*" ones
// answer 403): see staticexport.go and README's sandbox section.

package fakeapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// SandboxProjects are the simulated projects when none is configured.
var SandboxProjects = []string{"acme-docs", "acme-api"}

// SandboxSources are the sources the sandbox reads when none is asked for: every
// one, so that every dashboard panel has data (the simulated API answers
// each within the one budget).
func SandboxSources() []string { return sources.Names() }

// SandboxSettings are the sources' settings the sandbox gives when their flags are
// not, by flag name: the 20 most searched queries are exported with their
// text (the dashboards' top searches), since its queries are made up and
// hold no personal data.
var SandboxSettings = map[string]int{"analytics.search-top-queries": 20}

// SandboxBudget is the sandbox's analytics budget when
// --mintlify.analytics-budget is not given: 90 of the simulated API's 100
// requests per hour, not the default 60, because no other tool of an
// organization shares the simulated quota, and the first walk of every
// source and window of its two projects (82 requests with the site
// totals) must fit at once, so that every demand has data within a minute
// of start (TestSandboxFirstRoundWithinAMinute).
const SandboxBudget = 90

// SandboxFailEveryUpdate: every third update of a project on the sandbox
// fails, so that MintlifyDeploymentFailed and the Deployments dashboard's
// failures can be seen (README); previews fail by branch (fail-*).
const SandboxFailEveryUpdate = 3

// Sandbox hands out keys and serves the fake API.
type Sandbox struct {
	mu   sync.Mutex
	keys map[string]string // by organization, stable across reloads
}

// NewSandbox returns a sandbox that serves nothing yet.
func NewSandbox() *Sandbox { return &Sandbox{keys: map[string]string{}} }

// Keys gives every organization of cfg its sandbox key (the same one on
// every reload): no key file or variable is read.
func (s *Sandbox) Keys(cfg *config.Config) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range cfg.Organizations {
		o := &cfg.Organizations[i]
		if s.keys[o.Name] == "" {
			s.keys[o.Name] = "mint_sandbox_" + randomHex(12)
		}
		o.APIKey = s.keys[o.Name]
	}
}

// Start serves the fake API on loopback until ctx ends; the returned wait
// blocks until it stopped. Any project id exists, and every key has its own
// quota, so a reload may add projects and organizations.
func (s *Sandbox) Start(ctx context.Context, cfg *config.Config, logger log.Logger) (url string, wait func() error, err error) {
	loc := time.UTC
	if len(cfg.Projects) > 0 {
		loc = cfg.Projects[0].Loc()
	}
	// Job ids unique per run: a state file kept across runs
	// (--agent.state-file) never meets an id of an earlier run.
	fake := New(Options{QuotaPerKey: true, AnalyticsBudget: AnalyticsLimit,
		JobIDPrefix: "job_" + randomHex(3) + "_", Location: loc, FailEveryUpdate: SandboxFailEveryUpdate})
	url, wait, err = fake.Serve(ctx, "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	level.Info(logger).Log("msg", "sandbox: a simulated Mintlify API; no real API is contacted", "api_url", url,
		"projects", strings.Join(cfg.ProjectIDs(), ","), "organizations", len(cfg.Organizations))
	return url, wait, nil
}

// SandboxStateDir makes a directory for this run's state (the agent jobs unless
// --agent.state-file is given, each organization's analytics ledger and
// what sources keep across restarts); remove deletes it. The simulated API
// starts afresh on every run, with every key's quota unspent, so nothing it
// answered may outlive the run: a ledger kept beside a state file would
// carry the last runs' spending into this one (two `make run`s within the
// hour would find the budget spent), and would mix a sandbox's spending
// into a real key's ledger.
func SandboxStateDir() (dir string, remove func(), err error) {
	dir, err = os.MkdirTemp("", "mintlify_exporter-sandbox-")
	if err != nil {
		return "", nil, fmt.Errorf("sandbox state directory: %w", err)
	}
	return dir, func() { _ = os.RemoveAll(dir) }, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
