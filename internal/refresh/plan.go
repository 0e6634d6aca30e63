// The scheduler's plan: how often each entry is walked, from the budget and
// the walks' costs (Intervals, replan, estimate), and when each is due and in
// what order it starts (due, order).

package refresh

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// Demand is one (project, window) to refresh on a schedule.
type Demand struct {
	// Cost is the requests one walk takes (pages of the API), at least 1.
	Cost int
	// MinInterval is the shortest interval wanted for it.
	MinInterval time.Duration
	// Days is the window's length. Longer windows get proportionally
	// longer intervals: a walk every k hours moves a 1d window's numbers
	// as much as a walk every 30k hours moves a 30d window's, relative to
	// what the window holds. So today's window is always the freshest.
	Days int
	// Weight stretches the interval further (0 = 1): slow-moving sources
	// (feedback, searches) are walked less often than page traffic of the
	// same window.
	Weight float64
	// Midnight: the window's dates change at midnight, which forces one
	// walk a day on top of its interval (today's window).
	Midnight bool
	// Own: MinInterval is the window's own interval (30d:6h), which the
	// configuration asks for: the fill brings the demand to it before it
	// walks any other more often.
	Own bool
}

// Intervals returns an interval per demand such that walking every demand
// once per interval spends at most perWindow requests in any window. Each
// interval is max(MinInterval, k × Days) with the smallest k (to the
// second) that fits: every demand at its MinInterval when the budget pays
// for that, else intervals stretched in proportion to the window length.
//
// A demand walked more often than once a window counts with the most walks
// one window can hold, ceil(window/interval), not the average: walks that
// line up must still fit, or today's window would start late. Rarer walks
// count with their average, as they rarely meet.
func Intervals(perWindow float64, window time.Duration, ds []Demand) []time.Duration {
	out := make([]time.Duration, len(ds))
	if len(ds) == 0 {
		return out
	}
	at := make([]time.Duration, len(ds))
	spend := func(k float64) float64 { // requests per window with factor k seconds per unit of weight
		for i, d := range ds {
			at[i] = time.Duration(math.Max(d.MinInterval.Seconds(), k*d.weight()) * float64(time.Second))
		}
		return spendAt(window, ds, at)
	}
	k := 0.0
	if perWindow <= 0 {
		perWindow = 1e-9
	}
	if spend(0) > perWindow {
		lo, hi := 0.0, 1.0
		// Beyond a factor of 10^9 s (decades) nothing is walked anyway,
		// and the intervals would overflow.
		for spend(hi) > perWindow && hi < 1e9 {
			hi *= 2
		}
		for hi-lo > 0.5 {
			mid := (lo + hi) / 2
			if spend(mid) > perWindow {
				lo = mid
			} else {
				hi = mid
			}
		}
		k = math.Ceil(hi)
	}
	for i, d := range ds {
		t := math.Max(d.MinInterval.Seconds(), k*d.weight())
		out[i] = time.Duration(math.Ceil(t)) * time.Second
	}
	fill(fillShare*perWindow, window, ds, out)
	return out
}

// fillShare is how much of the budget the fill may plan: walks planned on
// averages (rarer than once a window) may bunch, so a little is left for
// them to run late without starving the next.
const fillShare = 0.97

// weight is the demand's share of the plan's factor k.
func (d Demand) weight() float64 {
	if d.Weight <= 0 {
		return float64(d.Days)
	}
	return float64(d.Days) * d.Weight
}

