package history

import (
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/refresh"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// Backfilled reports whether the past days of source def can be
// backfilled: visitors, whose every window is walked (unique visitors do
// not add up across days), and the sources whose counts add up across days
// (views, searches, the assistant), whose days alone are walked. Feedback
// by page and feedback items are not: their lists and triage states are
// the present's, not a past day's.
func Backfilled(def *sources.Def) bool {
	return def.BackfillWindows || additive(def)
}

// BackfilledNames lists the sources Backfilled accepts, in registry order.
func BackfilledNames() []string {
	var out []string
	for _, def := range sources.All() {
		if Backfilled(def) {
			out = append(out, def.Name)
		}
	}
	return out
}

func additive(def *sources.Def) bool {
	return slices.ContainsFunc(def.Families, func(f *sources.Family) bool { return f.Additive })
}

// day1 is the window of one day.
var day1 = analytics.Window{Name: "1d", Days: 1}

// walkedWindows are the windows of spec walked per day: the day itself
// and, for a source whose counts do not add up (visitors), every other
// window of the spec, shortest first. A window of an additive source is
// the sum of its days: nothing to fetch.
func walkedWindows(def *sources.Def, spec sources.Spec) []analytics.Window {
	out := []analytics.Window{day1}
	if additive(def) {
		return out
	}
	for _, w := range spec.Windows {
		if !slices.ContainsFunc(out, func(o analytics.Window) bool { return o.Name == w.Name }) {
			out = append(out, analytics.Window{Name: w.Name, Days: w.Days})
		}
	}
	slices.SortFunc(out, func(a, b analytics.Window) int { return a.Days - b.Days })
	return out
}

// job is one walk: a project's source over a window ending on one day.
type job struct {
	project *refresh.Project
	def     *sources.Def
	spec    sources.Spec
	window  analytics.Window
	day     time.Time
}

func (j job) file(dir string) string {
	return filepath.Join(dir, url.PathEscape(j.project.ID), j.def.Name, j.window.Name, j.day.Format(analytics.DateLayout)+".json")
}

// kind is what walks of the same cost share: a project's source and window.
type kind struct{ project, source, window string }

func (j job) kind() kind { return kind{j.project.ID, j.def.Name, j.window.Name} }

// sampleTime is the instant the job's samples are stamped with.
func (j job) sampleTime() time.Time { return SampleTime(j.day, j.window, j.project.Loc()) }

// query is the job's walk: the window ending on its day.
func (j job) query(totalsOnly bool) sources.Query {
	from, to := j.window.RangeEndingOn(j.day)
	return sources.Query{Project: j.project.ID, DateFrom: from, DateTo: to, TotalsOnly: totalsOnly}
}

func (j job) String() string {
	return fmt.Sprintf("%s %s %s ending %s", j.project.ID, j.def.Name, j.window.Name, j.day.Format(analytics.DateLayout))
}

// jobs lists every walk, day by day from the first; within a day by
// project, source (registry order) and window (shortest first).
func (c *Config) jobs() ([]job, error) {
	type walks struct {
		def     *sources.Def
		spec    sources.Spec
		windows []analytics.Window
	}
	per := make([][]walks, len(c.Projects))
	used := map[string]bool{}
	for i := range c.Projects {
		specs := c.Projects[i].Specs()
		for _, def := range sources.All() {
			k := slices.IndexFunc(specs, func(s sources.Spec) bool { return s.Name == def.Name })
			if k < 0 || !Backfilled(def) || len(c.Sources) > 0 && !slices.Contains(c.Sources, def.Name) {
				continue
			}
			spec := specs[k]
			per[i] = append(per[i], walks{def, spec, walkedWindows(def, spec)})
			used[def.Name] = true
		}
	}
	for _, name := range c.Sources {
		if !used[name] {
			return nil, fmt.Errorf("--backfill.source: %s is not a source of any project backfilled (configure it for the project: sources: in the file, --analytics.source with flags)", name)
		}
	}
	if len(used) == 0 {
		return nil, fmt.Errorf("backfill: no project has a source whose days can be backfilled (%s)", strings.Join(BackfilledNames(), ", "))
	}
	var out []job
	for day := c.From; !day.After(c.To); day = analytics.AddDays(day, 1) {
		for i := range c.Projects {
			for _, w := range per[i] {
				for _, win := range w.windows {
					out = append(out, job{project: &c.Projects[i], def: w.def, spec: w.spec, window: win, day: day})
				}
			}
		}
	}
	return out, nil
}
