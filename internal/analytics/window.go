// Package analytics holds what the configuration and every analytics source
// share, as plain types (a leaf: it imports nothing of this module):
// windows of calendar days in a time zone, path policies, projects, the
// sources' declarations (SourceInfo) and a project's sources (SourceSpec),
// and the traffic snapshot, an API result reduced to the paths exported.
package analytics

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// MaxWindowDays is the longest window ParseWindow accepts.
const MaxWindowDays = 365

// DateLayout is the API's YYYY-MM-DD date format.
const DateLayout = "2006-01-02"

// Window is a visitors date range: the last Days calendar days including
// today. Name is its canonical spelling ("7d") and the value of the window
// label. Interval, when set, is the shortest time between two refreshes of
// the window (0 = the exporter's shortest interval, --analytics.min-interval).
type Window struct {
	Name     string
	Days     int
	Interval time.Duration
}

// ParseWindow parses "Nd" or "Nd:INTERVAL", N a whole number of days in
// 1..365 and INTERVAL a Prometheus duration such as 6h. The name is
// canonicalised ("07d" becomes "7d") so that two spellings of one window
// cannot produce two label values. The error text reads well after a flag
// name prefix ("--analytics.window: ...").
func ParseWindow(s string) (Window, error) {
	spec, interval, hasInterval := strings.Cut(s, ":")
	digits, ok := strings.CutSuffix(spec, "d")
	if !ok || digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return Window{}, fmt.Errorf("invalid window %q: want Nd or Nd:INTERVAL, N a whole number of days from 1 to %d, such as 1d, 7d or 30d:6h", s, MaxWindowDays)
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 1 || n > MaxWindowDays {
		return Window{}, fmt.Errorf("invalid window %q: the number of days must be from 1 to %d", s, MaxWindowDays)
	}
	w := Window{Name: strconv.Itoa(n) + "d", Days: n}
	if hasInterval {
		d, err := model.ParseDuration(interval)
		if err != nil || d <= 0 {
			return Window{}, fmt.Errorf("invalid window %q: the refresh interval after the colon must be a positive duration such as 30m or 6h", s)
		}
		w.Interval = time.Duration(d)
	}
	return w, nil
}

// Today is the calendar date of now in loc (nil means UTC), as midnight UTC
// of that date: a plain date value that day arithmetic cannot shift.
func Today(now time.Time, loc *time.Location) time.Time {
	if loc == nil {
		loc = time.UTC
	}
	y, m, d := now.In(loc).Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// AddDays moves a date value by n calendar days.
func AddDays(day time.Time, n int) time.Time { return day.AddDate(0, 0, n) }

// Range returns the API's dateFrom and dateTo (YYYY-MM-DD) for the window at
// now, reading the calendar in loc (nil means UTC): dateFrom is today minus
// Days-1 days and dateTo is tomorrow, because the API's dateTo is exclusive.
func (w Window) Range(now time.Time, loc *time.Location) (dateFrom, dateTo string) {
	return w.RangeEndingOn(Today(now, loc))
}

// RangeEndingOn returns dateFrom and dateTo of the window whose last day is
// the date value day. The arithmetic is on calendar dates, not on
// multiples of 24h, so a window spanning a DST change still covers whole
// days: a day that is 23 or 25 hours long is still one day.
func (w Window) RangeEndingOn(day time.Time) (dateFrom, dateTo string) {
	return AddDays(day, -(w.Days - 1)).Format(DateLayout), AddDays(day, 1).Format(DateLayout)
}

// DayStart is the instant the date value day begins in loc: local midnight,
// or the first instant after it where a DST change skips midnight.
func DayStart(day time.Time, loc *time.Location) time.Time {
	if loc == nil {
		loc = time.UTC
	}
	return time.Date(day.Year(), day.Month(), day.Day(), 0, 0, 0, 0, loc)
}
