package refresh

import (
	"testing"
	"time"
)

func TestIntervalsAtMinimumWhenAffordable(t *testing.T) {
	ds := []Demand{{Cost: 1, MinInterval: 5 * time.Minute, Days: 1}, {Cost: 1, MinInterval: 5 * time.Minute, Days: 7}}
	got := Intervals(54, time.Hour, ds)
	for i, d := range got {
		if d != 5*time.Minute {
			t.Errorf("interval %d = %s, want the minimum 5m (24 requests/h fit 54)", i, d)
		}
	}
}

// TestIntervalsStretchInProportionToDays: when the budget is short, every
// window is stretched, longer windows by their length, and the spend fits.
func TestIntervalsStretchInProportionToDays(t *testing.T) {
	ds := []Demand{
		{Cost: 10, MinInterval: 5 * time.Minute, Days: 1},
		{Cost: 10, MinInterval: 5 * time.Minute, Days: 7},
		{Cost: 10, MinInterval: 5 * time.Minute, Days: 30},
	}
	got := Intervals(54, time.Hour, ds)
	// 1d fits 4 walks in an hour (every 15m): 40 + 7d and 30d on average,
	// then what the common factor left is spent on the next in line.
	if spend := Spend(time.Hour, ds, got); spend > 54 || spend < 0.85*54 {
		t.Errorf("spend %.2f requests/h on average, want 85%% to 100%% of 54", spend)
	}
	if got[0] <= 5*time.Minute || got[1] <= got[0] || got[2] <= got[1] || got[1] > 7*got[0] || got[2] > 30*got[0] {
		t.Errorf("intervals %v: want 1d stretched past 5m, then 7d and 30d longer, at most 7× and 30× of it", got)
	}
	// 2,500 paths, three windows at 60/h: the example of docs/analytics-budget.md.
	if got[0] != 15*time.Minute {
		t.Errorf("1d of a 2,500-path site with three windows every %s, want 15 min", got[0])
	}
}

func TestIntervalsRespectEachMinimum(t *testing.T) {
	ds := []Demand{{Cost: 4, MinInterval: 5 * time.Minute, Days: 1}, {Cost: 4, MinInterval: 6 * time.Hour, Days: 30}}
	got := Intervals(54, time.Hour, ds)
	if got[0] != 5*time.Minute || got[1] != 6*time.Hour {
		t.Errorf("intervals %v, want [5m 6h]", got)
	}
}

func TestPlannableLeavesHeadroom(t *testing.T) {
	for limit, want := range map[int]float64{1: 0.5, 2: 1, 5: 4, 60: 54, 100: 90} {
		if got := Plannable(limit); got != want {
			t.Errorf("Plannable(%d) = %v, want %v", limit, got, want)
		}
	}
}
