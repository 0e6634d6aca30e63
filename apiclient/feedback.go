package apiclient

import (
	"context"
	"time"
)

// EndpointFeedback is /feedback: individual feedback items.
var EndpointFeedback = analyticsEndpoint("feedback")

// MaxFeedbackLimit is the largest page of /feedback.
const MaxFeedbackLimit = 100

// Feedback sources and triage statuses the API documents. Others may come:
// callers pass them through as they are.
const (
	FeedbackSourceCodeSnippet = "code_snippet"
	FeedbackSourceContextual  = "contextual"
	FeedbackSourceAgent       = "agent"
	FeedbackSourceThumbsOnly  = "thumbs_only"

	FeedbackStatusPending    = "pending"
	FeedbackStatusInProgress = "in_progress"
	FeedbackStatusResolved   = "resolved"
	FeedbackStatusDismissed  = "dismissed"
)

// FeedbackSources and FeedbackStatuses list the documented values.
var (
	FeedbackSources  = []string{FeedbackSourceThumbsOnly, FeedbackSourceContextual, FeedbackSourceCodeSnippet, FeedbackSourceAgent}
	FeedbackStatuses = []string{FeedbackStatusPending, FeedbackStatusInProgress, FeedbackStatusResolved, FeedbackStatusDismissed}
)

// FeedbackItem is one piece of feedback, reduced to what is counted. The
// comment, contact address, code and file name the API also sends are
// never decoded: free text is personal data and has no use here.
type FeedbackItem struct {
	ID        string    `json:"id"`
	Path      string    `json:"path"`
	CreatedAt time.Time `json:"createdAt"`
	Source    string    `json:"source"`
	// Status is mutable and has no modification time.
	Status string `json:"status"`
}

// FeedbackReport is every feedback item of a date range.
type FeedbackReport struct {
	// Items are distinct by id (first copy wins), in the order read.
	Items []FeedbackItem
	// Requests is how many pages were fetched.
	Requests int
	// Duplicates counts items dropped because their id was already seen.
	Duplicates int
}

// FeedbackPage fetches one page of feedback items; cursor "" is the first.
func (c *Client) FeedbackPage(ctx context.Context, projectID string, r DateRange, limit int, cursor string) (items []FeedbackItem, next *string, hasMore bool, err error) {
	req, err := cursorRequest(EndpointFeedback, projectID, "/feedback", r, limit, MaxFeedbackLimit, cursor)
	if err != nil {
		return nil, nil, false, err
	}
	var page struct {
		Feedback   []FeedbackItem `json:"feedback"`
		NextCursor *string        `json:"nextCursor"`
		HasMore    bool           `json:"hasMore"`
	}
	err = c.do(ctx, req, &page)
	if err != nil {
		return nil, nil, false, err
	}
	return page.Feedback, page.NextCursor, page.HasMore, nil
}

// AllFeedback walks every feedback item of a date range (see walkCursor for
// how every walk ends). An item without an id or creation time is an error:
// it could be neither deduplicated nor placed in a window.
func (c *Client) AllFeedback(ctx context.Context, projectID string, r DateRange, pageSize, maxPages int) (*FeedbackReport, error) {
	if err := checkLimit("feedback", pageSize, MaxFeedbackLimit); err != nil {
		return nil, err
	}
	items, requests, dups, err := walkDistinct(ctx, "feedback", projectID, maxPages,
		func(ctx context.Context, cursor string) (cursorPage[FeedbackItem], error) {
			items, next, hasMore, err := c.FeedbackPage(ctx, projectID, r, pageSize, cursor)
			return cursorPage[FeedbackItem]{items: items, next: next, hasMore: hasMore}, err
		},
		func(it FeedbackItem) (string, bool) { return it.ID, !it.CreatedAt.IsZero() })
	if err != nil {
		return nil, err
	}
	return &FeedbackReport{Items: items, Requests: requests, Duplicates: dups}, nil
}
