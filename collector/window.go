// Package collector turns Mintlify API data into Prometheus metrics.
package collector

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MaxWindowDays is the longest window ParseWindow accepts.
const MaxWindowDays = 365

// dateLayout is the API's YYYY-MM-DD date format.
const dateLayout = "2006-01-02"

// Window is a visitors date range: the last Days calendar days including
// today. Name is its canonical spelling ("7d") and the value of the window
// label.
type Window struct {
	Name string
	Days int
}

// ParseWindow parses "Nd" with N a whole number of days in 1..365. The name
// is canonicalised ("07d" becomes "7d") so that two spellings of one window
// cannot produce two label values. The error text reads well after a flag
// name prefix ("--visitors.window: ...").
func ParseWindow(s string) (Window, error) {
	digits, ok := strings.CutSuffix(s, "d")
	if !ok || digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return Window{}, fmt.Errorf("invalid window %q: want Nd, a whole number of days from 1 to %d, such as 1d, 7d or 30d", s, MaxWindowDays)
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 1 || n > MaxWindowDays {
		return Window{}, fmt.Errorf("invalid window %q: the number of days must be from 1 to %d", s, MaxWindowDays)
	}
	return Window{Name: strconv.Itoa(n) + "d", Days: n}, nil
}

// Range returns the API's dateFrom and dateTo (YYYY-MM-DD) for the window at
// now, reading the calendar in loc (nil means UTC): dateFrom is today minus
// Days-1 days and dateTo is tomorrow, because the API's dateTo is exclusive.
//
// The arithmetic is on calendar dates (time.Date normalises day offsets), not
// on multiples of 24h, so a window spanning a DST change still covers whole
// days: a day that is 23 or 25 hours long is still one day.
func (w Window) Range(now time.Time, loc *time.Location) (dateFrom, dateTo string) {
	if loc == nil {
		loc = time.UTC
	}
	y, m, d := now.In(loc).Date()
	// The date triple is taken in loc; offsetting it in UTC at noon cannot
	// hit a DST gap or fold.
	from := time.Date(y, m, d-(w.Days-1), 12, 0, 0, 0, time.UTC)
	to := time.Date(y, m, d+1, 12, 0, 0, 0, time.UTC)
	return from.Format(dateLayout), to.Format(dateLayout)
}
