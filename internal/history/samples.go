package history

import (
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/refresh"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// A backfilled day D is written as the live exporter shows it once D is
// over: the settled numbers of D as window="yesterday", at the first
// instant of D+1 (local midnight). That is a value of a whole day, like
// every live "yesterday" sample, so comparisons of whole days (the Daily
// panels, the week-over-week rules over last_over_time(...[1d])) read
// backfilled and live days alike, and no backfilled sample poses as the
// intra-day "today so far" of window="1d". Every source's day is written
// so, views, searches and conversations like visitors. An Nd window (of
// visitors) is written as the Nd value ending on D, at D's last second,
// where the live Nd series ends the day.

// SampleTime is the instant a job's numbers are stamped with (see above).
// Days of 23 or 25 hours end at their own local midnight.
func SampleTime(day time.Time, window analytics.Window, loc *time.Location) time.Time {
	next := analytics.DayStart(analytics.AddDays(day, 1), loc)
	if window.Days == 1 {
		return next
	}
	return next.Add(-time.Second)
}

// windowLabel is the window label of a job's samples.
func windowLabel(w analytics.Window) string {
	if w.Days == 1 {
		return refresh.FinalDayWindow
	}
	return w.Name
}

// family is one family of a source, written from that source's walks.
type family struct {
	*sources.Family
	def *sources.Def
}

// families are the families the walks may hold, source by source in the
// order of jobs, each once (those of a project rather than a window are
// no day's: see record).
func families(jobs []job) []family {
	var out []family
	seen := map[*sources.Def]bool{}
	for _, j := range jobs {
		if seen[j.def] {
			continue
		}
		seen[j.def] = true
		for _, f := range j.def.Families {
			if !f.PerProject {
				out = append(out, family{f, j.def})
			}
		}
	}
	return out
}

// eachSample calls emit for every sample of family f in jobs (in their
// order: each series' samples ascend), with the extra labels' values
// first, then the family's own label values. ms is the Unix time in
// milliseconds.
func (c *Config) eachSample(f family, jobs []job, emit func(ms int64, v float64, lv []string)) error {
	lv := make([]string, 0, len(c.Labels)+len(f.Labels))
	for _, l := range c.Labels {
		lv = append(lv, l.Value)
	}
	for _, j := range jobs {
		if j.def != f.def {
			continue
		}
		file := j.file(c.StateDir)
		d, err := readDay(file)
		if err != nil {
			return err
		}
		r, err := d.family(f.Name, file)
		if err != nil {
			return err
		}
		ms := j.sampleTime().UnixMilli()
		lv = append(lv[:len(c.Labels)], j.project.ID, windowLabel(j.window))
		for i, v := range r.Values {
			emit(ms, v, append(lv[:len(c.Labels)+2], r.Labels[i]...))
		}
	}
	return nil
}

// labelNames are the extra labels' names, then family f's.
func (c *Config) labelNames(f family) []string {
	out := make([]string, 0, len(c.Labels)+len(f.Labels))
	for _, l := range c.Labels {
		out = append(out, l.Name)
	}
	return append(out, f.Labels...)
}
