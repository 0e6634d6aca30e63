// The scheduler's entries: one per project, source, window and scope of a
// walk, laid out from the configuration in priority order (entriesFor), and
// replaced on a reload so that an entry walked alike keeps its snapshot and
// cost (Update, PrepareUpdate).

package refresh

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
	"github.com/mintlify-exporter/mintlify_exporter/internal/visitors"
)

// entry is one walk of the plan: a project's source and window, in a scope
// (its pages, or today's site totals alone), or the final day of a window.
type entry struct {
	project string
	// proj is the project's configuration; replaced (with the entry) when
	// a reload changes how it is walked.
	proj   *Project
	spec   sources.Spec
	src    sources.Source
	window visitors.Window
	final  bool
	scope  string
	label  string

	// Guarded by Scheduler.mu.
	// cost is the requests of the last good walk once costKnown, else an
	// estimate; reserved is what the walk in flight reserved.
	cost      int
	costKnown bool
	reserved  int
	interval  time.Duration
	// logged is the plan last logged for the entry.
	logged  string
	nextDue time.Time
	// heldUntil: another replica claimed the walk; not due before then.
	heldUntil time.Time
	// seen is a shared version found older than state's snapshot.
	seen     int64
	inflight chan struct{}
	state    *state
}

// state is an entry's outcome so far. It is immutable.
type state struct {
	good       sources.Snapshot
	attempted  bool
	ok         bool
	failures   int   // walks that failed since the entry was made
	err        error // of the last walk, when it failed
	attemptEnd time.Time
	duration   time.Duration
	// version is good's version in the shared store (0: not shared).
	version int64
}

// entryKey identifies an entry across reloads.
type entryKey struct {
	project, source, label, scope string
}

// entriesFor lays out the entries of projects in priority order: today's
// site totals first, then every source's windows, the freshest (and
// fastest-moving) first, so that today's numbers are never starved by
// longer windows; yesterday's settled numbers come last, correcting a day
// that is already exported with what the plan leaves over. An entry of old
// whose project and source are walked alike is kept as it is, with its
// snapshot, cost and place in the schedule. Caller holds mu (or owns s
// alone).
//
// A kept entry moves to its project in projects only when the caller
// applies moved: until then the running plan is untouched.
func (s *Scheduler) entriesFor(projects []Project, old []*entry) ([]*entry, []movedEntry, error) {
	keep := map[entryKey]*entry{}
	for _, e := range old {
		keep[entryKey{e.project, e.spec.Name, e.label, e.scope}] = e
	}
	var out, finals []*entry
	var moved []movedEntry
	for i := range projects {
		p := &projects[i]
		for _, spec := range p.Specs() {
			def, ok := sources.ByName(spec.Name)
			if !ok { // the configuration knows the same sources: a caller's mistake
				return nil, nil, fmt.Errorf("project %s: no source %q", p.ID, spec.Name)
			}
			// One source per project and spec, shared by its entries (it
			// remembers what its walks cost).
			var src sources.Source
			reuse := func(w visitors.Window, final bool, scope string) (*entry, error) {
				label := w.Name
				if final {
					label = FinalDayWindow
				}
				if o := keep[entryKey{p.ID, spec.Name, label, scope}]; o != nil && o.window == w && sameWalksOfWindow(o, p, spec) {
					moved, src = append(moved, movedEntry{o, p}), o.src
					return o, nil
				}
				if src == nil {
					var err error
					if src, err = def.New(s.sourceConfig(p, spec)); err != nil {
						return nil, fmt.Errorf("project %s: %s: %w", p.ID, spec.Name, err)
					}
				}
				// A site totals walk is one request: its cost is known.
				return &entry{project: p.ID, proj: p, spec: spec, src: src, window: w, final: final, scope: scope, label: label,
					cost: 1, costKnown: scope == ScopeSite, state: &state{}}, nil
			}
			for _, w := range spec.Windows {
				e, err := reuse(w, false, ScopePages)
				if err != nil {
					return nil, nil, err
				}
				out = append(out, e)
				if !def.TotalsOnly || w.Days != 1 {
					continue
				}
				if s.cfg.SiteInterval > 0 {
					if e, err = reuse(w, false, ScopeSite); err != nil {
						return nil, nil, err
					}
					out = append(out, e)
				}
				if s.cfg.FinalDayDelay >= 0 {
					if e, err = reuse(w, true, ScopePages); err != nil {
						return nil, nil, err
					}
					finals = append(finals, e)
				}
			}
		}
	}
	slices.SortStableFunc(out, func(a, b *entry) int {
		if a.scope != b.scope && (a.scope == ScopeSite || b.scope == ScopeSite) {
			if a.scope == ScopeSite {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.weight(), b.weight())
	})
	return append(out, finals...), moved, nil
}

// movedEntry is a kept entry and the project it moves to.
type movedEntry struct {
	e *entry
	p *Project
}

// sameWalksOfWindow reports whether e's window is walked alike under p and
// spec: the same time zone, path policy and source settings. The other
// windows do not matter, so a reload that adds a window walks only it.
func sameWalksOfWindow(e *entry, p *Project, spec sources.Spec) bool {
	a, b := e.proj.Project, p.Project
	a.Windows, b.Windows = nil, nil
	as, bs := e.spec, spec
	as.Windows, bs.Windows = nil, nil
	return a.SameWalks(&b) && as.Equal(bs)
}

// weight is the entry's share of the plan's common factor.
func (e *entry) weight() float64 {
	def, _ := sources.ByName(e.spec.Name) // found by entriesFor
	return float64(e.window.Days) * def.PlanWeight()
}

// sourceConfig is what the source of spec needs for project p.
func (s *Scheduler) sourceConfig(p *Project, spec sources.Spec) sources.Config {
	return sources.Config{
		Client: s.client, Location: p.Loc(), Now: s.now, Logger: s.logger,
		PageSize: s.cfg.PageSize, MaxPages: s.cfg.MaxPages, Paths: p.Paths,
		Settings: spec.Settings,
		StateDir: s.cfg.StateDir,
	}
}

// Update replaces the projects walked, for a configuration reload: an
// entry whose project is walked alike keeps its snapshot, cost and place in
// the schedule (no request is spent on it); new ones are planned within the
// budget; removed ones stop being exported at once (a walk of theirs in
// flight finishes, and its result is dropped).
func (s *Scheduler) Update(projects []Project) error {
	commit, err := s.PrepareUpdate(projects)
	if err != nil {
		return err
	}
	commit()
	return nil
}

// PrepareUpdate does what can fail of Update(projects) and returns the
// commit that makes it the plan: until commit is called, nothing of the
// scheduler changes, so that a reload can prepare every organization before
// it changes any. At most one update is prepared at a time (the caller
// serialises them); commit cannot fail.
func (s *Scheduler) PrepareUpdate(projects []Project) (commit func(), err error) {
	projects = slices.Clone(projects)
	s.mu.Lock()
	entries, moved, err := s.entriesFor(projects, s.entries)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return func() {
		s.mu.Lock()
		for _, m := range moved {
			m.e.proj = m.p
		}
		s.entries = entries
		s.cfg.Projects = projects
		s.planLog.pending = true // a changed plan is logged now, from estimates if need be
		s.replan()
		s.mu.Unlock()
		select {
		case s.walked <- struct{}{}: // plan again now
		default:
		}
	}, nil
}
