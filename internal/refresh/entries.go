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

	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
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
	window analytics.Window
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
	// expected: the entry is due but waits (for the budget, the page
	// share, a walk ahead of it); when it is expected to start, as the
	// last round of startDue saw it (zero: not waiting).
	expected time.Time
	// heldUntil: another replica claimed the walk; not due before then.
	heldUntil time.Time
	// seen is a shared version found older than state's snapshot.
	seen     int64
	inflight chan struct{}
	state    *state
}

// state is an entry's outcome so far. It is immutable.
type state struct {
	good      sources.Snapshot
	attempted bool
	ok        bool
	failures  int // walks that failed since the entry was made
	// capped counts the walks in a row whose pages did not end within
	// their cap (walkCap, retryInterval).
	capped     int
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
	l := layout{s: s, keep: map[entryKey]*entry{}}
	for _, e := range old {
		l.keep[entryKey{e.project, e.spec.Name, e.label, e.scope}] = e
	}
	for i := range projects {
		p := &projects[i]
		for _, spec := range p.Specs() {
			if err := l.addSource(p, spec); err != nil {
				return nil, nil, err
			}
		}
	}
	slices.SortStableFunc(l.out, byPriority)
	return append(l.out, l.finals...), l.moved, nil
}

// layout is what entriesFor has laid out so far.
type layout struct {
	s *Scheduler
	// keep is the old entries, by key.
	keep map[entryKey]*entry
	// out is the entries but the final days', in the configuration's
	// order until entriesFor sorts them; finals the final days'.
	out, finals []*entry
	moved       []movedEntry
}

// addSource lays out the entries of spec's windows in project p: each
// window's page walk, and for a source that can walk today's site totals
// alone (TotalsOnly), today's site totals and its final day.
func (l *layout) addSource(p *Project, spec sources.Spec) error {
	def, ok := sources.ByName(spec.Name)
	if !ok { // the configuration knows the same sources: a caller's mistake
		return fmt.Errorf("project %s: no source %q", p.ID, spec.Name)
	}
	ps := projectSource{layout: l, p: p, spec: spec, def: def}
	for _, w := range spec.Windows {
		e, err := ps.entry(w, false, ScopePages)
		if err != nil {
			return err
		}
		l.out = append(l.out, e)
		if !def.TotalsOnly || w.Days != 1 {
			continue
		}
		if l.s.cfg.SiteInterval > 0 {
			if e, err = ps.entry(w, false, ScopeSite); err != nil {
				return err
			}
			l.out = append(l.out, e)
		}
		if l.s.cfg.FinalDayDelay >= 0 {
			if e, err = ps.entry(w, true, ScopePages); err != nil {
				return err
			}
			l.finals = append(l.finals, e)
		}
	}
	return nil
}

// projectSource is one source of one project being laid out. Its entries
// share one sources.Source (it remembers what its walks cost).
type projectSource struct {
	*layout
	p    *Project
	spec sources.Spec
	def  *sources.Def
	// src is a kept entry's source, or the one made for the first new
	// entry (nil: none yet).
	src sources.Source
}

// entry is the entry of window w (final: of its final day) in scope: the
// old one when it is walked alike, else a new one.
func (ps *projectSource) entry(w analytics.Window, final bool, scope string) (*entry, error) {
	p, spec := ps.p, ps.spec
	label := w.Name
	if final {
		label = FinalDayWindow
	}
	if o := ps.keep[entryKey{p.ID, spec.Name, label, scope}]; o != nil && o.window == w && sameWalksOfWindow(o, p, spec) {
		ps.moved, ps.src = append(ps.moved, movedEntry{o, p}), o.src
		return o, nil
	}
	if ps.src == nil {
		src, err := ps.def.New(ps.s.sourceConfig(p, spec))
		if err != nil {
			return nil, fmt.Errorf("project %s: %s: %w", p.ID, spec.Name, err)
		}
		ps.src = src
	}
	// A site totals walk is one request: its cost is known.
	return &entry{project: p.ID, proj: p, spec: spec, src: ps.src, window: w, final: final, scope: scope, label: label,
		cost: 1, costKnown: scope == ScopeSite, state: &state{}}, nil
}

// byPriority orders today's site totals before the other entries, and
// those by weight, lightest (the freshest, fastest-moving) first.
func byPriority(a, b *entry) int {
	if a.scope != b.scope && (a.scope == ScopeSite || b.scope == ScopeSite) {
		if a.scope == ScopeSite {
			return -1
		}
		return 1
	}
	return cmp.Compare(a.weight(), b.weight())
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
		if s.cfg.Shared != nil {
			s.forget()
		}
	}, nil
}
