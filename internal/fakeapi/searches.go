package fakeapi

import (
	"cmp"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Searches is /searches: search queries by hits.
var Searches = analyticsRoute("searches", "searches", (*Server).handleSearches)

// SearchStat is one query's searches in a range.
type SearchStat struct {
	Query  string
	Hits   int64
	Clicks int64
	// CTR is Clicks/Hits rounded to 4 decimals, as the API answers it.
	CTR float64
	// TopClickedPage is the page most clicked from the results.
	TopClickedPage string
}

var searchTerms = []string{
	"install", "api key", "authentication", "webhooks", "rate limit", "pagination", "quickstart",
	"python sdk", "node sdk", "errors", "oauth", "deploy", "custom domain", "analytics", "search",
	"billing", "sso", "changelog", "migration", "cli",
}

// numQueries is how many distinct queries a site's readers type.
const numQueries = 120

// queryName is the j-th most searched query.
func queryName(j int) string {
	if j < len(searchTerms) {
		return searchTerms[j]
	}
	return fmt.Sprintf("%s %s", searchTerms[j%len(searchTerms)], sections[(j/len(searchTerms))%len(sections)])
}

// LowClickThrough reports whether a query's results are rarely clicked:
// one query in five, chosen by project and query.
func LowClickThrough(project, query string) bool { return hash(project, query, "ctr")%5 == 0 }

type searchDay struct{ hits, clicks []int64 }

// searchesDay is the hits and clicks of every query on one day as of now.
func (s *Server) searchesDay(project string, day, now time.Time) searchDay {
	return s.memoize(s.dayKey("searches", project, day, now), func() any {
		out := searchDay{hits: make([]int64, numQueries), clicks: make([]int64, numQueries)}
		if s.paths(project) == 0 {
			return out
		}
		scale := dayWeight(project, day) * s.dayElapsed(day, now)
		for j := range numQueries {
			q := queryName(j)
			hits := soFar(400 / math.Pow(float64(j+1), 0.8) * scale)
			ctr := 0.3 + 0.5*unit(project, q, "ctr")
			if LowClickThrough(project, q) {
				ctr = 0.02 + 0.08*unit(project, q, "ctr")
			}
			out.hits[j], out.clicks[j] = hits, int64(float64(hits)*ctr)
		}
		return out
	}).(searchDay)
}

// Searches is what the API answers for the searches of the days that begin
// in [from, to) as of now: totalSearches (every hit, the sum of its days,
// see DaySearches) and the queries with hits, by hits descending, then
// query.
func (s *Server) Searches(project string, from, to, now time.Time) (total int64, queries []SearchStat) {
	hits, clicks := make([]int64, numQueries), make([]int64, numQueries)
	for _, d := range s.days(from, to) {
		day := s.searchesDay(project, d, now)
		for j := range numQueries {
			hits[j] += day.hits[j]
			clicks[j] += day.clicks[j]
		}
	}
	for j := range numQueries {
		total += hits[j]
		if hits[j] == 0 {
			continue
		}
		q := queryName(j)
		queries = append(queries, SearchStat{
			Query: q, Hits: hits[j], Clicks: clicks[j],
			CTR:            math.Round(float64(clicks[j])/float64(hits[j])*1e4) / 1e4,
			TopClickedPage: pathName(int(hash(project, q) % 20)),
		})
	}
	slices.SortFunc(queries, func(a, b SearchStat) int {
		if c := cmp.Compare(b.Hits, a.Hits); c != 0 {
			return c
		}
		return strings.Compare(a.Query, b.Query)
	})
	return total, queries
}

// DaySearches is totalSearches of one day (a date value) as of now.
func (s *Server) DaySearches(project string, day, now time.Time) int64 {
	total, _ := s.Searches(project, s.dayStart(day), s.dayStart(day.AddDate(0, 0, 1)), now)
	return total
}

type searchJSON struct {
	SearchQuery    string     `json:"searchQuery"`
	Hits           int64      `json:"hits"`
	CTR            float64    `json:"ctr"`
	TopClickedPage *string    `json:"topClickedPage"`
	LastSearchedAt *time.Time `json:"lastSearchedAt"`
}

func (s *Server) handleSearches(w http.ResponseWriter, r *http.Request, project string, f Fault) {
	q := r.URL.Query()
	c, ok := s.parseCursorQuery(w, q, 50, 100)
	if !ok {
		return
	}
	limit, offset, from, to, now := c.limit, c.offset, c.from, c.to, c.now
	total, queries := s.Searches(project, from, to, now)
	lo, hi, more := pageOf(len(queries), offset, limit)
	last := now.Truncate(time.Minute)
	if end := to.Add(-time.Minute); end.Before(last) {
		last = end
	}
	toJSON := func(st SearchStat) searchJSON {
		page := st.TopClickedPage
		return searchJSON{SearchQuery: st.Query, Hits: st.Hits, CTR: st.CTR, TopClickedPage: &page, LastSearchedAt: &last}
	}
	rows := make([]searchJSON, 0, hi-lo+1)
	if f.DuplicatePath && lo > 0 && lo-1 < len(queries) {
		dup := toJSON(queries[lo-1])
		dup.Hits = dup.Hits/2 + 1
		rows = append(rows, dup)
	}
	for _, st := range queries[lo:hi] {
		rows = append(rows, toJSON(st))
	}
	if f.EndlessHasMore {
		for i := len(rows); i < limit; i++ {
			rows = append(rows, searchJSON{SearchQuery: fmt.Sprintf("endless %d", offset+i), Hits: 1})
		}
	}
	if f.NegativeCounts && len(rows) > 0 {
		rows[0].Hits = -1
	}
	if f.NegativeTotals {
		total = -1
	}
	// No hasMore: the end is a null nextCursor.
	writeJSON(w, http.StatusOK, map[string]any{"searches": rows, "totalSearches": total, "nextCursor": cursorFor(offset, limit, more, f)})
}
