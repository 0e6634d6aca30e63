package status

import (
	"fmt"
	"strings"
	"time"
)

// lateAfter is how long past its time a refresh or poll may be before the
// page marks it: a refresh that waits seconds for the budget is the plan
// working, not a fault.
const lateAfter = time.Minute

// Levels mark rows and the verdict (CSS classes of the page).
const (
	levelOK   = "ok"
	levelWarn = "warn"
	levelBad  = "bad"
)

// page is what the template renders: the report, with every time and
// duration already written out for a person.
type page struct {
	Links     []Link
	Zone      string
	Generated when
	Exporter  Exporter
	Uptime    string
	Started   when
	Config    *configView
	Verdict   verdict
	Orgs      []orgView
	// Demands is false when no organization has any.
	Demands bool
	Jobs    *jobsView
}

// when is a time as the page shows it; Rel is empty for a zero time.
type when struct {
	// ISO is RFC 3339, for <time datetime> and the tooltip.
	ISO string
	// Rel is relative to the report's time: "4m ago", "in 2m", "now".
	Rel string
	// Abs is the wall-clock time in the page's zone, shortened when it is
	// the report's day.
	Abs string
}

type verdict struct {
	Level string
	Head  string
	Lines []string
}

type configView struct {
	Config
	LastReload, LastSuccess when
}

type orgView struct {
	Organization
	// Known is false for the demands of an organization the report has no
	// budget for.
	Known bool
	Level string
	// Halved is true while the limit in force is below the configured one.
	Halved                bool
	Next, Paused, Reduced when
	NextNow               bool
	// NextRefresh is when the soonest refresh not running is planned to
	// start, budget waits included: the budget may have room for a request
	// while every due walk waits for a larger share of it.
	NextRefresh when
	// KeyExpires is when the API key expires (Rel empty: not configured);
	// KeyLevel marks it within KeyExpiryWarning (warn) or past (bad).
	KeyExpires    when
	KeyLevel      string
	Window        string
	Demands       []demandView
	Failing, Late int
	// Groups are Demands by project (groups.go).
	Groups []projectGroup
}

type demandView struct {
	Demand
	Level               string
	ResultHelp          string
	Last, Next, Success when
	Duration, Interval  string
	Age, Overdue        string
	Late, Stale         bool
}

type jobsView struct {
	Sections []sectionView
	Poll     *pollView
}

type sectionView struct {
	Section
	Rows []rowView
}

type rowView struct {
	Project string
	Cells   []cellView
}

type cellView struct {
	Cell
	Label string
	Num   bool
	When  when
}

type pollView struct {
	Poll
	Due     when
	Overdue string
	Late    bool
}

func newPage(r Report, opts Options) page {
	at := r.GeneratedAt
	w := func(t time.Time) when { return makeWhen(t, at, opts.Location) }
	p := page{
		Links:     r.Links,
		Zone:      at.In(opts.Location).Format("MST"),
		Generated: w(at),
		Exporter:  r.Exporter,
		Uptime:    humanDuration(r.Exporter.Uptime),
		Started:   w(r.Exporter.StartedAt),
	}
	if c := r.Exporter.Config; c != nil {
		p.Config = &configView{Config: *c, LastReload: w(c.LastReloadAt), LastSuccess: w(c.LastSuccessAt)}
	}
	byName := map[string]int{}
	for _, o := range r.Organizations {
		v := orgView{Organization: o, Known: true, Level: levelOK, Window: humanDuration(o.Window),
			Next: w(o.NextRequestAt), NextNow: !o.NextRequestAt.After(at)}
		if o.PausedUntil.After(at) {
			v.Paused, v.Level = w(o.PausedUntil), levelBad
		}
		if !o.KeyExpiresAt.IsZero() {
			v.KeyExpires = w(o.KeyExpiresAt)
			switch {
			case !o.KeyExpiresAt.After(at):
				v.KeyLevel = levelBad
			case o.KeyExpiresAt.Sub(at) < KeyExpiryWarning:
				v.KeyLevel = levelWarn
			}
		}
		if o.EffectiveLimit < o.Limit {
			v.Halved, v.Reduced = true, w(o.ReducedUntil)
			if v.Level == levelOK {
				v.Level = levelWarn
			}
		}
		byName[o.Name] = len(p.Orgs)
		p.Orgs = append(p.Orgs, v)
	}
	soonest := map[int]time.Time{}
	for _, d := range r.Demands {
		i, ok := byName[d.Organization]
		if !ok {
			i = len(p.Orgs)
			byName[d.Organization] = i
			p.Orgs = append(p.Orgs, orgView{Organization: Organization{Name: d.Organization}, Level: levelOK})
		}
		o := &p.Orgs[i]
		v := newDemandView(d, w)
		switch v.Level {
		case levelBad:
			o.Failing++
		case levelWarn:
			o.Late++
		}
		o.Demands = append(o.Demands, v)
		p.Demands = true
		if !d.Running && !d.NextRefreshAt.IsZero() && (o.NextRefresh.ISO == "" || d.NextRefreshAt.Before(soonest[i])) {
			soonest[i] = d.NextRefreshAt
			o.NextRefresh = w(d.NextRefreshAt)
		}
	}
	for i := range p.Orgs {
		p.Orgs[i].Groups = groupByProject(p.Orgs[i].Demands)
	}
	if r.Jobs != nil {
		p.Jobs = newJobsView(*r.Jobs, w)
	}
	p.Verdict = newVerdict(p)
	return p
}

