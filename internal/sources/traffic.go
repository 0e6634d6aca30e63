package sources

import (
	"github.com/mintlify-exporter/mintlify_exporter/internal/visitors"
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
	*visitors.Snapshot
	totalsOnly bool
}

// Meta implements Snapshot.
func (s *TrafficSnapshot) Meta() Meta {
	return Meta{At: s.At, DateFrom: s.DateFrom, DateTo: s.DateTo, Requests: s.Requests, TotalsOnly: s.totalsOnly}
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
			one := func(c visitors.Counts, lv ...string) {
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
		family(site[0], site[1], familyFlags{additive: additive}, counts(false, true), "traffic"),
		family(siteTotal[0], siteTotal[1], familyFlags{additive: additive}, counts(false, false)),
		family(page[0], page[1], familyFlags{pages: true, additive: additive}, counts(true, true), "path", "traffic"),
		family(pageTotal[0], pageTotal[1], familyFlags{pages: true, additive: additive}, counts(true, false), "path"),
	}
}

// trafficGuess is the requests of a walk before the first: 1 for totals, a
// page of paths otherwise (the next estimate is the walk's real cost).
func trafficGuess(q Query) int { return 1 }
