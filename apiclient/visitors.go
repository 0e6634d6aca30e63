package apiclient

import (
	"context"
	"strconv"
)

// EndpointVisitors is /visitors: unique visitors per page.
var EndpointVisitors = analyticsEndpoint("visitors")

// MaxPageSize is the largest limit the visitors and views endpoints accept.
const MaxPageSize = 250

// DefaultMaxPages caps a visitors or views walk: 2,000 pages of 250 rows is
// half a million paths, far beyond any documentation site, yet it still
// ends.
const DefaultMaxPages = 2000

// VisitorsPage fetches one page of unique visitors of a project.
func (c *Client) VisitorsPage(ctx context.Context, projectID string, q VisitorsQuery) (*VisitorsPage, error) {
	var page VisitorsPage
	if err := c.getOffsetPage(ctx, EndpointVisitors, projectID, DateRange{q.DateFrom, q.DateTo}, q.Limit, q.Offset, &page); err != nil {
		return nil, err
	}
	return &page, nil
}

// AllVisitors walks every page of the visitors endpoint for the query's date
// range (see walkOffset): it fails rather than return a partial result, and
// a path seen twice keeps its first row.
func (c *Client) AllVisitors(ctx context.Context, projectID string, q VisitorsQuery, pageSize, maxPages int) (*VisitorsReport, error) {
	r := &offsetReport[PathVisitors]{}
	w, err := c.VisitorsPages(ctx, projectID, q, pageSize, maxPages, r.collectRows)
	if err != nil {
		return nil, err
	}
	return &VisitorsReport{Totals: w.Totals, Paths: r.rows, Requests: w.Requests, DuplicatePaths: r.duplicates, Skipped: w.Skipped}, nil
}

// VisitorsPages walks every page of the visitors endpoint as AllVisitors
// does, handing each page's rows to visit as it arrives, duplicates
// included: a caller that keeps only what it exports holds one page at a
// time. On an error, what visit saw is to be dropped.
func (c *Client) VisitorsPages(ctx context.Context, projectID string, q VisitorsQuery, pageSize, maxPages int, visit func([]PathVisitors)) (OffsetWalk, error) {
	w, err := walkOffset(ctx, "visitors", projectID, pageSize, maxPages, c.visitorsFetch(projectID, q), visit)
	c.reportSkipped(EndpointVisitors, projectID, w.Skipped)
	return w, err
}

// visitorsFetch fetches the page of limit rows at offset of q's range.
func (c *Client) visitorsFetch(projectID string, q VisitorsQuery) func(ctx context.Context, limit, offset int) (offsetPage[PathVisitors], error) {
	return func(ctx context.Context, limit, offset int) (offsetPage[PathVisitors], error) {
		q.Limit, q.Offset = limit, offset
		page, err := c.VisitorsPage(ctx, projectID, q)
		if err != nil {
			return offsetPage[PathVisitors]{}, err
		}
		return offsetPage[PathVisitors]{page.Totals, page.TotalsSkipped, page.Rows, page.HasMore, page.Skipped}, nil
	}
}

// OffsetWalk is what a walk of offset pages (visitors, views) read besides
// the rows it handed on: the site totals, the requests sent and the rows
// skipped.
type OffsetWalk struct {
	Totals TrafficCounts
	// TotalsSkipped: the site totals were none an answer can mean (counted
	// in Skipped): they are not to be exported; the paths stand.
	TotalsSkipped bool
	Requests      int
	Skipped       Skips
}

// VisitorsTotals fetches only the site totals of a date range: one request
// (a page of one row), whatever the number of paths.
func (c *Client) VisitorsTotals(ctx context.Context, projectID string, q VisitorsQuery) (OffsetWalk, error) {
	return offsetTotals(ctx, c, EndpointVisitors, "visitor", projectID, c.visitorsFetch(projectID, q))
}

// getOffsetPage reads into page the page of limit rows at offset of an
// offset-paged endpoint (its path is its name); zero limit and offset are
// left to the API's defaults.
func (c *Client) getOffsetPage(ctx context.Context, endpoint, projectID string, r DateRange, limit, offset int, page any) error {
	path, err := analyticsPath(endpoint, projectID, "/"+endpoint)
	if err != nil {
		return err
	}
	v := r.values()
	if limit > 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	if offset > 0 {
		v.Set("offset", strconv.Itoa(offset))
	}
	return c.do(ctx, request{endpoint: endpoint, method: "GET", path: path, query: v, idempotent: true}, page)
}
