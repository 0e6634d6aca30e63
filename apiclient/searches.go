package apiclient

import (
	"context"
	"fmt"
	"time"
)

// EndpointSearches is /searches: search queries by hits.
var EndpointSearches = analyticsEndpoint("searches")

// MaxSearchesLimit is the largest page of /searches.
const MaxSearchesLimit = 100

// SearchQuery is one search query's statistics. Query is free text typed by
// readers (it may hold personal data): callers export it only when the
// operator opted in, and it never appears in an error.
type SearchQuery struct {
	Query string
	Hits  int64
	// CTR is the click-through ratio as the API reports it.
	CTR            float64
	TopClickedPage *string
	// LastSearchedAt is nil when absent, null or in no form parseTime
	// reads: the row is not lost over a field nothing counts.
	LastSearchedAt *time.Time
}

// searchRow is a row of /searches as the reference types it (rowsOf).
type searchRow struct {
	Query          *string `json:"searchQuery"`
	Hits           Count   `json:"hits"`
	CTR            Ratio   `json:"ctr"`
	TopClickedPage *string `json:"topClickedPage"`
	LastSearchedAt *string `json:"lastSearchedAt"`
}

func (w searchRow) row() (SearchQuery, error) {
	if w.Query == nil {
		return SearchQuery{}, rowError(SkipMalformed)
	}
	return SearchQuery{Query: *w.Query, Hits: int64(w.Hits), CTR: float64(w.CTR), TopClickedPage: w.TopClickedPage, LastSearchedAt: optionalTime(w.LastSearchedAt)}, nil
}

// searchesPage is one page of /searches as the client reads it.
type searchesPage struct {
	Searches      rowsOf[SearchQuery, searchRow] `json:"searches"`
	TotalSearches lenient[Count]                 `json:"totalSearches"`
	NextCursor    *string                        `json:"nextCursor"`
}

// SearchesReport is the searches of a date range.
type SearchesReport struct {
	// TotalSearches is the API's own count of searches in the range.
	TotalSearches int64
	// TotalSkipped: totalSearches was none an answer can mean (counted in
	// Skipped): it is not to be exported; the queries stand.
	TotalSkipped bool
	// Queries are the most searched queries, distinct (first copy wins), in
	// the API's order: hits descending. At most the top asked for.
	Queries []SearchQuery
	// Requests is how many pages were fetched.
	Requests int
	// Duplicates counts rows dropped because their query was already seen.
	Duplicates int
	// Skipped counts the rows that could not be read, by reason.
	Skipped Skips
}

func (c *Client) searchesPage(ctx context.Context, projectID string, r DateRange, limit int, cursor string) (*searchesPage, error) {
	req, err := cursorRequest(EndpointSearches, projectID, "/searches", r, limit, MaxSearchesLimit, cursor)
	if err != nil {
		return nil, err
	}
	var page searchesPage
	if err := c.do(ctx, req, &page); err != nil {
		return nil, err
	}
	return &page, nil
}

// TopSearches reads totalSearches and the top most searched queries of a
// date range. The API orders by hits, so the top N take ceil(N/100)
// requests (one request of limit 1 when top is 0: the total alone). The
// walk ends early at the API's last page; every loop ends (see walkCursor).
func (c *Client) TopSearches(ctx context.Context, projectID string, r DateRange, top, maxPages int) (*SearchesReport, error) {
	if top < 0 {
		return nil, fmt.Errorf("searches: top %d must be >= 0", top)
	}
	limit := min(max(top, 1), MaxSearchesLimit)
	out := &SearchesReport{}
	seen := map[string]struct{}{}
	var err error
	out.Requests, out.Skipped, err = walkCursor(ctx, "searches", projectID, maxPages,
		func(ctx context.Context, cursor string) (cursorPage[SearchQuery], error) {
			// The last page asks only for what is still missing.
			n := limit
			if top > 0 {
				n = min(limit, top-len(out.Queries))
			}
			page, err := c.searchesPage(ctx, projectID, r, n, cursor)
			if err != nil {
				return cursorPage[SearchQuery]{}, err
			}
			skipped := page.Searches.skipped
			if cursor == "" {
				out.TotalSearches, out.TotalSkipped = int64(page.TotalSearches.v), page.TotalSearches.skip != ""
				skipped = skipped.one(page.TotalSearches.skip, 1)
			}
			next := page.NextCursor
			return cursorPage[SearchQuery]{items: page.Searches.rows, next: next, hasMore: next != nil && *next != "", skipped: skipped}, nil
		},
		func(qs []SearchQuery) bool {
			for _, q := range qs {
				if len(out.Queries) == top {
					break
				}
				if _, dup := seen[q.Query]; dup {
					out.Duplicates++
					continue
				}
				seen[q.Query] = struct{}{}
				out.Queries = append(out.Queries, q)
			}
			return len(out.Queries) >= top
		})
	c.reportSkipped(EndpointSearches, projectID, out.Skipped)
	if err != nil {
		return nil, err
	}
	return out, nil
}
