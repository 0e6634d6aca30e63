package apiclient

import (
	"context"
	"time"
)

// EndpointAssistant is /assistant: the AI assistant's conversations.
var EndpointAssistant = analyticsEndpoint("assistant")

// MaxAssistantLimit is the largest page of /assistant.
const MaxAssistantLimit = 1000

// Response types and resolution statuses the API documents. Others may
// come: callers pass them through as they are.
const (
	ResponseTypeAnswer             = "answer"
	ResponseTypeClarifyingQuestion = "clarifying_question"

	ResolutionAnswered   = "answered"
	ResolutionUnanswered = "unanswered"
)

// ResponseTypes and Resolutions list the documented values.
var (
	ResponseTypes = []string{ResponseTypeAnswer, ResponseTypeClarifyingQuestion}
	Resolutions   = []string{ResolutionAnswered, ResolutionUnanswered}
)

// Turn is one row of /assistant: one turn of a conversation (a question
// and the assistant's answer), reduced to what is counted. A conversation
// of several turns gives several rows that share its ID (the thread id),
// each with its own Timestamp, ResponseType and ResolutionStatus: a row is
// identified by ID and Timestamp together (Key). The question, the answer,
// its sources and the page URL are never decoded: free text is personal
// data and has no use here.
type Turn struct {
	// ID is the conversation's (thread's) id, shared by its turns.
	ID string
	// Timestamp is when the user's message of this turn was sent.
	Timestamp time.Time
	// ResponseType and ResolutionStatus: see the constants. An absent
	// responseType is "answer", as the reference says.
	ResponseType     string
	ResolutionStatus string
	// QueryCategory is the API's category of the question; nil when it has
	// none.
	QueryCategory *string
}

// Key identifies the row: the conversation's id and the turn's time.
func (t Turn) Key() string {
	return t.ID + "\x00" + t.Timestamp.UTC().Format(time.RFC3339Nano)
}

// turnRow is a row of /assistant as the reference types it (rowsOf).
type turnRow struct {
	ID               *string `json:"id"`
	Timestamp        *string `json:"timestamp"`
	ResponseType     *string `json:"responseType"`
	ResolutionStatus *string `json:"resolutionStatus"`
	QueryCategory    *string `json:"queryCategory"`
}

// row reads a row as the reference allows: any timestamp form parseTime
// reads, null category; a row without id or time cannot be counted and is
// skipped.
func (w turnRow) row() (Turn, error) {
	id, err := requiredID(w.ID)
	if err != nil {
		return Turn{}, err
	}
	at, err := requiredTime(w.Timestamp)
	if err != nil {
		return Turn{}, err
	}
	t := Turn{ID: id, Timestamp: at, ResponseType: ResponseTypeAnswer, QueryCategory: w.QueryCategory}
	if w.ResponseType != nil && *w.ResponseType != "" {
		t.ResponseType = *w.ResponseType
	}
	if w.ResolutionStatus != nil {
		t.ResolutionStatus = *w.ResolutionStatus
	}
	return t, nil
}

// assistantPage is one page of /assistant as the client reads it.
type assistantPage struct {
	Turns      rowsOf[Turn, turnRow] `json:"conversations"`
	NextCursor *string               `json:"nextCursor"`
	HasMore    bool                  `json:"hasMore"`
}

func (c *Client) assistantPage(ctx context.Context, projectID string, r DateRange, limit int, cursor string) (cursorPage[Turn], error) {
	req, err := cursorRequest(EndpointAssistant, projectID, "/assistant", r, limit, MaxAssistantLimit, cursor)
	if err != nil {
		return cursorPage[Turn]{}, err
	}
	var page assistantPage
	if err := c.do(ctx, req, &page); err != nil {
		return cursorPage[Turn]{}, err
	}
	return cursorPage[Turn]{items: page.Turns.rows, next: page.NextCursor, hasMore: page.HasMore, skipped: page.Turns.skipped}, nil
}

// AssistantReport is every turn of a range.
type AssistantReport struct {
	// Turns are distinct by (id, timestamp) (first copy wins), in the order
	// read: every turn of a conversation is one row here.
	Turns []Turn
	// Requests is how many pages were fetched.
	Requests int
	// Duplicates counts rows dropped because their (id, timestamp) was
	// seen.
	Duplicates int
	// Skipped counts the rows that could not be read, by reason.
	Skipped Skips
}

// AllTurns walks every turn of a range (DateFrom may be an ISO 8601
// instant, to read only what is newer; see walkCursor for how every walk
// ends). Rows are told apart by id and timestamp: the turns of one
// conversation share its id, across pages too.
func (c *Client) AllTurns(ctx context.Context, projectID string, r DateRange, pageSize, maxPages int) (*AssistantReport, error) {
	if err := checkLimit("assistant", pageSize, MaxAssistantLimit); err != nil {
		return nil, err
	}
	w, err := walkDistinct(ctx, "assistant", projectID, maxPages,
		func(ctx context.Context, cursor string) (cursorPage[Turn], error) {
			return c.assistantPage(ctx, projectID, r, pageSize, cursor)
		}, Turn.Key)
	c.reportSkipped(EndpointAssistant, projectID, w.skipped)
	if err != nil {
		return nil, err
	}
	return &AssistantReport{Turns: w.items, Requests: w.requests, Duplicates: w.duplicates, Skipped: w.skipped}, nil
}
