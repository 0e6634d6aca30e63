// Package refresh decides when each project and window of visitor data is
// walked, from the analytics budget and each walk's cost in requests, and
// runs the walks on that plan (not on scrapes). It hands finished snapshots
// to the collector, which only turns them into metrics.
package refresh

import (
	"math"
	"time"
)

// Demand is one (project, window) to refresh on a schedule.
type Demand struct {
	// Cost is the requests one walk takes (pages of the API), at least 1.
	Cost int
	// MinInterval is the shortest interval wanted for it.
	MinInterval time.Duration
	// Days is the window's length. Longer windows get proportionally
	// longer intervals: a walk every k hours moves a 1d window's numbers
	// as much as a walk every 30k hours moves a 30d window's, relative to
	// what the window holds. So today's window is always the freshest.
	Days int
	// Midnight: the window's dates change at midnight, which forces one
	// walk a day on top of its interval (today's window).
	Midnight bool
}

// Intervals returns an interval per demand such that walking every demand
// once per interval spends at most perWindow requests in any window. Each
// interval is max(MinInterval, k × Days) with the smallest k (to the
// second) that fits: every demand at its MinInterval when the budget pays
// for that, else intervals stretched in proportion to the window length.
//
// A demand walked more often than once a window counts with the most walks
// one window can hold, ceil(window/interval), not the average: walks that
// line up must still fit, or today's window would start late. Rarer walks
// count with their average, as they rarely meet.
func Intervals(perWindow float64, window time.Duration, ds []Demand) []time.Duration {
	out := make([]time.Duration, len(ds))
	if len(ds) == 0 {
		return out
	}
	w := window.Seconds()
	spend := func(k float64) float64 { // requests per window with factor k seconds per day of window
		var s float64
		for _, d := range ds {
			t := math.Max(math.Max(d.MinInterval.Seconds(), k*float64(d.Days)), 1)
			walks := w / t
			if t < w {
				walks = math.Ceil(walks)
				if d.Midnight {
					walks++ // the hour around midnight holds one more
				}
			} else if d.Midnight {
				walks += w / (24 * 3600)
			}
			s += float64(max(d.Cost, 1)) * walks
		}
		return s
	}
	k := 0.0
	if perWindow <= 0 {
		perWindow = 1e-9
	}
	if spend(0) > perWindow {
		lo, hi := 0.0, 1.0
		for spend(hi) > perWindow {
			hi *= 2
		}
		for hi-lo > 0.5 {
			mid := (lo + hi) / 2
			if spend(mid) > perWindow {
				lo = mid
			} else {
				hi = mid
			}
		}
		k = math.Ceil(hi)
	}
	for i, d := range ds {
		t := math.Max(d.MinInterval.Seconds(), k*float64(d.Days))
		out[i] = time.Duration(math.Ceil(t)) * time.Second
	}
	return out
}

// Spend is what walking each demand once per its interval costs per window.
func Spend(window time.Duration, ds []Demand, intervals []time.Duration) float64 {
	var s float64
	for i, d := range ds {
		s += float64(max(d.Cost, 1)) * window.Seconds() / intervals[i].Seconds()
	}
	return s
}

// Plannable is the part of a budget that scheduled walks may plan on: a
// tenth (at least one request, at most half) stays free for retries and for
// a site that grew by a page since its last walk.
func Plannable(limit int) float64 {
	return max(float64(limit-max(1, limit/10)), float64(limit)/2)
}
