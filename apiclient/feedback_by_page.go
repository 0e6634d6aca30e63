package apiclient

import (
	"context"
	"fmt"
	"strconv"
)

// EndpointFeedbackByPage is /feedback/by-page: feedback counts per page.
var EndpointFeedbackByPage = analyticsEndpoint("feedback_by_page")

// MaxFeedbackByPageLimit is the largest limit of /feedback/by-page. The
// endpoint has no offset or cursor: only its first page can be read.
const MaxFeedbackByPageLimit = 100

// PageFeedback are the feedback counts of one page. Total is the API's own
// (it may count kinds that have no field of their own).
type PageFeedback struct {
	Path       string
	ThumbsUp   int64
	ThumbsDown int64
	Code       int64
	Total      int64
}

// pageFeedbackRow is a row of /feedback/by-page as the reference types it
// (rowsOf).
type pageFeedbackRow struct {
	Path       *string `json:"path"`
	ThumbsUp   Count   `json:"thumbsUp"`
	ThumbsDown Count   `json:"thumbsDown"`
	Code       Count   `json:"code"`
	Total      Count   `json:"total"`
}

func (w pageFeedbackRow) row() (PageFeedback, error) {
	if w.Path == nil {
		return PageFeedback{}, rowError(SkipMalformed)
	}
	return PageFeedback{Path: *w.Path, ThumbsUp: int64(w.ThumbsUp), ThumbsDown: int64(w.ThumbsDown), Code: int64(w.Code), Total: int64(w.Total)}, nil
}

// feedbackByPage is the answer of /feedback/by-page as the client reads it.
type feedbackByPage struct {
	Feedback rowsOf[PageFeedback, pageFeedbackRow] `json:"feedback"`
	HasMore  bool                                  `json:"hasMore"`
}

// FeedbackByPageQuery selects what /feedback/by-page counts.
type FeedbackByPageQuery struct {
	DateRange
	// Limit is how many pages to read, 1..MaxFeedbackByPageLimit.
	Limit int
	// Source and Status filter the feedback counted; empty is no filter.
	Source string
	Status string
}

// FeedbackByPageReport is the first and only readable page.
type FeedbackByPageReport struct {
	// Pages are distinct paths, in the API's order; a path repeated within
	// the page keeps its first row.
	Pages []PageFeedback
	// HasMore says pages were left out: the list was cut at Limit.
	HasMore bool
	// DuplicatePaths counts rows dropped because their path was already seen.
	DuplicatePaths int
	// Requests is always 1.
	Requests int
	// Skipped counts the rows that could not be read, by reason.
	Skipped Skips
}

// FeedbackByPage reads the feedback counts per page: one request.
func (c *Client) FeedbackByPage(ctx context.Context, projectID string, q FeedbackByPageQuery) (*FeedbackByPageReport, error) {
	const what = "feedback by page"
	if err := checkLimit(what, q.Limit, MaxFeedbackByPageLimit); err != nil {
		return nil, err
	}
	path, err := analyticsPath(what, projectID, "/feedback/by-page")
	if err != nil {
		return nil, err
	}
	v := q.values()
	v.Set("limit", strconv.Itoa(q.Limit))
	if q.Source != "" {
		v.Set("source", q.Source)
	}
	if q.Status != "" {
		v.Set("status", q.Status)
	}
	var page feedbackByPage
	if err := c.do(ctx, request{endpoint: EndpointFeedbackByPage, method: "GET", path: path, query: v, idempotent: true}, &page); err != nil {
		return nil, fmt.Errorf("%s for project %s: %w", what, projectID, err)
	}
	c.reportSkipped(EndpointFeedbackByPage, projectID, page.Feedback.skipped)
	rows := page.Feedback.rows
	out := &FeedbackByPageReport{HasMore: page.HasMore, Requests: 1, Pages: make([]PageFeedback, 0, len(rows)), Skipped: page.Feedback.skipped}
	seen := make(map[string]struct{}, len(rows))
	for _, p := range rows {
		if _, dup := seen[p.Path]; dup {
			out.DuplicatePaths++
			continue
		}
		seen[p.Path] = struct{}{}
		out.Pages = append(out.Pages, p)
	}
	return out, nil
}
