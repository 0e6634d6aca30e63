// What the scheduler tells of its plan: the plan logged at start and when it
// changes, and the notice when the plan cannot meet a demand.

package refresh

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/internal/human"
)

// planLog is what the scheduler tells of its plan: at info one line per
// organization (the scheduler's logger carries it), each demand's plan at
// debug, and a notice when the plan cannot meet a demand (unmetNotice). A configuration of 28 demands logged 58 lines
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
				"scope", e.scope, "requests_per_walk", e.cost, "cost_learned", e.costKnown, "interval", human.Duration(e.interval))
		}
	}
	if changed && stalest != nil {
		level.Info(s.logger).Log("msg", "analytics refresh plan", "budget_per_hour", limit,
			"planned_requests_per_hour", fmt.Sprintf("%.1f", s.planned), "demands", len(current), "costs_learned", known,
			"stalest_interval", human.Duration(stalest.interval), "stalest", stalest.project+"/"+stalest.spec.Name+"/"+stalest.label)
	}
	s.noticeUnmet(current, demands, limit, known)
}

// noticeUnmet logs, when it changes, the demands the plan cannot meet,
// with in one sentence what would change that (unmetNotice). Caller holds mu.
func (s *Scheduler) noticeUnmet(current []*entry, demands []Demand, limit int, log bool) {
	late, notice := unmetNotice(s.budget.Window(), current, demands, limit)
	s.planLog.notice = notice
	// Logged once costs are learned (the estimates' notice is on the
	// status page meanwhile), and again only when the demands change.
	if !log || late == s.planLog.late {
		return
	}
	s.planLog.late = late
	if notice != "" {
		// Information, not a fault: the plan serves every demand's
		// data, only less often than asked.
		level.Info(s.logger).Log("msg", notice, "not_met", late)
	}
}

// unmetNotice is the one rule, for the running plan and `config check`
// alike, of when the plan cannot meet a demand, and the sentence that says
// what to change ("" when every demand is met): a window with an interval
// of its own (30d:6h) planned less often than that, or a walk that takes
// more requests than the whole budget (it waits for the budget between
// pages). A window without an interval of its own asks for none: the
// budget's plan is what it gets, and data is judged stale against that
// plan, so a long interval is no fault (issue 38: a notice where nothing
// was wrong). late lists the demands, to log the notice when they change.
func unmetNotice(window time.Duration, current []*entry, demands []Demand, limit int) (late, notice string) {
	var unmet, own []string
	wanted := make([]time.Duration, len(current))
	need := 0
	for i, e := range current {
		wanted[i] = e.interval
		switch {
		case e.cost > limit:
			unmet = append(unmet, fmt.Sprintf("%s/%s/%s takes %d requests a walk", e.project, e.spec.Name, e.label, e.cost))
			need = max(need, e.cost)
		case e.window.Interval > 0 && e.interval > e.window.Interval+time.Second:
			wanted[i] = e.window.Interval
			unmet = append(unmet, fmt.Sprintf("%s/%s/%s every %s (asks %s)", e.project, e.spec.Name, e.label,
				human.Duration(e.interval), human.Duration(e.window.Interval)))
			if !slices.Contains(own, e.window.Name) {
				own = append(own, e.window.Name)
			}
		}
	}
	if len(unmet) == 0 {
		return "", ""
	}
	// The budget the asked intervals take, as the fill plans them (on
	// fillShare of it); never the one in force or less: advice to lower a
	// number is no advice (issue 46: "from 60 to about 59").
	need = max(need, budgetFor(spendAt(window, demands, wanted)/fillShare), limit+1)
	advice := fmt.Sprintf("raise the organization's analytics budget (analytics_budget, or --mintlify.analytics-budget) from %d to about %d requests per hour", limit, need)
	if len(own) > 0 {
		advice += fmt.Sprintf(", or give window %s a longer interval (such as %s:%s)", own[0], own[0], ownIntervalHint(current, own[0]))
	}
	late = strings.Join(unmet, ", ")
	return late, fmt.Sprintf("%d of %d refreshes cannot be planned as asked (%s): %s.", len(unmet), len(current), late, advice)
}

// ownIntervalHint is the interval the plan gives window name's longest
// planned demand, rounded up to an hour: an interval of its own the
// budget pays for.
func ownIntervalHint(current []*entry, name string) string {
	var d time.Duration
	for _, e := range current {
		if e.window.Name == name {
			d = max(d, e.interval)
		}
	}
	d = max(d.Round(time.Hour), time.Hour)
	return strings.TrimSuffix(strings.TrimSuffix(d.String(), "0s"), "0m")
}

// budgetFor is the smallest budget whose plannable part covers spend.
func budgetFor(spend float64) int {
	n := max(int(math.Ceil(spend)), 1)
	for Plannable(n) < spend {
		n++
	}
	return n
}

// PlanNotice is the notice of demands the plan cannot meet ("" when
// none: unmetNotice): what the status page and `config check` show.
func (s *Scheduler) PlanNotice() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.planLog.notice
}