func newDemandView(d Demand, w func(time.Time) when) demandView {
	v := demandView{Demand: d, Level: levelOK, ResultHelp: resultHelp[d.Result],
		Last: w(d.LastRefreshAt), Next: w(d.NextRefreshAt), Success: w(d.LastSuccessAt),
		Duration: humanDuration(d.Duration), Interval: humanDuration(d.Interval),
		Age: humanDuration(d.DataAge), Overdue: humanDuration(d.Overdue)}
	if v.ResultHelp == "" {
		v.ResultHelp = resultHelp[ResultError]
	}
	if d.Result == "" {
		v.ResultHelp = "not refreshed yet"
	}
	if d.Interval == 0 {
		v.Interval = "" // not periodic
	}
	v.Late = time.Duration(d.Overdue) > lateAfter
	v.Stale = !d.LastSuccessAt.IsZero() && !d.Exported
	switch {
	case d.Result != "" && d.Result != ResultOK:
		v.Level = levelBad
	case v.Late || v.Stale:
		v.Level = levelWarn
	}
	return v
}

func newJobsView(j Jobs, w func(time.Time) when) *jobsView {
	v := &jobsView{}
	for _, sec := range j.Sections {
		sv := sectionView{Section: sec}
		for _, r := range sec.Rows {
			rv := rowView{Project: r.Project}
			for i, c := range r.Cells {
				cv := cellView{Cell: c, When: w(c.At)}
				if i < len(sec.Columns) {
					cv.Label, cv.Num = sec.Columns[i].Name, sec.Columns[i].Num
				}
				rv.Cells = append(rv.Cells, cv)
			}
			sv.Rows = append(sv.Rows, rv)
		}
		v.Sections = append(v.Sections, sv)
	}
	if pl := j.MostOverduePoll; pl != nil {
		v.Poll = &pollView{Poll: *pl, Due: w(pl.DueAt), Overdue: humanDuration(pl.Overdue),
			Late: time.Duration(pl.Overdue) > lateAfter}
	}
	return v
}

// newVerdict answers "is it working" in one line, and lists what is not.
func newVerdict(p page) verdict {
	v := verdict{Level: levelOK}
	var n demandCounts
	for _, o := range p.Orgs {
		v.budget(o)
		n.add(o.Demands)
	}
	if n.failing > 0 {
		v.add(levelBad, plural(n.failing, "refresh", "refreshes")+" failing")
	}
	if n.late > 0 {
		v.add(levelWarn, plural(n.late, "refresh", "refreshes")+" overdue")
	}
	if n.stale > 0 {
		v.add(levelWarn, plural(n.stale, "window's data", "windows' data")+" too old to export")
	}
	if c := p.Config; c != nil && !c.LastReloadSuccessful {
		v.add(levelBad, "the last configuration reload failed (see the log); the previous configuration runs")
	}
	if p.Jobs != nil && p.Jobs.Poll != nil && p.Jobs.Poll.Late {
		v.add(levelWarn, "a poll of "+p.Jobs.Poll.Kind+" "+p.Jobs.Poll.JobID+" is "+p.Jobs.Poll.Overdue+" overdue")
	}
	v.Head = n.headline(v.Level)
	return v
}

