package apiclient

import (
	"context"
	"fmt"
	"strconv"

	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
)

// EndpointFeedbackByPage is /feedback/by-page: feedback counts per page.
var EndpointFeedbackByPage = analyticsEndpoint("feedback_by_page")

// MaxFeedbackByPageLimit is the largest limit of /feedback/by-page. The
// endpoint has no offset or cursor: only its first page can be read.
const MaxFeedbackByPageLimit = 100

// PageFeedback are the feedback counts of one page. Total is the API's own
// (it may count kinds that have no field of their own).
type PageFeedback struct {
	Path       string `json:"path"`
	ThumbsUp   int64  `json:"thumbsUp"`
	ThumbsDown int64  `json:"thumbsDown"`
	Code       int64  `json:"code"`
	Total      int64  `json:"total"`
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
	var page struct {
		Feedback []PageFeedback `json:"feedback"`
		HasMore  bool           `json:"hasMore"`
	}
	if err := c.do(ctx, request{endpoint: EndpointFeedbackByPage, method: "GET", path: path, query: v, idempotent: true}, &page); err != nil {
		return nil, fmt.Errorf("%s for project %s: %w", what, projectID, err)
	}
	out := &FeedbackByPageReport{HasMore: page.HasMore, Requests: 1, Pages: make([]PageFeedback, 0, len(page.Feedback))}
	seen := make(map[string]struct{}, len(page.Feedback))
	for _, p := range page.Feedback {
		if checkNonNegative("", p.ThumbsUp, p.ThumbsDown, p.Code, p.Total) != nil {
			err := checkNonNegative("path "+strconv.Quote(bounded.Label(p.Path)), p.ThumbsUp, p.ThumbsDown, p.Code, p.Total)
			return nil, fmt.Errorf("%s for project %s: %w", what, projectID, err)
		}
		if _, dup := seen[p.Path]; dup {
			out.DuplicatePaths++
			continue
		}
		seen[p.Path] = struct{}{}
		out.Pages = append(out.Pages, p)
	}
	return out, nil
}
