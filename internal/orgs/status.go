package orgs

import (
	"github.com/mintlify-exporter/mintlify_exporter/internal/refresh"
	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
)

// Status is the organizations' budgets and refresh demands, for the
// status page.
func (s *Set) Status() ([]status.Organization, []status.Demand) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var orgs []status.Organization
	var demands []status.Demand
	for _, o := range s.orgs {
		st := o.budget.State()
		orgs = append(orgs, status.Organization{
			Name: o.name, Projects: append([]string(nil), o.projects...), Limit: st.Limit, EffectiveLimit: st.Effective,
			ReducedUntil: st.HalvedUntil, Window: status.Duration(st.Window), Spent: st.Spent, NextRequestAt: st.NextFree,
			PausedUntil: st.PausedUntil, Rejections: st.Rejections, Planned: plannedOf(o),
		})
		if o.sched != nil {
			orgs[len(orgs)-1].Notice = o.sched.StalenessNotice()
		}
		if o.sched == nil {
			continue
		}
		for _, v := range o.sched.Views() {
			d := status.Demand{Organization: o.name, Project: v.Project, Source: v.Source, Window: windowLabel(v),
				LastRefreshAt: v.LastAttempt, Duration: status.Duration(v.Duration), Running: v.Running,
				NextRefreshAt: v.NextDue, Cost: v.Cost, CostKnown: v.CostKnown, Interval: status.Duration(v.Interval),
				LastSuccessAt: v.LastSuccess, Exported: v.Data != nil, SharedVersion: v.SharedVersion}
			if v.Attempted {
				d.Result = status.Classify(v.Err)
			}
			if v.Data != nil {
				d.SkippedRows = v.Data.Meta().Skipped
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
