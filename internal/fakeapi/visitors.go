package fakeapi

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Visitors is /visitors: unique visitors per page.
var Visitors = analyticsRoute("visitors", "visitors", (*Server).handleVisitors)

type counts struct {
	Human int64 `json:"human"`
	AI    int64 `json:"ai"`
	Total int64 `json:"total"`
}

type pageRow struct {
	Path string `json:"path"`
	counts
}

type visitorsBody struct {
	Totals   counts    `json:"totals"`
	Visitors []pageRow `json:"visitors"`
	HasMore  bool      `json:"hasMore"`
}

var sections = []string{"guides", "api-reference", "concepts", "integrations", "changelog", "sdks"}

// pathName makes the i-th most visited path of a site.
func pathName(i int) string {
	switch i {
	case 0:
		return "/"
	case 1:
		return "/quickstart"
	case 2:
		return "/installation"
	}
	if names := pathNames(); i < len(names) {
		return names[i]
	}
	return fmt.Sprintf("/%s/page-%d", sections[i%len(sections)], i)
}

// pathNames are the first pages' names, named once: every walk of a fake
// site names its pages again, and fmt.Sprintf was a tenth of the time of
// the tests that simulate a day of walks.
var pathNames = sync.OnceValue(func() []string {
	names := make([]string, 12_000)
	for i := range names {
		names[i] = fmt.Sprintf("/%s/page-%d", sections[i%len(sections)], i)
	}
	return names
})

// dedupe models overlap between human and AI visitors: the deduplicated
// total is at least the larger count and less than the sum.
func dedupe(h, a int64) int64 {
	return max(h, a) + min(h, a)*9/10
}

func hash(parts ...string) uint64 {
	f := fnv.New64a()
	for _, p := range parts {
		_, _ = f.Write([]byte(p))
		_, _ = f.Write([]byte{0})
	}
	return f.Sum64()
}

// siteRows builds every row of a project for the days [from, to) at time
// now, ordered by total descending. Traffic follows a Zipf-like curve over
// paths and varies by day (weekends are quieter). A finished day always
// reads the same, as the real API's settled numbers do; today grows with
// the share of the (UTC) day that has passed; the future has no visitors.
// Longer ranges grow sub-linearly (returning visitors are counted once).
// The AI share varies by path and by range: on some paths AI agents
// outnumber humans.
func (s *Server) siteRows(project string, from, to, now time.Time) ([]pageRow, counts) {
	n := s.paths(project)
	var days float64
	for d := from.UTC().Truncate(24 * time.Hour); d.Before(to); d = d.Add(24 * time.Hour) {
		days += dayWeight(project, d) * s.dayElapsed(d, now)
	}
	scale := days
	if days > 1 {
		scale = math.Pow(days, 0.85)
	}
	seed := hash(project)
	wobble := float64(hash(project, from.Format(time.RFC3339), to.Format(time.RFC3339))%100) / 1000
	rows := make([]pageRow, n)
	var site, top counts
	for i := range n {
		base := 4000 / math.Pow(float64(i+1), 0.9)
		aiShare := 0.1 + 0.6*float64((seed>>uint(i%32))&7)/7 + wobble
		h := soFar(base * scale * (1 - aiShare))
		a := soFar(base * scale * aiShare)
		rows[i] = pageRow{Path: pathName(i), counts: counts{Human: h, AI: a, Total: dedupe(h, a)}}
		site.Human += h * 7 / 10 // visitors see several pages: the site count is below the sum over pages
		site.AI += a * 8 / 10
		// ... and above the count of any one page (early in the day, when
		// each page has had a visitor or two).
		top.Human, top.AI = max(top.Human, h), max(top.AI, a)
	}
	site.Human, site.AI = max(site.Human, top.Human), max(site.AI, top.AI)
	site.Total = dedupe(site.Human, site.AI)
	// The AI share varies by path, so totals do not fall strictly with the
	// rank of the base traffic: sort, as the ranking the API pages through.
	slices.SortStableFunc(rows, func(a, b pageRow) int { return cmp.Compare(b.Total, a.Total) })
	return rows, site
}

// paths is the number of pages of a project.
func (s *Server) paths(project string) int {
	if v, ok := s.opts.PathsByProject[project]; ok {
		return v
	}
	return s.opts.Paths
}

// rowsKey identifies a ranking: numbers move at most once a minute.
type rowsKey struct {
	project  string
	from, to time.Time
	minute   int64
}

type rowsValue struct {
	rows []pageRow
	site counts
}

// cachedRows is siteRows, kept for the pages that follow: a walk of a big
// site asks for the same ranking once per page.
func (s *Server) cachedRows(project string, from, to, now time.Time) ([]pageRow, counts) {
	k := rowsKey{project, from, to, now.Unix() / 60}
	s.rowsMu.Lock()
	v, ok := s.rows[k]
	s.rowsMu.Unlock()
	if ok {
		return v.rows, v.site
	}
	rows, site := s.siteRows(project, from, to, now)
	s.rowsMu.Lock()
	if len(s.rows) >= 32 {
		clear(s.rows)
	}
	s.rows[k] = rowsValue{rows, site}
	s.rowsMu.Unlock()
	return rows, site
}