// add raises the verdict's level to l (bad stays bad) and lists line.
func (v *verdict) add(l, line string) {
	if l == levelBad || v.Level == levelOK {
		v.Level = l
	}
	v.Lines = append(v.Lines, line)
}

// KeyExpiryWarning is how long before its key expires an organization is
// marked: MintlifyAPIKeyExpiresSoon's threshold (14 days).
const KeyExpiryWarning = 14 * 24 * time.Hour

// budget lists an organization's budget held back after a 429: paused
// (bad) or cut (a warning), and its key expired or expiring soon.
func (v *verdict) budget(o orgView) {
	switch o.KeyLevel {
	case levelBad:
		v.add(levelBad, fmt.Sprintf("%s: the API key expired %s (api_key_expires): rotate it", o.Name, o.KeyExpires.Rel))
	case levelWarn:
		v.add(levelWarn, fmt.Sprintf("%s: the API key expires %s, on %s (api_key_expires): rotate it", o.Name, o.KeyExpires.Rel, o.KeyExpires.Abs))
	}
	switch {
	case o.Paused.Rel != "":
		v.add(levelBad, fmt.Sprintf("%s: paused after a 429 until %s", o.Name, o.Paused.Abs))
	case o.Halved:
		line := fmt.Sprintf("%s: budget cut to %d after a 429", o.Name, o.EffectiveLimit)
		if o.Reduced.Rel != "" {
			line += " until " + o.Reduced.Abs
		}
		v.add(levelWarn, line)
	}
}

// demandCounts count the demands by how their last refresh went.
type demandCounts struct {
	total, failing, late, stale, pending int
}

func (n *demandCounts) add(demands []demandView) {
	for _, d := range demands {
		n.total++
		switch {
		case d.Result == "":
			n.pending++
		case d.Result != ResultOK:
			n.failing++
		}
		if d.Late {
			n.late++
		}
		if d.Stale {
			n.stale++
		}
	}
}

// headline is the verdict's one line: how many refreshes are ok.
func (n demandCounts) headline(level string) string {
	refreshes := plural(n.total, "refresh", "refreshes")
	switch {
	case n.total == 0:
		return "Nothing planned: no project and window to refresh"
	case level == levelOK && n.pending == 0:
		return fmt.Sprintf("Working: all %s ok", refreshes)
	case n.pending > 0:
		return fmt.Sprintf("%d of %s ok, %d not run yet", n.total-n.failing-n.pending, refreshes, n.pending)
	default:
		return fmt.Sprintf("%d of %s ok", n.total-n.failing-n.pending, refreshes)
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// makeWhen writes t relative to at and as a wall-clock time in loc.
func makeWhen(t, at time.Time, loc *time.Location) when {
	if t.IsZero() {
		return when{}
	}
	lt, la := t.In(loc), at.In(loc)
	w := when{ISO: lt.Format(time.RFC3339)}
	switch d := t.Sub(at); {
	case d > -time.Second && d < time.Second:
		w.Rel = "now"
	case d > 0:
		w.Rel = "in " + humanDuration(Duration(d))
	default:
		w.Rel = humanDuration(Duration(-d)) + " ago"
	}
	switch {
	case lt.Year() == la.Year() && lt.YearDay() == la.YearDay():
		w.Abs = lt.Format("15:04:05")
	case lt.Year() == la.Year():
		w.Abs = lt.Format("Jan 2 15:04")
	default:
		w.Abs = lt.Format("2006-01-02 15:04")
	}
	return w
}

// humanDuration writes d with its two largest units: "320ms", "4.2s",
// "4m 10s", "3h 5m", "2d 4h".
func humanDuration(d Duration) string {
	t := time.Duration(d)
	switch {
	case t <= 0:
		return "0s"
	case t < time.Second:
		return fmt.Sprintf("%dms", t.Milliseconds())
	case t < 10*time.Second:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", t.Seconds()), ".0") + "s"
	}
	t = t.Round(time.Second)
	units := []struct {
		size time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}}
	for i, u := range units[:3] {
		if t >= u.size {
			hi, lo := t/u.size, (t%u.size)/units[i+1].size
			if lo == 0 {
				return fmt.Sprintf("%d%s", hi, u.name)
			}
			return fmt.Sprintf("%d%s %d%s", hi, u.name, lo, units[i+1].name)
		}
	}
	return fmt.Sprintf("%ds", t/time.Second)
}
