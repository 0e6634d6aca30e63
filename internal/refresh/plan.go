// Package refresh decides when each project, analytics source and window is
// walked, from the analytics budget and each walk's cost in requests, and
// runs the walks on that plan (not on scrapes). It hands finished snapshots
// to the collector, which only turns them into metrics.
package refresh

import (
	"cmp"
	"math"
	"slices"
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
	// Weight stretches the interval further (0 = 1): slow-moving sources
	// (feedback, searches) are walked less often than page traffic of the
	// same window.
	Weight float64
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
	at := make([]time.Duration, len(ds))
	spend := func(k float64) float64 { // requests per window with factor k seconds per unit of weight
		for i, d := range ds {
			at[i] = time.Duration(math.Max(d.MinInterval.Seconds(), k*d.weight()) * float64(time.Second))
		}
		return spendAt(window, ds, at)
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
		t := math.Max(d.MinInterval.Seconds(), k*d.weight())
		out[i] = time.Duration(math.Ceil(t)) * time.Second
	}
	fill(fillShare*perWindow, window, ds, out)
	return out
}

// fillShare is how much of the budget the fill may plan: walks planned on
// averages (rarer than once a window) may bunch, so a little is left for
// them to run late without starving the next.
const fillShare = 0.97

// weight is the demand's share of the plan's factor k.
func (d Demand) weight() float64 {
	if d.Weight <= 0 {
		return float64(d.Days)
	}
	return float64(d.Days) * d.Weight
}

// fill spends what the common factor left over: a factor that fits leaves
// up to a walk's worth of every demand unused (walk counts are whole), so
// each demand in turn, the most important (smallest weight) first, is
// walked as much more often as the budget still pays for.
func fill(perWindow float64, window time.Duration, ds []Demand, out []time.Duration) {
	order := make([]int, len(ds))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(ds[a].weight(), ds[b].weight()) })
	for _, i := range order {
		lo := max(ds[i].MinInterval, time.Second)
		if out[i] <= lo {
			continue
		}
		orig := out[i]
		// The shortest interval that still fits: spend falls as the
		// interval grows, so bisect between lo and the current one.
		hi := orig
		for hi-lo > time.Second {
			mid := (lo + hi) / 2
			out[i] = mid
			if spendAt(window, ds, out) > perWindow {
				lo = mid
			} else {
				hi = mid
			}
		}
		out[i] = hi
		if spendAt(window, ds, out) > perWindow {
			out[i] = orig
		}
	}
}

// spendAt is what walking each demand at intervals costs in its worst
// window, counted as Intervals counts it.
func spendAt(window time.Duration, ds []Demand, intervals []time.Duration) float64 {
	w := window.Seconds()
	var s float64
	for i, d := range ds {
		t := math.Max(intervals[i].Seconds(), 1)
		walks := w / t
		if t < w {
			walks = math.Ceil(walks)
			if d.Midnight {
				walks++
			}
		} else if d.Midnight {
			walks += w / (24 * 3600)
		}
		s += float64(max(d.Cost, 1)) * walks
	}
	return s
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
