// Package orgs runs the configured organizations: each has its own API key,
// its own analytics budget (with its ledger on disk) and its own refresh
// plan, so a 429 for one organization's key slows only that organization.
// Apply takes a new configuration while running (a reload): unchanged
// projects keep their snapshots and their place in the plan, a changed key
// or budget applies from the next request.
package orgs

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/refresh"
)

// Settings are what every organization's client and plan share.
type Settings struct {
	// Client is the API client's configuration, less the key and budget.
	Client apiclient.Config
	// Refresh is the plan's configuration, less the projects.
	Refresh refresh.Config
	// LedgerDir keeps each organization's analytics ledger ("" = none).
	LedgerDir string
	// Shared, when set, is the ledger every replica pays each
	// organization's requests from (Redis), instead of LedgerDir's files.
	Shared func(organization string) budget.SharedLedger
	// Walks, when set, shares each organization's walks and snapshots
	// with the other replicas (Redis).
	Walks func(organization string) refresh.Shared
	// Budget is the budget's configuration, less limit, name and ledger
	// (tests set its clock and window).
	Budget budget.Config
}

// Set is the running organizations. It is safe for concurrent use.
type Set struct {
	settings Settings
	logger   log.Logger
	ctx      context.Context
	wg       sync.WaitGroup

	mu        sync.RWMutex
	orgs      []*org
	byProject map[string]*org
	// former are the clients of projects a reload removed, by project:
	// their tracked agent jobs are still polled to their end.
	former map[string]*apiclient.Client
}

// org is one running organization.
type org struct {
	name     string
	budget   *budget.Budget
	client   *apiclient.Client
	sched    *refresh.Scheduler // nil while it has no project
	cancel   context.CancelFunc
	done     chan struct{}
	projects []string
}

// New returns an empty Set whose plans run until ctx ends.
func New(ctx context.Context, settings Settings, logger log.Logger) *Set {
	if logger == nil {
		logger = log.NewNopLogger()
	}
	return &Set{settings: settings, logger: logger, ctx: ctx, byProject: map[string]*org{}, former: map[string]*apiclient.Client{}}
}

// Apply makes cfg the running configuration: organizations are added,
// updated (key, budget, projects) or stopped. Keys must be loaded. Nothing
// changes when it fails.
func (s *Set) Apply(cfg *config.Config) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	current := map[string]*org{}
	for _, o := range s.orgs {
		current[o.name] = o
	}
	// First everything that can fail: new organizations' budgets (their
	// ledgers are files) and clients.
	fresh := map[string]*org{}
	for _, oc := range cfg.Organizations {
		if current[oc.Name] != nil {
			continue
		}
		o, err := s.newOrg(oc)
		if err != nil {
			for _, f := range fresh {
				_ = f.budget.Close()
			}
			return fmt.Errorf("organization %s: %w", oc.Name, err)
		}
		fresh[oc.Name] = o
	}
	var next []*org
	byProject := map[string]*org{}
	for _, oc := range cfg.Organizations {
		o := current[oc.Name]
		if o == nil {
			o = fresh[oc.Name]
		} else {
			o.client.SetAPIKey(oc.APIKey)
			if err := o.budget.SetLimit(oc.AnalyticsBudget); err != nil {
				return fmt.Errorf("organization %s: %w", oc.Name, err)
			}
		}
		if !strings.HasPrefix(oc.APIKey, "mint_") {
			level.Warn(s.logger).Log("msg", "the API key does not start with mint_, the prefix of Mintlify admin keys; requests will likely be rejected", "organization", oc.Name)
		}
		projects := cfg.ProjectsOf(oc.Name)
		o.projects = o.projects[:0]
		for _, p := range projects {
			o.projects = append(o.projects, p.ID)
			byProject[p.ID] = o
		}
		if err := s.plan(o, projects); err != nil {
			return fmt.Errorf("organization %s: %w", oc.Name, err)
		}
		next = append(next, o)
		delete(current, oc.Name)
	}
	for _, o := range current { // removed
		s.stop(o)
		_ = o.budget.Close()
		level.Info(s.logger).Log("msg", "organization removed from the configuration", "organization", o.name)
	}
	for p, o := range s.byProject {
		if byProject[p] == nil {
			s.former[p] = o.client
		}
	}
	for p := range byProject {
		delete(s.former, p)
	}
	s.orgs, s.byProject = next, byProject
	return nil
}

