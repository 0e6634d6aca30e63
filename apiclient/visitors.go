package apiclient

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
)

// MaxPageSize is the largest limit the visitors endpoint accepts.
const MaxPageSize = 250

// DefaultMaxPages caps a visitors walk: 2,000 pages of 250 rows is half a
// million paths, far beyond any documentation site, yet it still ends.
const DefaultMaxPages = 2000

// VisitorsPage fetches one page of unique visitors of a project.
func (c *Client) VisitorsPage(ctx context.Context, projectID string, q VisitorsQuery) (*VisitorsPage, error) {
	project, err := segment("project id", projectID)
	if err != nil {
		return nil, fmt.Errorf("visitors: %w", err)
	}
	v := url.Values{}
	if q.DateFrom != "" {
		v.Set("dateFrom", q.DateFrom)
	}
	if q.DateTo != "" {
		v.Set("dateTo", q.DateTo)
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Offset > 0 {
		v.Set("offset", strconv.Itoa(q.Offset))
	}
	var page VisitorsPage
	err = c.do(ctx, request{
		endpoint:   EndpointVisitors,
		method:     "GET",
		path:       "/v1/analytics/" + project + "/visitors",
		query:      v,
		idempotent: true,
	}, &page)
	if err != nil {
		return nil, err
	}
	return &page, nil
}

// AllVisitors walks every page of the visitors endpoint for the query's date
// range: limit = pageSize, offset += limit while hasMore. It fails rather
// than return a partial result: after maxPages pages (ErrTooManyPages), on
// a negative count, or on an empty page that still claims hasMore.
//
// A path seen on an earlier page keeps its first row and later copies are
// dropped: with offset pagination a row shifted by concurrent updates shows
// up twice, and the first copy is the one read in ranking order.
func (c *Client) AllVisitors(ctx context.Context, projectID string, q VisitorsQuery, pageSize, maxPages int) (*VisitorsReport, error) {
	if pageSize <= 0 || pageSize > MaxPageSize {
		return nil, fmt.Errorf("visitors: page size %d outside 1..%d", pageSize, MaxPageSize)
	}
	if maxPages <= 0 {
		maxPages = DefaultMaxPages
	}
	out := &VisitorsReport{}
	seen := map[string]struct{}{}
	q.Limit, q.Offset = pageSize, 0
	for {
		if out.Requests >= maxPages {
			return nil, fmt.Errorf("visitors for project %s: %w (%d pages of %d)", projectID, ErrTooManyPages, maxPages, pageSize)
		}
		page, err := c.VisitorsPage(ctx, projectID, q)
		if err != nil {
			return nil, fmt.Errorf("visitors for project %s, offset %d: %w", projectID, q.Offset, err)
		}
		out.Requests++
		if out.Requests == 1 {
			if err := checkCounts("site totals", page.Totals); err != nil {
				return nil, fmt.Errorf("visitors for project %s: %w", projectID, err)
			}
			out.Totals = page.Totals
		}
		for _, p := range page.Rows {
			if err := checkCounts("path "+strconv.Quote(p.Path), p.VisitorCounts); err != nil {
				return nil, fmt.Errorf("visitors for project %s, offset %d: %w", projectID, q.Offset, err)
			}
			if _, dup := seen[p.Path]; dup {
				out.DuplicatePaths++
				continue
			}
			seen[p.Path] = struct{}{}
			out.Paths = append(out.Paths, p)
		}
		if !page.HasMore {
			return out, nil
		}
		if len(page.Rows) == 0 {
			return nil, fmt.Errorf("visitors for project %s: empty page at offset %d says hasMore", projectID, q.Offset)
		}
		q.Offset += pageSize
	}
}

// VisitorsTotals fetches only the site totals of a date range: one request
// (a page of one row), whatever the number of paths.
func (c *Client) VisitorsTotals(ctx context.Context, projectID string, q VisitorsQuery) (VisitorCounts, error) {
	q.Limit, q.Offset = 1, 0
	page, err := c.VisitorsPage(ctx, projectID, q)
	if err != nil {
		return VisitorCounts{}, fmt.Errorf("visitor totals for project %s: %w", projectID, err)
	}
	if err := checkCounts("site totals", page.Totals); err != nil {
		return VisitorCounts{}, fmt.Errorf("visitor totals for project %s: %w", projectID, err)
	}
	return page.Totals, nil
}

func checkCounts(what string, c VisitorCounts) error {
	if c.Human < 0 || c.AI < 0 || c.Total < 0 {
		return fmt.Errorf("%s: negative count (human=%d ai=%d total=%d)", what, c.Human, c.AI, c.Total)
	}
	return nil
}
