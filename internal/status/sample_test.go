package status

import (
	"context"
	"fmt"
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
			Sections:        []Section{sampleJobs(), sampleDeployments()},
			MostOverduePoll: &Poll{Project: "acme-docs", Kind: "job", JobID: "job_7f3a91", DueAt: ago(2*m + 5*time.Second)},
		},
		Links: append(slices.Clone(DefaultLinks), Link{Text: "Jobs of acme-docs", Href: "/api/v2/agent/acme-docs/jobs"}),
	}
}

func sampleSource(context.Context) Report { return sampleReport() }

// sampleJobs is a section as the agent jobs' kind makes it: counts by
// status per project, in its own JSON.
func sampleJobs() Section {
	type row struct {
		Project        string         `json:"project"`
		ByStatus       map[string]int `json:"by_status"`
		UnknownCreates int            `json:"unknown_creates"`
	}
	rows := []row{{"acme-docs", map[string]int{"active": 2, "completed": 41, "failed": 3, "archived": 7}, 0},
		{"acme-api", map[string]int{"completed": 5, "lost": 1, "paused": 1}, 1}}
	s := Section{Key: "projects", Title: "Agent jobs", Empty: "No project is followed.", JSON: rows, Columns: []Column{{Name: "Project"}}}
	statuses := []string{"active", "completed", "failed", "archived", "lost", "paused"}
	for _, st := range statuses {
		s.Columns = append(s.Columns, Column{Name: st, Num: true})
	}
	s.Columns = append(s.Columns, Column{Name: "Unknown creates", Num: true}, Column{Name: "Oldest active"})
	for i, r := range rows {
		cells := []Cell{{Text: r.Project}}
		for _, st := range statuses {
			c := Cell{Text: fmt.Sprint(r.ByStatus[st])}
			if st == "lost" && r.ByStatus[st] > 0 {
				c.Level = LevelWarn
			}
			cells = append(cells, c)
		}
		c := Cell{Text: fmt.Sprint(r.UnknownCreates)}
		if r.UnknownCreates > 0 {
			c.Level = LevelWarn
		}
		oldest := Cell{Time: true}
		if i == 0 {
			oldest.At = ago(18 * time.Minute)
		}
		s.Rows = append(s.Rows, Row{Project: r.Project, Cells: append(cells, c, oldest)})
	}
	return s
}

// sampleDeployments is a section of single operations, newest first.
func sampleDeployments() Section {
	type row struct {
		Project  string `json:"project"`
		StatusID string `json:"status_id"`
		Status   string `json:"status"`
		Branch   string `json:"branch"`
	}
	rows := []row{{"acme-docs", "dep_5e1c07", "in_progress", "feat-search"}, {"acme-docs", "dep_5e1c06", "failure", "main"}}
	s := Section{Key: "deployments", Title: "Deployments", Note: "Newest first.", JSON: rows,
		Columns: []Column{{Name: "Project"}, {Name: "Status"}, {Name: "Branch"}, {Name: "Created"}}}
	for i, r := range rows {
		st := Cell{Text: r.Status, Code: true}
		if r.Status == "failure" {
			st.Level = LevelWarn
		}
		s.Rows = append(s.Rows, Row{Project: r.Project, Cells: []Cell{{Text: r.Project}, st, {Text: r.Branch, Code: true},
			{Time: true, At: ago(time.Duration(i+1) * time.Minute)}}})
	}
	return s
}