func (s *Set) newOrg(oc config.Organization) (*org, error) {
	c, b, err := Client(s.settings, oc)
	if err != nil {
		return nil, err
	}
	return &org{name: oc.Name, budget: b, client: c}, nil
}

// Client builds organization oc's budget (with its ledger) and the API
// client that draws on it.
func Client(settings Settings, oc config.Organization) (*apiclient.Client, *budget.Budget, error) {
	bc := settings.Budget
	bc.Limit, bc.Organization = oc.AnalyticsBudget, oc.Name
	switch {
	case settings.Shared != nil:
		bc.Shared = settings.Shared(oc.Name)
	case settings.LedgerDir != "":
		bc.LedgerPath = config.LedgerPath(settings.LedgerDir, oc.Name)
	}
	b, err := budget.New(bc)
	if err != nil {
		return nil, nil, err
	}
	cc := settings.Client
	cc.APIKey, cc.AnalyticsBudget = oc.APIKey, b
	if cc.Now == nil {
		cc.Now = bc.Now // one clock: Retry-After pauses and the budget's agree
	}
	c, err := apiclient.New(cc)
	if err != nil {
		_ = b.Close()
		return nil, nil, err
	}
	return c, b, nil
}

// plan starts, updates or stops o's scheduler for projects. Caller holds mu.
func (s *Set) plan(o *org, projects []refresh.Project) error {
	if len(projects) == 0 {
		s.stop(o)
		return nil
	}
	if o.sched != nil {
		return o.sched.Update(projects)
	}
	rc := s.settings.Refresh
	rc.Projects = projects
	if s.settings.Walks != nil {
		rc.Shared = s.settings.Walks(o.name)
	}
	sched, err := refresh.New(o.client, o.budget, rc, log.With(s.logger, "organization", o.name))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(s.ctx)
	o.sched, o.cancel, o.done = sched, cancel, make(chan struct{})
	s.wg.Add(1)
	go func(done chan struct{}) {
		defer s.wg.Done()
		defer close(done)
		sched.Run(ctx) // refreshes on the budget's plan, not on scrapes
	}(o.done)
	return nil
}

// stop ends o's scheduler, if running, and waits for it. Caller holds mu.
func (s *Set) stop(o *org) {
	if o.sched == nil {
		return
	}
	o.cancel()
	<-o.done
	o.sched = nil
}

// Wait waits for every plan to stop, after the context given to New
// ended, and closes the ledgers.
func (s *Set) Wait() {
	s.wg.Wait()
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, o := range s.orgs {
		_ = o.budget.Close()
	}
}

// Views are every organization's refresh views, in configuration order.
func (s *Set) Views() []refresh.View {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []refresh.View
	for _, o := range s.orgs {
		if o.sched != nil {
			out = append(out, o.sched.Views()...)
		}
	}
	return out
}

// Budgets are every organization's budget, in configuration order.
func (s *Set) Budgets() []*budget.Budget {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*budget.Budget, len(s.orgs))
	for i, o := range s.orgs {
		out[i] = o.budget
	}
	return out
}

// Client is the API client of project's organization.
func (s *Set) Client(project string) (*apiclient.Client, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if o := s.byProject[project]; o != nil {
		return o.client, nil
	}
	return nil, fmt.Errorf("project %q is not configured", project)
}

// Projects are the configured project ids, in configuration order.
func (s *Set) Projects() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for _, o := range s.orgs {
		out = append(out, o.projects...)
	}
	return slices.Clip(out)
}
