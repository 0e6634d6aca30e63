// What the scheduler publishes: one view per entry for the collector and
// the status page (Views, servable), the plan's spend (Planned), and the plan
// a configuration would start with, for `config check` (Preview).

package refresh

import (
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// Planned is the requests the plan spends per budget window.
func (s *Scheduler) Planned() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.planned
}

// View is a demand's state: sources.View, what the collector reads.
type View = sources.View

// Views returns one view per project and window, in a stable order.
func (s *Scheduler) Views() []View {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	out := make([]View, 0, len(s.entries))
	for _, e := range s.entries {
		st := e.state
		if loc := e.proj.Loc(); e.final && !now.Before(analytics.DayStart(analytics.Today(now, loc), loc).Add(FinalDayExport)) {
			continue // yesterday's numbers matter only in the first hour of today
		}
		v := View{Project: e.project, Source: e.spec.Name, Scope: e.scope, Window: e.label, Attempted: st.attempted, OK: st.ok, Duration: st.duration,
			LastAttempt: st.attemptEnd, Err: st.err, Failures: st.failures, Running: e.inflight != nil, Cost: e.cost, CostKnown: e.costKnown,
			SharedVersion: st.version}
		if _, at := s.due(e, now); !v.Running {
			// A due walk that waits (budget, page share, walks ahead
			// of it) starts when the last round expected, not now.
			if e.expected.After(at) {
				at = e.expected
			}
			v.NextDue = at
		}
		if !e.final {
			v.Interval = e.interval
		}
		if st.good != nil {
			v.LastSuccess = st.good.Meta().At
			if s.servable(e, st.good, now) {
				v.Data = st.good
			}
		}
		out = append(out, v)
	}
	return out
}

// servable reports whether a snapshot answers its window's question at now.
// Caller holds mu.
func (s *Scheduler) servable(e *entry, snap sources.Snapshot, now time.Time) bool {
	m := snap.Meta()
	loc := e.proj.Loc()
	today := analytics.Today(now, loc)
	if e.final {
		from, to := e.window.RangeEndingOn(analytics.AddDays(today, -1))
		return m.DateFrom == from && m.DateTo == to &&
			now.Before(analytics.DayStart(today, loc).Add(FinalDayExport))
	}
	// Staleness is judged against the plan: a window planned every 6h is
	// not dropped after an hour; max staleness is the grace past a missed
	// planned walk.
	// A window planned less often than once a budget window may start up
	// to a budget window late (its plan counts on averages), so that much
	// more grace.
	grace := s.cfg.MaxStaleness
	if e.interval >= s.budget.Window() {
		grace += s.budget.Window()
	}
	if s.cfg.MaxStaleness > 0 && now.Sub(m.At) > e.interval+grace {
		return false
	}
	// Past midnight a 1d snapshot of the old date would show yesterday's
	// full day as today's: serve nothing rather than a wrong answer.
	if e.window.Days == 1 {
		from, to := e.window.Range(now, loc)
		return m.DateFrom == from && m.DateTo == to
	}
	return true
}

// Preview is the plan cfg's projects would start with under a budget of
// limit requests an hour, before any walk has told what walks cost (the
// sources' guesses stand in), and the notice of demands it cannot meet
// (the running plan's rule: unmetNotice): what `config check` prints.
// Nothing is sent.
func Preview(cfg Config, limit int) (views []View, planned float64, notice string, err error) {
	b, err := budget.New(budget.Config{Limit: limit})
	if err != nil {
		return nil, 0, "", err
	}
	c, err := apiclient.New(apiclient.Config{BaseURL: "http://preview.invalid"})
	if err != nil {
		return nil, 0, "", err
	}
	s, err := New(c, b, cfg, nil)
	if err != nil {
		return nil, 0, "", err
	}
	defer s.Close()
	return s.Views(), s.Planned(), s.PlanNotice(), nil
}
