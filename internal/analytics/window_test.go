package analytics

import (
	"strings"
	"testing"
	"time"
)

func TestParseWindow(t *testing.T) {
	good := map[string]Window{
		"1d":   {Name: "1d", Days: 1},
		"7d":   {Name: "7d", Days: 7},
		"30d":  {Name: "30d", Days: 30},
		"365d": {Name: "365d", Days: 365},
		"07d":  {Name: "7d", Days: 7}, // one canonical label value per window
	}
	for in, want := range good {
		got, err := ParseWindow(in)
		if err != nil || got != want {
			t.Errorf("ParseWindow(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "d", "3x", "0d", "-1d", "+1d", "1", "1.5d", "366d", "1D", " 1d", "1d ", "1w", "99999999999999999999d"} {
		if w, err := ParseWindow(in); err == nil {
			t.Errorf("ParseWindow(%q) = %+v, want an error", in, w)
		} else if !strings.Contains(err.Error(), "invalid window") {
			t.Errorf("ParseWindow(%q) error %q does not say what is wrong", in, err)
		}
	}
}

func mustLoad(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("time zone %s: %v", name, err)
	}
	return loc
}

func TestWindowRange(t *testing.T) {
	ny := mustLoad(t, "America/New_York")
	oneDay := Window{Name: "1d", Days: 1}
	tests := []struct {
		name     string
		w        Window
		now      time.Time
		loc      *time.Location
		from, to string
	}{
		// 23:30 in New York is already the next day in UTC: the time zone
		// decides which calendar day "today" is. dateTo is exclusive.
		{"1d late evening New York", oneDay, time.Date(2026, 3, 10, 23, 30, 0, 0, ny), ny, "2026-03-10", "2026-03-11"},
		{"1d same instant UTC", oneDay, time.Date(2026, 3, 10, 23, 30, 0, 0, ny), time.UTC, "2026-03-11", "2026-03-12"},
		{"1d nil location is UTC", oneDay, time.Date(2026, 3, 10, 23, 30, 0, 0, ny), nil, "2026-03-11", "2026-03-12"},
		{"1d just after midnight", oneDay, time.Date(2026, 3, 11, 0, 0, 0, 0, time.UTC), time.UTC, "2026-03-11", "2026-03-12"},
		{"1d just before midnight", oneDay, time.Date(2026, 3, 10, 23, 59, 59, 999, time.UTC), time.UTC, "2026-03-10", "2026-03-11"},
		// US DST began 2026-03-08 (that day had 23 hours). Subtracting 6×24h
		// from local midnight on 03-10 would land on 03-03 at 23:00.
		{"7d across spring forward", Window{Name: "7d", Days: 7}, time.Date(2026, 3, 10, 0, 30, 0, 0, ny), ny, "2026-03-04", "2026-03-11"},
		// DST ended 2026-11-01, a 25-hour day.
		{"1d on the 25-hour day", oneDay, time.Date(2026, 11, 1, 23, 30, 0, 0, ny), ny, "2026-11-01", "2026-11-02"},
		{"1d on the 23-hour day", oneDay, time.Date(2026, 3, 8, 0, 30, 0, 0, ny), ny, "2026-03-08", "2026-03-09"},
		{"30d across fall back", Window{Name: "30d", Days: 30}, time.Date(2026, 11, 15, 12, 0, 0, 0, ny), ny, "2026-10-17", "2026-11-16"},
		{"365d over a leap day", Window{Name: "365d", Days: 365}, time.Date(2028, 12, 31, 12, 0, 0, 0, time.UTC), time.UTC, "2028-01-02", "2029-01-01"},
		{"month and year boundary", Window{Name: "3d", Days: 3}, time.Date(2027, 1, 1, 8, 0, 0, 0, time.UTC), time.UTC, "2026-12-30", "2027-01-02"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			from, to := tc.w.Range(tc.now, tc.loc)
			if from != tc.from || to != tc.to {
				t.Errorf("Range = %s..%s, want %s..%s", from, to, tc.from, tc.to)
			}
		})
	}
}

func TestParseWindowInterval(t *testing.T) {
	w, err := ParseWindow("30d:6h")
	if err != nil || w != (Window{Name: "30d", Days: 30, Interval: 6 * time.Hour}) {
		t.Fatalf("ParseWindow(30d:6h) = %+v, %v", w, err)
	}
	if w, err := ParseWindow("07d:1d"); err != nil || w.Name != "7d" || w.Interval != 24*time.Hour {
		t.Fatalf("ParseWindow(07d:1d) = %+v, %v", w, err)
	}
	for _, bad := range []string{"30d:", "30d:0s", "30d:-1h", "30d:soon", "30d:6h:1h", ":6h"} {
		if _, err := ParseWindow(bad); err == nil {
			t.Errorf("ParseWindow(%q) accepted", bad)
		}
	}
}

// TestDayStartAndLength: local days of 23 and 25 hours across DST changes,
// and Today read in the window's zone.
func TestDayStartAndLength(t *testing.T) {
	for _, tc := range []struct {
		zone  string
		day   time.Time
		hours float64
	}{
		{"America/New_York", time.Date(2026, 3, 8, 0, 0, 0, 0, time.UTC), 23},
		{"America/New_York", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), 25},
		{"Europe/Berlin", time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC), 23},
		{"Europe/Berlin", time.Date(2026, 10, 25, 0, 0, 0, 0, time.UTC), 25},
		{"Australia/Sydney", time.Date(2026, 4, 5, 0, 0, 0, 0, time.UTC), 25},
		{"Asia/Kolkata", time.Date(2026, 3, 8, 0, 0, 0, 0, time.UTC), 24},
		{"UTC", time.Date(2026, 3, 8, 0, 0, 0, 0, time.UTC), 24},
	} {
		loc := mustLoad(t, tc.zone)
		start, end := DayStart(tc.day, loc), DayStart(AddDays(tc.day, 1), loc)
		if got := end.Sub(start).Hours(); got != tc.hours {
			t.Errorf("%s %s: %v hours, want %v", tc.zone, tc.day.Format(DateLayout), got, tc.hours)
		}
		if got := Today(start, loc); !got.Equal(tc.day) {
			t.Errorf("%s: Today(start of %s) = %s", tc.zone, tc.day.Format(DateLayout), got.Format(DateLayout))
		}
		if got := Today(end.Add(-time.Nanosecond), loc); !got.Equal(tc.day) {
			t.Errorf("%s: Today(last instant of %s) = %s", tc.zone, tc.day.Format(DateLayout), got.Format(DateLayout))
		}
	}
}
