package fakeapi

import (
	"cmp"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Views is /views: content view events per page.
var Views = analyticsRoute("views", "views", (*Server).handleViews)

// PageViews are the view events of one page.
type PageViews struct {
	Path string
	Traffic
}

type viewsBody struct {
	Totals  counts    `json:"totals"`
	Views   []pageRow `json:"views"`
	HasMore bool      `json:"hasMore"`
}

// viewsDay is the view events of every page of a project on one day, by
// page rank, as of now: a page is viewed several times per visitor, AI
// agents read a share that varies by page, and today grows with the share
// of the day that has passed.
func (s *Server) viewsDay(project string, day, now time.Time) []Traffic {
	return s.memoize(s.dayKey("views", project, day, now), func() any {
		n := s.paths(project)
		scale := dayWeight(project, day) * s.dayElapsed(day, now)
		seed := hash(project, "views")
		out := make([]Traffic, n)
		for i := range n {
			base := 9000 / math.Pow(float64(i+1), 0.9) * scale
			aiShare := 0.05 + 0.5*float64((seed>>uint(i%32))&7)/7
			h, a := soFar(base*(1-aiShare)), soFar(base*aiShare)
			out[i] = Traffic{Human: h, AI: a, Total: h + a}
		}
		return out
	}).([]Traffic)
}

// Views is what the API answers for the view events of the days that
// begin in [from, to), as of now: site totals and every page with views,
// ordered by total descending, then path. Views are events: every number
// is the sum of its days (DayViews).
func (s *Server) Views(project string, from, to, now time.Time) (site Traffic, pages []PageViews) {
	// Memoized by the minute, as its days are (viewsDay): a walk reads a
	// range page by page, and summing the days and naming and sorting every
	// page again for each page was most of the fake's time. Callers only
	// read the pages.
	key := "viewsrange\x00" + project + "\x00" + from.Format(time.RFC3339) + "\x00" + to.Format(time.RFC3339) + "\x00" + strconv.FormatInt(now.Unix()/60, 10)
	v := s.memoize(key, func() any {
		site, pages := s.sumViews(project, from, to, now)
		return viewsRange{site, pages}
	}).(viewsRange)
	return v.site, v.pages
}

// viewsRange is a memoized answer of Views.
type viewsRange struct {
	site  Traffic
	pages []PageViews
}

// sumViews is Views, computed.
func (s *Server) sumViews(project string, from, to, now time.Time) (site Traffic, pages []PageViews) {
	var sum []Traffic
	for _, d := range s.days(from, to) {
		day := s.viewsDay(project, d, now)
		if sum == nil {
			sum = make([]Traffic, len(day))
		}
		for i, c := range day {
			sum[i].Human += c.Human
			sum[i].AI += c.AI
			sum[i].Total += c.Total
		}
	}
	for i, c := range sum {
		site.Human += c.Human
		site.AI += c.AI
		site.Total += c.Total
		if c.Total > 0 {
			pages = append(pages, PageViews{Path: pathName(i), Traffic: c})
		}
	}
	slices.SortFunc(pages, func(a, b PageViews) int {
		if c := cmp.Compare(b.Total, a.Total); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	})
	return site, pages
}

// DayViews is the site's view events of one day (a date value) as of now.
func (s *Server) DayViews(project string, day, now time.Time) Traffic {
	site, _ := s.Views(project, s.dayStart(day), s.dayStart(day.AddDate(0, 0, 1)), now)
	return site
}

func (s *Server) handleViews(w http.ResponseWriter, r *http.Request, project string, f Fault) {
	q := r.URL.Query()
	limit, ok := parseLimit(w, q, 50, 250)
	if !ok {
		return
	}
	offset, ok := parseOffset(w, q)
	if !ok {
		return
	}
	var c cursorQuery
	if !s.parseRangeOrAnswer(w, q, &c) {
		return
	}
	site, pages := s.Views(project, c.from, c.to, c.now)
	lo, hi, more := pageOf(len(pages), offset, limit)
	body := viewsBody{Totals: counts(site), Views: make([]pageRow, 0, hi-lo), HasMore: more}
	for _, p := range pages[lo:hi] {
		body.Views = append(body.Views, pageRow{Path: p.Path, counts: counts(p.Traffic)})
	}
	if f.EndlessHasMore {
		for i := len(body.Views); i < limit; i++ {
			body.Views = append(body.Views, pageRow{Path: fmt.Sprintf("/endless/%d", offset+i), counts: counts{Human: 1, AI: 1, Total: 2}})
		}
		body.HasMore = true
	}
	if f.DuplicatePath && offset >= limit && offset-limit < len(pages) {
		dup := pages[offset-limit]
		body.Views = append([]pageRow{{Path: dup.Path, counts: counts{Human: dup.Human / 2, AI: dup.AI / 2, Total: dup.Total/2 + 1}}}, body.Views...)
	}
	if f.NegativeCounts && len(body.Views) > 0 {
		body.Views[0].AI = -3
	}
	if f.NegativeTotals {
		body.Totals.Human = -1
	}
	writeJSON(w, http.StatusOK, body)
}