// fill spends what the common factor left over: a factor that fits leaves
// up to a walk's worth of every demand unused (walk counts are whole), so
// each demand in turn is walked as much more often as the budget still pays
// for: first those with an interval of their own, which the configuration
// asks to be met, then the most important (smallest weight) first. (Weight
// first, the 1d windows took all that was left, and the README's 30d:6h
// was planned every 10h on a budget that paid for 6h.)
func fill(perWindow float64, window time.Duration, ds []Demand, out []time.Duration) {
	order := make([]int, len(ds))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(-cmp.Compare(b2i(ds[a].Own), b2i(ds[b].Own)), cmp.Compare(ds[a].weight(), ds[b].weight()))
	})
	for _, i := range order {
		lo := max(ds[i].MinInterval, time.Second)
		if out[i] <= lo {
			continue
		}
		orig := out[i]
		// The shortest interval that still fits: spend falls as the
		// interval grows, so bisect between lo and the current one.
		hi := orig
		for hi-lo > time.Second {
			mid := (lo + hi) / 2
			out[i] = mid
			if spendAt(window, ds, out) > perWindow {
				lo = mid
			} else {
				hi = mid
			}
		}
		out[i] = hi
		if spendAt(window, ds, out) > perWindow {
			out[i] = orig
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// spendAt is what walking each demand at intervals costs in its worst
// window, counted as Intervals counts it.
func spendAt(window time.Duration, ds []Demand, intervals []time.Duration) float64 {
	w := window.Seconds()
	var s float64
	for i, d := range ds {
		t := math.Max(intervals[i].Seconds(), 1)
		walks := w / t
		if t < w {
			walks = math.Ceil(walks)
			if d.Midnight {
				walks++
			}
		} else if d.Midnight {
			walks += w / (24 * 3600)
		}
		s += float64(max(d.Cost, 1)) * walks
	}
	return s
}

// Spend is what walking each demand once per its interval costs per window.
func Spend(window time.Duration, ds []Demand, intervals []time.Duration) float64 {
	var s float64
	for i, d := range ds {
		s += float64(max(d.Cost, 1)) * window.Seconds() / intervals[i].Seconds()
	}
	return s
}

// Plannable is the part of a budget that scheduled walks may plan on: a
// tenth (at least one request, at most half) stays free for retries and for
// a site that grew by a page since its last walk.
func Plannable(limit int) float64 {
	return max(float64(limit-max(1, limit/10)), float64(limit)/2)
}

// replan derives every window's interval from the budget and the walks'
// costs, and logs the plan when it changed. Caller holds mu.
func (s *Scheduler) replan() {
	limit := s.budget.Limit()
	window := s.budget.Window()
	perWindow := Plannable(limit)
	var site, pages []Demand
	var siteEntries, pageEntries []*entry
	for _, e := range s.entries {
		e.cost = s.estimate(e)
		switch {
		case e.final:
			// walked with what the plan leaves over
		case e.scope == ScopeSite:
			site = append(site, Demand{Cost: 1, MinInterval: max(s.cfg.SiteInterval, s.cfg.MinInterval), Days: 1, Midnight: true})
			siteEntries = append(siteEntries, e)
		default:
			minInterval := cmp.Or(e.window.Interval, s.cfg.MinInterval)
			pages = append(pages, Demand{Cost: e.cost, MinInterval: minInterval, Days: e.window.Days,
				Weight: e.weight() / float64(e.window.Days), Midnight: e.window.Days == 1, Own: e.window.Interval > 0})
			pageEntries = append(pageEntries, e)
		}
	}
	// Today's site totals first, at their own interval, on at most half
	// the budget; page walks share the rest.
	siteIntervals := Intervals(perWindow/2, window, site)
	// Walks are paid whole: with walks of c requests a window holds
	// floor(limit/c) of them, so a budget of 60 carries one walk of 40 an
	// hour, not one and a half.
	if len(pages) > 0 {
		if maxCost := slices.MaxFunc(pages, func(a, b Demand) int { return cmp.Compare(a.Cost, b.Cost) }).Cost; maxCost > 0 && maxCost <= limit {
			perWindow = min(perWindow, float64(limit/maxCost*maxCost))
		}
	}
	siteSpend := spendAt(window, site, siteIntervals)
	s.siteShare = int(math.Ceil(siteSpend))
	s.pageShare = max(s.budget.Limit()-s.siteShare, 1)
	rest := max(perWindow-siteSpend, 0)
	pageIntervals := Intervals(rest, window, pages)
	demands := append(site, pages...)
	intervals := append(siteIntervals, pageIntervals...)
	current := append(siteEntries, pageEntries...)
	s.planned = Spend(window, demands, intervals)
	// The plan is logged at start from estimated costs; then, as walk
	// costs are known once every entry was walked, whenever it changes (a
	// project grew past a page). In between it changes with every first
	// walk: not worth a line each (the first round of a large
	// configuration takes hours).
	known := !slices.ContainsFunc(current, func(e *entry) bool { return !e.state.attempted })
	for i, e := range current {
		if e.interval != intervals[i] && !e.nextDue.IsZero() {
			// Keep the last walk's start, move the next one.
			e.nextDue = e.nextDue.Add(intervals[i] - e.interval)
		}
		e.interval = intervals[i]
	}
	s.logPlan(current, demands, limit, known)
}

// estimate is the requests e's next walk is expected to take: one for site
// totals; its last good walk's; else the most any window of the same
// project and source took, else the most any project took with the source
// (sites of one organization are alike), else the source's own guess.
// Caller holds mu.
func (s *Scheduler) estimate(e *entry) int {
	if e.scope == ScopeSite {
		return 1
	}
	if e.costKnown {
		return e.cost
	}
	same, other := 0, 0
	for _, o := range s.entries {
		if !o.costKnown || o.scope != ScopePages || o.spec.Name != e.spec.Name {
			continue
		}
		if o.project == e.project {
			same = max(same, o.cost)
		}
		other = max(other, o.cost)
	}
	from, to := e.window.Range(s.now(), e.proj.Loc())
	guess := e.src.Estimate(sources.Query{Project: e.project, DateFrom: from, DateTo: to})
	return max(cmp.Or(same, other, guess, 1), e.cost)
}

// order is the entries in priority order: a repeat whose data would
// otherwise be dropped (past max staleness) within a budget window, then
// first walks before other repeats, so that every demand has data after
// one round (a repeat of today's window with data to serve meanwhile waits
// for the first walk of a 30d one); then today's window first, longer
// windows after it, yesterday's settled numbers last; but a window kept
// waiting longer than its own interval (and than a budget window) goes
// before the other repeats, so that when single walks are large against
// the budget, long windows still get their turn. Caller holds mu.
func (s *Scheduler) order(now time.Time) []*entry {
	window := s.budget.Window()
	rank := func(e *entry) int {
		switch {
		case e.final:
			return 3
		case !e.state.attempted:
			return 1 // its first walk
		case s.expiring(e, now.Add(window)):
			return 0
		}
		since := e.nextDue
		if since.IsZero() {
			since = s.started
		}
		if now.Sub(since) > max(e.interval, window) {
			return 2 // starving
		}
		return 3
	}
	out := slices.Clone(s.entries)
	slices.SortStableFunc(out, func(a, b *entry) int { return cmp.Compare(rank(a), rank(b)) })
	return out
}

// expiring reports whether e's data, served now, is no longer served at
// t (past max staleness). Caller holds mu.
func (s *Scheduler) expiring(e *entry, t time.Time) bool {
	good := e.state.good
	return good != nil && s.cfg.MaxStaleness > 0 && !s.servable(e, good, t) && s.servable(e, good, s.now())
}

// due reports whether e should be walked at now, or else when it will be.
// Caller holds mu.
func (s *Scheduler) due(e *entry, now time.Time) (bool, time.Time) {
	st := e.state
	if now.Before(e.heldUntil) {
		return false, e.heldUntil
	}
	retryAt := st.attemptEnd.Add(s.retryInterval(e))
	if e.final {
		return s.dueFinalDay(e, now, retryAt)
	}
	if !st.attempted {
		return true, now
	}
	if !st.ok && now.Before(retryAt) {
		return false, retryAt
	}
	if st.good == nil {
		return true, now
	}
	// Today's window has new dates after midnight: refresh it at once
	// (yesterday's numbers are not served as today's). Longer windows keep
	// their plan, or midnight would spend a day's budget at once.
	if e.window.Days == 1 {
		if from, to := e.window.Range(now, e.proj.Loc()); from != st.good.Meta().DateFrom || to != st.good.Meta().DateTo {
			return true, now
		}
	}
	return !now.Before(e.nextDue), e.nextDue
}

// dueFinalDay is due for e, a final day: its window ending yesterday is
// walked once, FinalDayDelay after local midnight (later after a failed
// walk, by the retry interval), and not after FinalDayExport, when it is no
// longer exported. Caller holds mu.
func (s *Scheduler) dueFinalDay(e *entry, now, retryAt time.Time) (bool, time.Time) {
	st := e.state
	loc := e.proj.Loc()
	today := analytics.Today(now, loc)
	start := analytics.DayStart(today, loc)
	from, to := e.window.RangeEndingOn(analytics.AddDays(today, -1))
	if st.good != nil && st.good.Meta().DateFrom == from && st.good.Meta().DateTo == to {
		return false, analytics.DayStart(analytics.AddDays(today, 1), loc).Add(s.cfg.FinalDayDelay)
	}
	at := start.Add(s.cfg.FinalDayDelay)
	if st.attempted && !st.ok && retryAt.After(at) {
		at = retryAt
	}
	if !now.Before(start.Add(FinalDayExport)) { // too late today
		return false, analytics.DayStart(analytics.AddDays(today, 1), loc).Add(s.cfg.FinalDayDelay)
	}
	return !now.Before(at), at
}

// retryInterval is how long after a failed walk of e the next may start.
func (s *Scheduler) retryInterval(e *entry) time.Duration {
	// Pages that did not end are no passing fault: the next walk waits a
	// budget window, twice as long after each such walk in a row (at most
	// a day), or its planned interval if longer; a final day's, till the
	// next day.
	if n := e.state.capped; n > 0 && e.state.err != nil {
		if e.final {
			return FinalDayExport
		}
		return max(e.interval, s.cfg.RetryInterval, min(s.budget.Window()<<min(n-1, 5), 24*time.Hour))
	}
	if s.cfg.RetryInterval > 0 {
		return s.cfg.RetryInterval
	}
	if e.final {
		return maxRetryInterval
	}
	return min(max(e.interval, time.Second), maxRetryInterval)
}
