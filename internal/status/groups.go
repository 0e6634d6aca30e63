package status

import "time"

// projectGroup is one project's refreshes of an organization: the page
// shows each project as one line, opened to its rows only when one of them
// is not fine (the sandbox's 28 refreshes were one flat table).
type projectGroup struct {
	Project string
	Demands []demandView
	// Level is the worst of the rows' levels; Open when it is not ok.
	Level string
	Open  bool
	// Failing, Late and Pending count the rows by state, for the summary.
	Failing, Late, Pending int
	// Next is the soonest planned refresh of the project.
	Next   when
	nextAt time.Time
}

// groupByProject splits an organization's demands by project, in the order
// each project first appears (the plan's priority order).
func groupByProject(ds []demandView) []projectGroup {
	var out []projectGroup
	index := map[string]int{}
	for _, d := range ds {
		i, ok := index[d.Project]
		if !ok {
			i = len(out)
			index[d.Project] = i
			out = append(out, projectGroup{Project: d.Project, Level: levelOK})
		}
		g := &out[i]
		g.Demands = append(g.Demands, d)
		switch d.Level {
		case levelBad:
			g.Failing++
			g.Level = levelBad
		case levelWarn:
			g.Late++
			if g.Level == levelOK {
				g.Level = levelWarn
			}
		}
		if d.Result == "" {
			g.Pending++
		}
		if at := d.NextRefreshAt; !d.Running && !at.IsZero() && (g.nextAt.IsZero() || at.Before(g.nextAt)) {
			g.nextAt, g.Next = at, d.Next
		}
	}
	for i := range out {
		out[i].Open = out[i].Level != levelOK
	}
	return out
}
