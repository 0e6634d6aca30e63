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
	"time"

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
	// keyExpires is when the key expires, as configured (zero: unknown).
	keyExpires time.Time
}

// New returns an empty Set whose plans run until ctx ends.
func New(ctx context.Context, settings Settings, logger log.Logger) *Set {
	if logger == nil {
		logger = log.NewNopLogger()
	}
	return &Set{settings: settings, logger: logger, ctx: ctx, byProject: map[string]*org{}, former: map[string]*apiclient.Client{}}
}

// Apply makes cfg the running configuration: organizations are added,
// updated (key, budget, projects) or stopped. Keys must be loaded. It is
// Prepare, then Commit.
func (s *Set) Apply(cfg *config.Config) error {
	p, err := s.Prepare(cfg)
	if err != nil {
		return err
	}
	p.Commit()
	return nil
}

// Pending is a configuration prepared by Prepare: Commit makes it the
// running one, Abandon drops it. One of the two is called, once.
type Pending struct {
	s       *Set
	changes []*change
}

// Prepare does everything that can fail of applying cfg (new
// organizations' ledgers and clients, every organization's plan), for
// every organization, without changing anything that runs: when it fails,
// no organization changed, the earlier ones included. Its Commit cannot
// fail, so that a caller applying a configuration to other parts too
// prepares them all before it commits any. Configurations are applied one
// at a time: no other Prepare or Apply between a Prepare and its Commit
// or Abandon (the start, then the reloader, which runs one at a time).
func (s *Set) Prepare(cfg *config.Config) (*Pending, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	current := map[string]*org{}
	for _, o := range s.orgs {
		current[o.name] = o
	}
	p := &Pending{s: s, changes: make([]*change, 0, len(cfg.Organizations))}
	for _, oc := range cfg.Organizations {
		c, err := s.prepare(oc, current[oc.Name], cfg.ProjectsOf(oc.Name))
		if err != nil {
			p.Abandon()
			return nil, fmt.Errorf("organization %s: %w", oc.Name, err)
		}
		p.changes = append(p.changes, c)
	}
	return p, nil
}

// Abandon undoes what Prepare made (new organizations' ledgers).
func (p *Pending) Abandon() {
	for _, c := range p.changes {
		c.abandon()
	}
}

// Commit makes the prepared configuration the running one: nothing in it
// fails.
func (p *Pending) Commit() {
	s := p.s
	s.mu.Lock()
	defer s.mu.Unlock()
	current := map[string]*org{}
	for _, o := range s.orgs {
		current[o.name] = o
	}
	next := make([]*org, 0, len(p.changes))
	byProject := map[string]*org{}
	for _, c := range p.changes {
		o := c.o
		if !c.fresh {
			o.client.SetAPIKey(c.oc.APIKey)
			_ = o.budget.SetLimit(c.oc.AnalyticsBudget) // checked by prepare
		}
		o.keyExpires = c.oc.APIKeyExpires
		if exp := o.keyExpires; !exp.IsZero() && !s.now().Before(exp) {
			level.Warn(s.logger).Log("msg", "the API key has expired, as configured (api_key_expires); requests will be rejected with 401 until it is replaced", "organization", c.oc.Name, "expired", exp.UTC().Format(time.RFC3339))
		}
		if !strings.HasPrefix(c.oc.APIKey, "mint_") {
			level.Warn(s.logger).Log("msg", "the API key does not start with mint_, the prefix of Mintlify admin keys; requests will likely be rejected", "organization", c.oc.Name)
		}
		o.projects = o.projects[:0]
		for _, p := range c.projects {
			o.projects = append(o.projects, p.ID)
			byProject[p.ID] = o
		}
		c.plan()
		next = append(next, o)
		delete(current, c.oc.Name)
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
}

// change is one organization of a configuration being applied, prepared.
type change struct {
	oc       config.Organization
	o        *org
	fresh    bool // o is new: its budget and client were made for it
	projects []refresh.Project
	// plan commits o's plan: starts, updates or stops its scheduler.
	plan func()
	// sched is a scheduler made for o, not started yet.
	sched *refresh.Scheduler
}

// abandon undoes what prepare made (a new organization's ledger).
func (c *change) abandon() {
	if c.fresh {
		_ = c.o.budget.Close()
	}
}

// prepare does what can fail of applying oc (current is the running
// organization of that name, nil when new) without changing anything that
// runs. Caller holds mu (for reading).
func (s *Set) prepare(oc config.Organization, current *org, projects []refresh.Project) (*change, error) {
	if oc.AnalyticsBudget < 1 { // the one refusal of budget.SetLimit
		return nil, fmt.Errorf("budget must be at least 1 request per window, got %d", oc.AnalyticsBudget)
	}
	c := &change{oc: oc, o: current, projects: projects}
	if current == nil {
		o, err := s.newOrg(oc)
		if err != nil {
			return nil, err
		}
		c.o, c.fresh = o, true
	}
	var err error
	switch {
	case len(projects) == 0:
		c.plan = func() { s.stop(c.o) }
	case c.o.sched != nil:
		c.plan, err = c.o.sched.PrepareUpdate(projects)
	default:
		rc := s.settings.Refresh
		rc.Projects = projects
		if s.settings.Walks != nil {
			rc.Shared = s.settings.Walks(oc.Name)
		}
		c.sched, err = refresh.New(c.o.client, c.o.budget, rc, log.With(s.logger, "organization", oc.Name))
		if err == nil {
			// Nothing runs yet: what the state directory kept is served
			// from the first scrape on (a no-op for replicas).
			c.sched.Restore(s.ctx)
		}
		c.plan = func() { s.start(c.o, c.sched) }
	}
	if err != nil {
		c.abandon()
		return nil, err
	}
	return c, nil
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

// now is the clock of the budgets (tests set it).
func (s *Set) now() time.Time {
	if s.settings.Budget.Now != nil {
		return s.settings.Budget.Now()
	}
	return time.Now()
}

// start runs sched as o's plan. Caller holds mu.
func (s *Set) start(o *org, sched *refresh.Scheduler) {
	ctx, cancel := context.WithCancel(s.ctx)
	o.sched, o.cancel, o.done = sched, cancel, make(chan struct{})
	s.wg.Add(1)
	go func(done chan struct{}) {
		defer s.wg.Done()
		defer close(done)
		sched.Run(ctx) // refreshes on the budget's plan, not on scrapes
	}(o.done)
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

// FollowClient is the client that follows project's operations: its
// organization's, or for a project a reload removed, its last one's (its
// operations are followed to their end, with that organization's current
// key while it is configured). With Client, it makes the Set the
// engine's upstream (engine.Clients): each kind calls a project's
// operations with its organization's key.
func (s *Set) FollowClient(project string) (*apiclient.Client, error) {
	c, err := s.Client(project)
	if err != nil {
		s.mu.RLock()
		c = s.former[project]
		s.mu.RUnlock()
		if c == nil {
			return nil, err
		}
	}
	return c, nil
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