// dayWeight is how busy a (UTC) day is relative to an average one.
func dayWeight(project string, day time.Time) float64 {
	w := 0.8 + 0.4*float64(hash(project, day.Format("2006-01-02"))%1000)/1000
	if wd := day.Weekday(); wd == time.Saturday || wd == time.Sunday {
		w *= 0.6
	}
	return w
}

// dayElapsed is the share of the date value day that has passed at now, 0
// to 1, in the fake's time zone.
func (s *Server) dayElapsed(day, now time.Time) float64 {
	start := time.Date(day.Year(), day.Month(), day.Day(), 0, 0, 0, 0, s.opts.Location)
	end := time.Date(day.Year(), day.Month(), day.Day()+1, 0, 0, 0, 0, s.opts.Location)
	return min(max(now.Sub(start).Seconds()/end.Sub(start).Seconds(), 0), 1)
}

// soFar turns the events a uniform rate expects by now into a count: at
// least one as soon as any is expected, because the first event of a
// day's page or query happens at its midnight. So "today" has data from
// its first second (a dashboard on window 1d right after midnight is not
// empty), while whole days, where expected is well above one, read as the
// rate says.
func soFar(expected float64) int64 {
	if expected <= 0 {
		return 0
	}
	return max(1, int64(expected))
}

// DayCounts is what the API answers for the site totals of one day, as of
// now: for tests that compare exported numbers with the API's.
func (s *Server) DayCounts(project string, day time.Time, now time.Time) (human, ai, total int64) {
	_, site := s.siteRows(project, day, day.Add(24*time.Hour), now)
	return site.Human, site.AI, site.Total
}

// parseDate accepts the two formats the API documents.
func parseDate(v string) (time.Time, error) {
	if t, err := time.Parse("2006-01-02", v); err == nil {
		return t, nil
	}
	return time.Parse(time.RFC3339, v)
}

func (s *Server) handleVisitors(w http.ResponseWriter, r *http.Request, project string, f Fault) {
	q := r.URL.Query()
	s.mu.Lock()
	s.queries = append(s.queries, q)
	s.mu.Unlock()

	limit, ok := parseLimit(w, q, 50, 250)
	if !ok {
		return
	}
	offset, ok := parseOffset(w, q)
	if !ok {
		return
	}
	now := s.opts.Now()
	fromT, toT, ok := parseVisitorsRange(w, q, now)
	if !ok {
		return
	}

	rows, site := s.cachedRows(project, fromT, toT, now)
	body := visitorsBody{Totals: site, Visitors: []pageRow{}}
	if offset < len(rows) {
		body.Visitors = append(body.Visitors, rows[offset:min(offset+limit, len(rows))]...)
	}
	body.HasMore = offset+limit < len(rows)
	s.padPaths(body.Visitors)
	visitorsFaults(&body, f, rows, offset, limit)
	writeJSON(w, http.StatusOK, body)
}

// parseOffset reads offset, 0 when absent; it answers 400 and returns
// false when invalid.
func parseOffset(w http.ResponseWriter, q url.Values) (int, bool) {
	v := q.Get("offset")
	if v == "" {
		return 0, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		writeError(w, http.StatusBadRequest, "offset must be an integer >= 0")
		return 0, false
	}
	return n, true
}

// parseVisitorsRange reads dateFrom and dateTo as UTC dates; each is
// optional: without dateFrom the range starts 30 days before tomorrow,
// without dateTo it ends at tomorrow (a guess the client must not rely
// on). It answers 400 and returns false when invalid.
func parseVisitorsRange(w http.ResponseWriter, q url.Values, now time.Time) (from, to time.Time, ok bool) {
	to = now.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	from, to, err := rangeOf(q, to.AddDate(0, 0, -30), to, parseDate)
	if err != nil {
		writeAnalyticsError(w, http.StatusBadRequest, err)
		return from, to, false
	}
	return from, to, true
}

// visitorsFaults applies to a page of rows (at offset, of limit) the
// faults of f that bend the visitors answer: a hasMore without end, a path
// of the previous page repeated, a negative count.
func visitorsFaults(body *visitorsBody, f Fault, rows []pageRow, offset, limit int) {
	if f.EndlessHasMore {
		for i := len(body.Visitors); i < limit; i++ {
			body.Visitors = append(body.Visitors, pageRow{Path: fmt.Sprintf("/endless/%d", offset+i), counts: counts{Human: 1, AI: 1, Total: 1}})
		}
		body.HasMore = true
	}
	if f.DuplicatePath && offset >= limit && offset-limit < len(rows) {
		dup := rows[offset-limit]
		dup.Human, dup.AI, dup.Total = dup.Human/2+1, dup.AI/2+1, dup.Total/2+1
		body.Visitors = append([]pageRow{dup}, body.Visitors...)
	}
	if f.NegativeCounts && len(body.Visitors) > 0 {
		body.Visitors[0].Human = -5
	}
	if f.NegativeTotals {
		body.Totals.Human = -1
	}
}
