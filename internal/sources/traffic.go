package sources

import (
	"fmt"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
)

// Label values of the traffic label.
const (
	TrafficHuman = "human"
	TrafficAI    = "ai"
)

// TrafficSnapshot is a walk of visitors or views: site counts and paths by
// human and AI traffic, with the API's own totals. It wraps the visitors
// snapshot, its path policy and ranking.
type TrafficSnapshot struct {
	*analytics.Snapshot
	totalsOnly bool
	// skipped is how many rows the walk could not read; totalsSkipped: the
	// site totals were among them.
	skipped       int
	totalsSkipped bool
}

// Meta implements Snapshot.
func (s *TrafficSnapshot) Meta() Meta {
	return Meta{At: s.At, DateFrom: s.DateFrom, DateTo: s.DateTo, Requests: s.Requests, TotalsOnly: s.totalsOnly, Skipped: s.skipped, TotalsSkipped: s.totalsSkipped}
}

// trafficFamilies are the four families of visitors or views: site by
// traffic, site total, page by traffic, page total.
func trafficFamilies(additive bool, site, siteTotal, page, pageTotal [2]string) []*Family {
	counts := func(perPage, split bool) func(Snapshot, string, string, Emit) {
		return func(snap Snapshot, project, window string, emit Emit) {
			s, ok := snap.(*TrafficSnapshot)
			if !ok {
				return
			}
			one := func(c analytics.Counts, lv ...string) {
				if split {
					emit(c.Human, append(lv, TrafficHuman)...)
					emit(c.AI, append(lv, TrafficAI)...)
					return
				}
				emit(c.Total, lv...)
			}
			if !perPage {
				one(s.Site, project, window)
				return
			}
			for i := range s.Paths {
				p := &s.Paths[i]
				one(p.Counts, project, window, p.Path)
			}
		}
	}
	return []*Family{
		family(site[0], site[1], familyFlags{additive: additive, totals: true}, counts(false, true), "traffic"),
		family(siteTotal[0], siteTotal[1], familyFlags{additive: additive, totals: true}, counts(false, false)),
		family(page[0], page[1], familyFlags{pages: true, additive: additive}, counts(true, true), "path", "traffic"),
		family(pageTotal[0], pageTotal[1], familyFlags{pages: true, additive: additive}, counts(true, false), "path"),
	}
}

// trafficGuess is the requests of a walk before the first: 1 for totals, a
// page of paths otherwise (the next estimate is the walk's real cost).
func trafficGuess(q Query) int { return 1 }

// kindTraffic is the wire kind of TrafficSnapshot.
var kindTraffic = wireKind("traffic", decodeData[wireTraffic])

func (v *TrafficSnapshot) toWire() (string, wireData) {
	if v == nil || v.Snapshot == nil {
		return "", nil
	}
	w := &wireTraffic{
		Meta:    metaToWire(v.Meta()),
		Site:    wireCounts(v.Site),
		Dropped: v.Dropped,
	}
	// Nil paths (a totals-only walk) stay null, and an empty walk stays
	// []: the collector exports paths_dropped only for a walk of paths.
	if v.Paths != nil {
		w.Paths = make([]wirePath, len(v.Paths))
		for i, p := range v.Paths {
			w.Paths[i] = wirePath{Path: p.Path, Human: p.Human, AI: p.AI, Total: p.Total}
		}
	}
	return kindTraffic, w
}

// wireCounts are analytics.Counts.
type wireCounts struct {
	Human float64 `json:"human"`
	AI    float64 `json:"ai"`
	Total float64 `json:"total"`
}

type wirePath struct {
	Path  string  `json:"path"`
	Human float64 `json:"human"`
	AI    float64 `json:"ai"`
	Total float64 `json:"total"`
}

// wireTraffic is a TrafficSnapshot (visitors or views).
type wireTraffic struct {
	Meta wireMeta   `json:"meta"`
	Site wireCounts `json:"site"`
	// Paths: null in a totals-only snapshot, [] in a walk that kept none.
	Paths   wirePaths `json:"paths"`
	Dropped int       `json:"dropped"`
}

func (w *wireTraffic) validate() error {
	if err := w.Meta.validate(len(w.Paths)); err != nil {
		return err
	}
	if err := checkValues(w.Site.Human, w.Site.AI, w.Site.Total); err != nil {
		return fmt.Errorf("site: %w", err)
	}
	if w.Dropped < 0 {
		return fmt.Errorf("negative dropped paths (%d)", w.Dropped)
	}
	seen := make(uniqueLabels, len(w.Paths))
	for i, p := range w.Paths {
		if err := seen.add("path", i, p.Path); err != nil {
			return err
		}
		if err := checkValues(p.Human, p.AI, p.Total); err != nil {
			return fmt.Errorf("path %d: %w", i+1, err)
		}
	}
	return nil
}

func (w *wireTraffic) snapshot() Snapshot {
	m := w.Meta.meta()
	s := &analytics.Snapshot{At: m.At, DateFrom: m.DateFrom, DateTo: m.DateTo, Site: analytics.Counts(w.Site), Dropped: w.Dropped, Requests: m.Requests}
	if w.Paths != nil {
		s.Paths = make([]analytics.PathCounts, len(w.Paths))
		for i, p := range w.Paths {
			s.Paths[i] = analytics.PathCounts{Path: p.Path, Counts: analytics.Counts{Human: p.Human, AI: p.AI, Total: p.Total}}
		}
	}
	return &TrafficSnapshot{Snapshot: s, totalsOnly: m.TotalsOnly, skipped: m.Skipped, totalsSkipped: m.TotalsSkipped}
}

// totalsOnlyTraffic is a snapshot of site totals without paths.
func totalsOnlyTraffic(totals apiclient.VisitorCounts, from, to string, at time.Time) *analytics.Snapshot {
	return &analytics.Snapshot{At: at, DateFrom: from, DateTo: to, Site: countsOf(totals), Requests: 1}
}

func countsOf(c apiclient.VisitorCounts) analytics.Counts {
	return analytics.Counts{Human: float64(c.Human), AI: float64(c.AI), Total: float64(c.Total)}
}
