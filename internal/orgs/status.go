package orgs

import (
	"github.com/mintlify-exporter/mintlify_exporter/internal/refresh"
	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
)

// Status is the organizations' budgets and refresh demands, for the
// status page. published, when not nil, are the views /metrics serves
// (collector.Encoded.Published): a demand is shown as published, so that
// its row reads "ok" only once its series are served; a demand not
// published yet (new after a reload) is shown as it is.
func (s *Set) Status(published []refresh.View) ([]status.Organization, []status.Demand) {
	pub := make(map[viewKey]refresh.View, len(published))
	for _, v := range published {
		pub[keyOf(v)] = v
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var orgs []status.Organization
	var demands []status.Demand
	for _, o := range s.orgs {
		st := o.budget.State()
		orgs = append(orgs, status.Organization{
			Name: o.name, Projects: append([]string(nil), o.projects...), Limit: st.Limit, EffectiveLimit: st.Effective,
			ReducedUntil: st.HalvedUntil, Window: status.Duration(st.Window), Spent: st.Spent, NextRequestAt: st.NextFree,
			PausedUntil: st.PausedUntil, Rejections: st.Rejections, Planned: plannedOf(o), KeyExpiresAt: o.keyExpires,
		})
		if o.sched == nil {
			continue
		}
		orgs[len(orgs)-1].Notice = o.sched.PlanNotice()
		for _, v := range o.sched.Views() {
			if p, ok := pub[keyOf(v)]; ok {
				v = p
			}
			d := status.Demand{Organization: o.name, Project: v.Project, Source: v.Source, Window: windowLabel(v),
				LastRefreshAt: v.LastAttempt, Duration: status.Duration(v.Duration), Running: v.Running,
				NextRefreshAt: v.NextDue, Cost: v.Cost, CostKnown: v.CostKnown, Interval: status.Duration(v.Interval),
				LastSuccessAt: v.LastSuccess, Exported: v.Data != nil, SharedVersion: v.SharedVersion}
			if v.Attempted {
				d.Result = status.Classify(v.Err)
			}
			if v.Data != nil {
				d.SkippedRows, d.TotalsSkipped = v.Data.Meta().Skipped, v.Data.Meta().TotalsSkipped
			}
			demands = append(demands, d)
		}
	}
	return orgs, demands
}

// plannedOf is what o's plan intends to spend per budget window.
func plannedOf(o *org) float64 {
	if o.sched == nil {
		return 0
	}
	return o.sched.Planned()
}

// windowLabel is a demand's window as the status page shows it: the site
// totals walk of a window is told apart from its page walk.
func windowLabel(v refresh.View) string {
	if v.Scope == refresh.ScopeSite {
		return v.Window + " (site totals)"
	}
	return v.Window
}

// viewKey identifies a view: project ids are distinct across
// organizations.
type viewKey struct{ project, source, window, scope string }

func keyOf(v refresh.View) viewKey { return viewKey{v.Project, v.Source, v.Window, v.Scope} }

// Planned is what every organization's plan intends to spend per budget
// window, together: what a reload logs when it moved.
func (s *Set) Planned() float64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var sum float64
	for _, o := range s.orgs {
		sum += plannedOf(o)
	}
	return sum
}
