package refresh

import (
	"slices"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

// TestDayRollover: when the day changes, the 1d window's dates change, so
// it is walked at once, inside its interval. A longer window keeps its
// plan: it is served with the old dates until its planned walk.
func TestDayRollover(t *testing.T) {
	start := time.Date(2026, 3, 10, 23, 58, 0, 0, time.UTC)
	h := newHarness(t, harnessOptions{now: start,
		fake: fakeapi.Options{Paths: 20}, cfg: planConfig{Windows: []analytics.Window{day1, days7}, Config: Config{MinInterval: time.Hour}}})
	h.refreshDue()
	h.clock.Advance(time.Minute)
	h.refreshDue()
	if h.requests() != 2 {
		t.Fatalf("%d requests before midnight, want 2 (one per window)", h.requests())
	}
	h.clock.Advance(2 * time.Minute)
	h.refreshDue()
	qs := h.queryDates(0)
	if len(qs) != 3 {
		t.Fatalf("%d requests after midnight, want 3 (the 1d window only)", len(qs))
	}
	if qs[2] != "2026-03-11..2026-03-12" {
		t.Errorf("after midnight the 1d window asked for %s", qs[2])
	}
	for _, w := range []string{"1d", "7d"} {
		if v := h.view("docs", w); v.Data == nil || len(traffic(t, v).Paths) != 20 {
			t.Errorf("%s not served after midnight (1d refreshed, 7d still served)", w)
		}
	}
	if v := h.view("docs", "1d"); v.Data.Meta().DateFrom != "2026-03-11" {
		t.Errorf("after midnight 1d serves the snapshot from %s", v.Data.Meta().DateFrom)
	}
	if v := h.view("docs", "7d"); !v.LastSuccess.Equal(start) {
		t.Errorf("7d last walked at %s: it was walked before its planned interval", v.LastSuccess)
	}
	// The 7d window's planned walk, an hour after its last.
	h.clock.Set(time.Date(2026, 3, 11, 0, 58, 0, 0, time.UTC))
	h.refreshDue()
	var sevenDay []string
	for _, q := range h.queryDates(3) {
		if q != "2026-03-11..2026-03-12" {
			sevenDay = append(sevenDay, q)
		}
	}
	if want := []string{"2026-03-05..2026-03-12"}; !slices.Equal(sevenDay, want) {
		t.Errorf("7d queries after its interval %q, want %q", sevenDay, want)
	}
}

// TestDayRolloverWithFailedWalk: when the first walk after midnight fails,
// yesterday's full day must not be served as today's "1d"; the view stays
// and shows the failure.
func TestDayRolloverWithFailedWalk(t *testing.T) {
	h := newHarness(t, harnessOptions{now: time.Date(2026, 3, 10, 23, 58, 0, 0, time.UTC),
		fake: fakeapi.Options{Paths: 20}, cfg: planConfig{Config: Config{MinInterval: time.Hour}}})
	h.refreshDue()
	lastGood := h.view("docs", "1d").LastSuccess
	h.fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Status: 500})
	h.clock.Advance(3 * time.Minute)
	h.refreshDue()
	if h.requests() != 2 {
		t.Fatalf("%d requests, want 2: the 1d window was not walked after midnight", h.requests())
	}
	v := h.view("docs", "1d")
	if v.Data != nil {
		t.Errorf("yesterday's snapshot (%s..%s) served as 1d after midnight", v.Data.Meta().DateFrom, v.Data.Meta().DateTo)
	}
	if v.OK || !v.LastSuccess.Equal(lastGood) {
		t.Errorf("ok %v, last success %s; want false and the last good %s", v.OK, v.LastSuccess, lastGood)
	}
	h.fake.ClearFaults()
	h.clock.Advance(time.Minute) // past the retry interval
	h.refreshDue()
	if v := h.view("docs", "1d"); v.Data == nil || len(traffic(t, v).Paths) != 20 {
		t.Error("1d not served after recovery")
	}
}

// TestFinalDay: the finished day is walked once more FinalDayDelay after
// midnight and served as window="yesterday" during the first hour of the
// day only, with the API's settled numbers for that day.
func TestFinalDay(t *testing.T) {
	h := newHarness(t, harnessOptions{now: time.Date(2026, 3, 10, 23, 50, 0, 0, time.UTC),
		fake: fakeapi.Options{Paths: 20}, finalDay: true, cfg: planConfig{Config: Config{FinalDayDelay: 5 * time.Minute}}})
	h.refreshDue()
	if h.requests() != 1 {
		t.Fatalf("%d requests at 23:50, want 1 (the 1d window; the final day is walked after midnight)", h.requests())
	}
	if _, ok := h.findView("docs", FinalDayWindow); ok {
		t.Error("window=yesterday in the views at 23:50")
	}

	h.clock.Set(time.Date(2026, 3, 11, 0, 1, 0, 0, time.UTC)) // before the delay
	h.refreshDue()
	if h.requests() != 2 {
		t.Fatalf("%d requests at 00:01, want 2 (the 1d window's new day only)", h.requests())
	}
	if y := h.view("docs", FinalDayWindow); y.OK || y.Data != nil {
		t.Errorf("yesterday before its walk: ok %v, data %v; want false, none", y.OK, y.Data != nil)
	}

	h.clock.Set(time.Date(2026, 3, 11, 0, 5, 0, 0, time.UTC))
	h.refreshDue()
	qs := h.queryDates(0)
	if len(qs) != 3 {
		t.Fatalf("%d requests at 00:05, want 3", len(qs))
	}
	if qs[2] != "2026-03-10..2026-03-11" {
		t.Errorf("the final-day walk asked for %s, want 2026-03-10..2026-03-11", qs[2])
	}
	_, _, total := h.fake.DayCounts("docs", time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC), h.clock.Now())
	y := h.view("docs", FinalDayWindow)
	if !y.OK {
		t.Error("yesterday's walk did not succeed")
	}
	if s := traffic(t, y); s.Site.Total != float64(total) || len(s.Paths) != 20 {
		t.Errorf("yesterday: site total %v, %d paths; want the settled %d, 20", s.Site.Total, len(s.Paths), total)
	}
	if y.Interval != 0 {
		t.Errorf("the final day, walked once a day, has a planned interval %s", y.Interval)
	}
	if v := h.view("docs", "1d"); v.Interval <= 0 || v.Data == nil {
		t.Errorf("1d: interval %s, data %v", v.Interval, v.Data != nil)
	}

	h.clock.Set(time.Date(2026, 3, 11, 0, 59, 0, 0, time.UTC))
	h.refreshDue()
	if got := h.requests(); got != 4 { // the 1d window's planned walk only
		t.Errorf("%d requests at 00:59, want 4 (yesterday is walked once)", got)
	}
	if h.view("docs", FinalDayWindow).Data == nil {
		t.Error("yesterday not served at 00:59")
	}

	h.clock.Set(time.Date(2026, 3, 11, 1, 0, 0, 0, time.UTC))
	for _, v := range h.sched.Views() {
		if v.Window == FinalDayWindow {
			t.Errorf("%s/%s still has window=yesterday at 01:00", v.Source, v.Scope)
		}
	}
}
