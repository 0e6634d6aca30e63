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
	ID        string
	Path      string
	CreatedAt time.Time
	Source    string
	// Status is mutable and has no modification time.
	Status string
}

// feedbackRow is a feedback item as the reference types it (rowsOf).
type feedbackRow struct {
	ID        *string `json:"id"`
	Path      string  `json:"path"`
	CreatedAt *string `json:"createdAt"`
	Source    string  `json:"source"`
	Status    string  `json:"status"`
}

func (w feedbackRow) row() (FeedbackItem, error) {
	id, err := requiredID(w.ID)
	if err != nil {
		return FeedbackItem{}, err
	}
	at, err := requiredTime(w.CreatedAt)
	if err != nil {
		return FeedbackItem{}, err
	}
	return FeedbackItem{ID: id, Path: w.Path, CreatedAt: at, Source: w.Source, Status: w.Status}, nil
}

// FeedbackReport is every feedback item of a date range.
type FeedbackReport struct {
	// Items are distinct by id (first copy wins), in the order read.
	Items []FeedbackItem
	// Requests is how many pages were fetched.
	Requests int
	// Duplicates counts items dropped because their id was already seen.
	Duplicates int
	// Skipped counts the items that could not be read, by reason.
	Skipped Skips
}

// feedbackPage is one page of /feedback as the client reads it.
type feedbackPage struct {
	Feedback   rowsOf[FeedbackItem, feedbackRow] `json:"feedback"`
	NextCursor *string                           `json:"nextCursor"`
	HasMore    bool                              `json:"hasMore"`
}

func (c *Client) feedbackPage(ctx context.Context, projectID string, r DateRange, limit int, cursor string) (cursorPage[FeedbackItem], error) {
	req, err := cursorRequest(EndpointFeedback, projectID, "/feedback", r, limit, MaxFeedbackLimit, cursor)
	if err != nil {
		return cursorPage[FeedbackItem]{}, err
	}
	var page feedbackPage
	if err := c.do(ctx, req, &page); err != nil {
		return cursorPage[FeedbackItem]{}, err
	}
	return cursorPage[FeedbackItem]{items: page.Feedback.rows, next: page.NextCursor, hasMore: page.HasMore, skipped: page.Feedback.skipped}, nil
}

// AllFeedback walks every feedback item of a date range (see walkCursor for
// how every walk ends). An item that cannot be read is skipped and counted
// in the report; the walk and its other items stand.
func (c *Client) AllFeedback(ctx context.Context, projectID string, r DateRange, pageSize, maxPages int) (*FeedbackReport, error) {
	if err := checkLimit("feedback", pageSize, MaxFeedbackLimit); err != nil {
		return nil, err
	}
	w, err := walkDistinct(ctx, "feedback", projectID, maxPages,
		func(ctx context.Context, cursor string) (cursorPage[FeedbackItem], error) {
			return c.feedbackPage(ctx, projectID, r, pageSize, cursor)
		},
		func(it FeedbackItem) string { return it.ID })
	c.reportSkipped(EndpointFeedback, projectID, w.skipped)
	if err != nil {
		return nil, err
	}
	return &FeedbackReport{Items: w.items, Requests: w.requests, Duplicates: w.duplicates, Skipped: w.skipped}, nil
}
