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

// Conversation is one AI assistant conversation, reduced to what is
// counted. The question, the answer, its sources and the page URL are never
// decoded: free text is personal data and has no use here.
type Conversation struct {
	// ID is a ULID.
	ID        string    `json:"id"`
	Timestamp time.Time `json:"timestamp"`
	// ResponseType and ResolutionStatus: see the constants.
	ResponseType     string `json:"responseType"`
	ResolutionStatus string `json:"resolutionStatus"`
	// QueryCategory is the API's category of the question; nil when it has
	// none.
	QueryCategory *string `json:"queryCategory"`
}

// AssistantPage fetches one page of conversations; cursor "" is the first.
// The API does not promise any order.
func (c *Client) AssistantPage(ctx context.Context, projectID string, r DateRange, limit int, cursor string) (conversations []Conversation, next *string, hasMore bool, err error) {
	req, err := cursorRequest(EndpointAssistant, projectID, "/assistant", r, limit, MaxAssistantLimit, cursor)
	if err != nil {
		return nil, nil, false, err
	}
	var page struct {
		Conversations []Conversation `json:"conversations"`
		NextCursor    *string        `json:"nextCursor"`
		HasMore       bool           `json:"hasMore"`
	}
	err = c.do(ctx, req, &page)
	if err != nil {
		return nil, nil, false, err
	}
	return page.Conversations, page.NextCursor, page.HasMore, nil
}

// AssistantReport is every conversation of a range.
type AssistantReport struct {
	// Conversations are distinct by id (first copy wins), in the order read.
	Conversations []Conversation
	// Requests is how many pages were fetched.
	Requests int
	// Duplicates counts conversations dropped because their id was seen.
	Duplicates int
}

// AllConversations walks every conversation of a range (DateFrom may be an
// ISO 8601 instant, to read only what is newer; see walkCursor for how
// every walk ends). A conversation without an id or timestamp is an error:
// it could be neither deduplicated nor counted on a day.
func (c *Client) AllConversations(ctx context.Context, projectID string, r DateRange, pageSize, maxPages int) (*AssistantReport, error) {
	if err := checkLimit("assistant", pageSize, MaxAssistantLimit); err != nil {
		return nil, err
	}
	convs, requests, dups, err := walkDistinct(ctx, "assistant", projectID, maxPages,
		func(ctx context.Context, cursor string) (cursorPage[Conversation], error) {
			cs, next, hasMore, err := c.AssistantPage(ctx, projectID, r, pageSize, cursor)
			return cursorPage[Conversation]{items: cs, next: next, hasMore: hasMore}, err
		},
		func(c Conversation) (string, bool) { return c.ID, !c.Timestamp.IsZero() })
	if err != nil {
		return nil, err
	}
	return &AssistantReport{Conversations: convs, Requests: requests, Duplicates: dups}, nil
}
