// What the scheduler tells of its plan: the plan logged at start and when it
// changes, and the notice when the budget keeps demands stale.

package refresh

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/go-kit/log/level"
)

// planLog is what the scheduler tells of its plan: at info one line per
// organization (the scheduler's logger carries it), each demand's plan at
// debug, and a notice when the budget keeps demands staler than
// --analytics.max-staleness. A configuration of 28 demands logged 58 lines
// at start when each demand had its own line at info.
type planLog struct {
	// pending: log the whole plan at the next replan, from estimated costs
	// if need be (at start, and after a reload changed the demands).
	pending bool
	// late is the demands of the last notice, to log one only when they
	// change; notice is its text ("" when none), for the status page.
	late, notice string
}

// logPlan logs the plan replan derived: current are the entries planned,
// demands their demands (intervals already set on the entries), limit the
// budget per window. known: every entry has been walked, so costs are
// learned. Caller holds mu.
func (s *Scheduler) logPlan(current []*entry, demands []Demand, limit int, known bool) {
	logAll := s.planLog.pending
	s.planLog.pending = false
	changed := false
	var stalest *entry
	for _, e := range current {
		if stalest == nil || e.interval > stalest.interval {
			stalest = e
		}
		if plan := fmt.Sprintf("%d@%s", e.cost, e.interval); (known || logAll) && plan != e.logged {
			e.logged = plan
			changed = true
			level.Debug(s.logger).Log("msg", "analytics refresh plan of a demand", "project", e.project, "source", e.spec.Name, "window", e.label,
				"scope", e.scope, "requests_per_walk", e.cost, "cost_learned", e.costKnown, "interval", e.interval)
		}
	}
	if changed && stalest != nil {
		level.Info(s.logger).Log("msg", "analytics refresh plan", "budget_per_hour", limit,
			"planned_requests_per_hour", fmt.Sprintf("%.1f", s.planned), "demands", len(current), "costs_learned", known,
			"stalest_interval", stalest.interval, "stalest", stalest.project+"/"+stalest.spec.Name+"/"+stalest.label)
	}
	if known {
		s.noticeStaleness(current, demands, limit)
	}
}

// noticeStaleness logs, when it changes, which demands the budget refreshes
// less often than max staleness allows, with in one sentence what would
// change that: the budget it would take, and a window's own interval only
// for late windows that have none (a file that gives 30d:6h is not told to).
// Caller holds mu.
func (s *Scheduler) noticeStaleness(current []*entry, demands []Demand, limit int) {
	var late []string
	var lateOwn []string // late windows of several days without their own interval
	wanted := make([]time.Duration, len(current))
	for i, e := range current {
		wanted[i] = e.interval
		w := max(demands[i].MinInterval, s.cfg.MaxStaleness)
		if s.cfg.MaxStaleness <= 0 || e.interval <= w {
			continue
		}
		wanted[i] = w
		late = append(late, fmt.Sprintf("%s/%s/%s every %s", e.project, e.spec.Name, e.label, e.interval))
		if e.window.Days > 1 && e.window.Interval == 0 && !slices.Contains(lateOwn, e.label) {
			lateOwn = append(lateOwn, e.label)
		}
	}
	// The longest window first: the one an interval of its own suits best.
	slices.SortStableFunc(lateOwn, func(a, b string) int { return cmp.Compare(windowDays(current, b), windowDays(current, a)) })
	l := strings.Join(late, ", ")
	if l == s.planLog.late {
		return
	}
	s.planLog.late, s.planLog.notice = l, ""
	if l == "" {
		return
	}
	need := budgetFor(spendAt(s.budget.Window(), demands, wanted))
	advice := fmt.Sprintf("raise the organization's analytics budget (analytics_budget, or --mintlify.analytics-budget) from %d to about %d requests per hour", limit, need)
	if len(lateOwn) > 0 {
		what := "window " + lateOwn[0] + " an interval of its own"
		if len(lateOwn) > 1 {
			what = "windows " + strings.Join(lateOwn, ", ") + " intervals of their own"
		}
		advice += fmt.Sprintf(", or give the %s (such as %s:%s)", what, lateOwn[0], ownIntervalHint(current, lateOwn[0]))
	}
	s.planLog.notice = fmt.Sprintf("%d of %d refreshes are planned less often than --analytics.max-staleness (%s) allows: %s.",
		len(late), len(current), s.cfg.MaxStaleness, advice)
	// Information, not a fault: staleness is judged against the plan, so
	// no data is dropped for it.
	level.Info(s.logger).Log("msg", s.planLog.notice, "refreshed_less_often", l)
}

// ownIntervalHint is the interval the plan gives window label's longest
// planned demand, rounded up to an hour: what an interval of its own would
// make official.
func ownIntervalHint(current []*entry, label string) string {
	var d time.Duration
	for _, e := range current {
		if e.label == label {
			d = max(d, e.interval)
		}
	}
	return strings.TrimSuffix(strings.TrimSuffix(d.Round(time.Hour).String(), "0s"), "0m")
}

// budgetFor is the smallest budget whose plannable part covers spend.
func budgetFor(spend float64) int {
	n := max(int(math.Ceil(spend)), 1)
	for Plannable(n) < spend {
		n++
	}
	return n
}

// windowDays is the length in days of window label.
func windowDays(current []*entry, label string) int {
	for _, e := range current {
		if e.label == label {
			return e.window.Days
		}
	}
	return 0
}

// StalenessNotice is the last notice of demands planned staler than max
// staleness allows ("" when none): what the status page shows.
func (s *Scheduler) StalenessNotice() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.planLog.notice
}
