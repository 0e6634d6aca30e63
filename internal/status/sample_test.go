package status

import (
	"context"
	"slices"
	"time"
)

// sampleAt is the sample report's time.
var sampleAt = time.Date(2026, 11, 23, 14, 7, 30, 0, time.UTC)

func ago(d time.Duration) time.Time { return sampleAt.Add(-d) }

// sampleReport has a bit of everything the page shows: two organizations,
// one paused after a 429; refreshes that succeeded, failed, are running,
// have not run, are overdue and whose data is too old to export; jobs in
// every status and an overdue poll; deployments followed, one failed; a
// key's expiry.
func sampleReport() Report {
	const m, h = time.Minute, time.Hour
	d := func(project, source, window string) Demand {
		return Demand{Organization: "acme", Project: project, Source: source, Window: window, Result: ResultOK, Exported: true, CostKnown: true}
	}
	var demands []Demand
	add := func(dm Demand, last time.Duration, took time.Duration, interval time.Duration, cost int) {
		dm.LastRefreshAt = ago(last)
		if dm.LastSuccessAt.IsZero() && dm.Result == ResultOK {
			dm.LastSuccessAt = dm.LastRefreshAt
		}
		dm.Duration = Duration(took)
		dm.Interval = Duration(interval)
		if dm.NextRefreshAt.IsZero() && interval > 0 {
			dm.NextRefreshAt = dm.LastRefreshAt.Add(interval)
		}
		dm.Cost = cost
		demands = append(demands, dm)
	}
	add(d("acme-docs", "visitors", "1d"), 6*m, 2400*time.Millisecond, 12*m, 3)
	add(d("acme-api", "visitors", "1d"), 3*m, 900*time.Millisecond, 12*m, 1)
	add(d("acme-docs", "views", "1d"), 9*m, 2100*time.Millisecond, 15*m, 3)
	add(d("acme-api", "views", "1d"), 11*m, 800*time.Millisecond, 15*m, 1)
	failed := d("acme-docs", "visitors", "7d")
	failed.Result, failed.LastSuccessAt = ResultServerError, ago(2*h+14*m)
	add(failed, 4*m, 31*time.Second, 2*h, 3)
	running := d("acme-docs", "visitors", "30d")
	running.Running = true
	add(running, 5*h+50*m, 14*time.Second, 6*h, 3)
	late := d("acme-api", "feedback", "7d")
	late.NextRefreshAt = ago(7 * m)
	add(late, 4*h+7*m, 600*time.Millisecond, 4*h, 1)
	add(d("acme-docs", "searches", "7d"), 42*m, 1200*time.Millisecond, 6*h, 1)
	pending := Demand{Organization: "acme", Project: "acme-docs", Source: "assistant", Window: "7d",
		NextRefreshAt: sampleAt.Add(3 * m), Cost: 1, Interval: Duration(3 * h)}
	demands = append(demands, pending)
	// Yesterday's settled numbers: walked once a day, nothing planned next.
	add(d("acme-docs", "visitors", "yesterday"), 22*m, 2600*time.Millisecond, 0, 3)

	g := func(project, source, window string) Demand {
		dm := d(project, source, window)
		dm.Organization = "globex"
		return dm
	}
	limited := g("globex-dev", "visitors", "1d")
	limited.Result, limited.LastSuccessAt = ResultRateLimited, ago(38*m)
	add(limited, 1*m, 300*time.Millisecond, 15*m, 2)
	stale := g("globex-dev", "visitors", "30d")
	stale.Result, stale.LastSuccessAt, stale.Exported, stale.CostKnown = ResultBudgetExhausted, ago(31*h), false, false
	add(stale, 2*m, 0, 12*h, 4)

	return Report{
		GeneratedAt: sampleAt,
		Exporter: Exporter{Version: "0.9.0", Revision: "6281434", StartedAt: ago(26*h + 12*m),
			Config: &Config{File: "/etc/mintlify/exporter.yml", LastReloadSuccessful: true, LastReloadAt: ago(3*h + 2*m), LastSuccessAt: ago(3*h + 2*m)}},
		Organizations: []Organization{
			{Name: "acme", Projects: []string{"acme-docs", "acme-api"}, Limit: 60, EffectiveLimit: 60, Window: Duration(h),
				Spent: 47, Planned: 54.2, NextRequestAt: sampleAt, Rejections: 0, KeyExpiresAt: sampleAt.Add(61 * 24 * h)},
			{Name: "globex", Projects: []string{"globex-dev"}, Limit: 40, EffectiveLimit: 20, ReducedUntil: sampleAt.Add(59 * m), Window: Duration(h),
				Spent: 20, Planned: 18.5, NextRequestAt: sampleAt.Add(4*m + 10*time.Second), PausedUntil: sampleAt.Add(50 * time.Second), Rejections: 3},
		},
		Demands: demands,
		Jobs: &Jobs{
			Projects: []ProjectJobs{
				{Project: "acme-docs", ByStatus: map[string]int{"active": 2, "completed": 41, "failed": 3, "archived": 7}, OldestActiveAt: ago(18 * m)},
				{Project: "acme-api", ByStatus: map[string]int{"completed": 5, "lost": 1, "paused": 1}, UnknownCreates: 1},
			},
			MostOverduePoll: &Poll{Project: "acme-docs", JobID: "job_7f3a91", DueAt: ago(2*m + 5*time.Second)},
			Deployments: []Deployment{
				{Project: "acme-docs", Kind: "preview", StatusID: "dep_5e1c07", Status: "in_progress", Branch: "feat-search",
					PreviewURL: "https://acme-docs-feat-search.mintlify.app", CreatedAt: ago(40 * time.Second)},
				{Project: "acme-docs", Kind: "update", StatusID: "dep_5e1c06", Status: "failure", Branch: "main", SHA: "9c41d2e",
					CreatedAt: ago(26 * m), EndedAt: ago(25 * m)},
				{Project: "acme-api", Kind: "update", StatusID: "dep_5e1c05", Status: "success", Branch: "main", SHA: "77ab310",
					CreatedAt: ago(2*h + 3*m), EndedAt: ago(2*h + 2*m)},
			},
		},
		Links: append(slices.Clone(DefaultLinks), Link{Text: "Jobs of acme-docs", Href: "/api/v2/agent/acme-docs/jobs"}),
	}
}

func sampleSource(context.Context) Report { return sampleReport() }
