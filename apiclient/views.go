package apiclient

import (
	"context"
	"encoding/json"
)

// EndpointViews is /views: content view events per page.
var EndpointViews = analyticsEndpoint("views")

// PathViews are the content view events of one page. Views are events, so
// they add up across days; Total is the API's own.
type PathViews struct {
	Path string `json:"path"`
	TrafficCounts
}

// viewsRow is a row of /views as the reference types it (rowsOf).
type viewsRow struct{ pathCountsWire }

func (w viewsRow) row() (PathViews, error) {
	path, c, err := w.pathCounts()
	return PathViews{path, c}, err
}

// ViewsPage is one page of the views endpoint.
type ViewsPage struct {
	Totals TrafficCounts `json:"totals"`
	// TotalsSkipped is why the totals could not be read ("": they were).
	TotalsSkipped string      `json:"-"`
	Rows          []PathViews `json:"views"`
	HasMore       bool        `json:"hasMore"`
	// Skipped counts the rows that could not be read, by reason.
	Skipped Skips `json:"-"`
}

// UnmarshalJSON reads the rows one by one (rowsOf), and the totals as
// lenient.
func (p *ViewsPage) UnmarshalJSON(b []byte) error {
	var w struct {
		Totals  lenient[countsWire]         `json:"totals"`
		Rows    rowsOf[PathViews, viewsRow] `json:"views"`
		HasMore bool                        `json:"hasMore"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*p = ViewsPage{Totals: w.Totals.v.counts(), TotalsSkipped: w.Totals.skip, Rows: w.Rows.rows, HasMore: w.HasMore, Skipped: w.Rows.skipped}
	return nil
}

// ViewsPageAt fetches one page of page views: limit 1..MaxPageSize (0 is
// the API's default of 50), offset >= 0.
func (c *Client) ViewsPageAt(ctx context.Context, projectID string, r DateRange, limit, offset int) (*ViewsPage, error) {
	var page ViewsPage
	if err := c.getOffsetPage(ctx, EndpointViews, projectID, r, limit, offset, &page); err != nil {
		return nil, err
	}
	return &page, nil
}

// ViewsPages walks every page of the views endpoint, handing each page's
// rows to visit as VisitorsPages does.
func (c *Client) ViewsPages(ctx context.Context, projectID string, r DateRange, pageSize, maxPages int, visit func([]PathViews)) (OffsetWalk, error) {
	w, err := walkOffset(ctx, "views", projectID, pageSize, maxPages, c.viewsFetch(projectID, r), visit)
	c.reportSkipped(EndpointViews, projectID, w.Skipped)
	return w, err
}

// viewsFetch fetches the page of limit rows at offset of r.
func (c *Client) viewsFetch(projectID string, r DateRange) func(ctx context.Context, limit, offset int) (offsetPage[PathViews], error) {
	return func(ctx context.Context, limit, offset int) (offsetPage[PathViews], error) {
		page, err := c.ViewsPageAt(ctx, projectID, r, limit, offset)
		if err != nil {
			return offsetPage[PathViews]{}, err
		}
		return offsetPage[PathViews]{page.Totals, page.TotalsSkipped, page.Rows, page.HasMore, page.Skipped}, nil
	}
}

// ViewsTotals fetches only the site totals of a date range: one request.
func (c *Client) ViewsTotals(ctx context.Context, projectID string, r DateRange) (OffsetWalk, error) {
	return offsetTotals(ctx, c, EndpointViews, "view", projectID, c.viewsFetch(projectID, r))
}
