package fakeapi

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// AssistantCallerStats is /assistant/caller-stats.
var AssistantCallerStats = analyticsRoute("assistant_caller_stats", "assistant/caller-stats", (*Server).handleCallerStats)

// Assistant is /assistant: the AI assistant's conversations.
var Assistant = analyticsRoute("assistant", "assistant", (*Server).handleAssistant)

// Conversation is one AI assistant conversation as the fake holds it.
type Conversation struct {
	// ID is a ULID: ids sort by time.
	ID           string
	Timestamp    time.Time
	Caller       string
	ResponseType string
	Resolution   string
	// Category is nil for a question the API did not categorise.
	Category *string
}

// AssistantCategories are the query categories, most asked first.
var AssistantCategories = []string{
	"getting-started", "api", "authentication", "integrations", "troubleshooting",
	"deployment", "customization", "billing",
}

// hardCategory reports whether the assistant often fails to answer a
// category's questions.
func hardCategory(c string) bool { return c == "troubleshooting" || c == "billing" }

// AssistantQuery is the free text of every question: tests look for it
// where it must never be.
const AssistantQuery = "PRIVATE question from john.roe@example.com about my invoice"

// assistantDay is every conversation of one day (a date value), whether or
// not it has happened at a given time, in time order.
func (s *Server) assistantDay(project string, day time.Time) []Conversation {
	return s.memoize("assistant\x00"+project+"\x00"+day.Format(dayLayout), func() any {
		if s.paths(project) == 0 {
			return []Conversation(nil)
		}
		n := int(80 * dayWeight(project, day))
		start, end := s.dayStart(day), s.dayStart(day.AddDate(0, 0, 1))
		step := end.Sub(start) / time.Duration(n)
		out := make([]Conversation, n)
		for k := range n {
			key := []string{project, day.Format(dayLayout), strconv.Itoa(k), "conv"}
			u := func(what string) float64 { return unit(append(key, what)...) }
			c := Conversation{Timestamp: start.Add(eventOffset(k, step, u("at"))).Truncate(time.Millisecond)}
			c.ID = ulid(c.Timestamp, key...)
			switch v := u("caller"); {
			case v < 0.7:
				c.Caller = "web"
			case v < 0.92:
				c.Caller = "api"
			default:
				c.Caller = "other"
			}
			c.ResponseType = "answer"
			if u("type") >= 0.85 {
				c.ResponseType = "clarifying_question"
			}
			unanswered := 0.12
			if u("category") >= 0.1 {
				cat := AssistantCategories[zipf(u("which"), len(AssistantCategories))]
				c.Category = &cat
				if hardCategory(cat) {
					unanswered = 0.4
				}
			}
			c.Resolution = "answered"
			if u("resolved") < unanswered {
				c.Resolution = "unanswered"
			}
			out[k] = c
		}
		return out
	}).([]Conversation)
}

// Conversations is every conversation with a timestamp in [from, to) that
// has happened at now, ordered by id (the cursor order).
func (s *Server) Conversations(project string, from, to, now time.Time) []Conversation {
	var out []Conversation
	for _, d := range s.eventDays(from, to) {
		for _, c := range s.assistantDay(project, d) {
			if !c.Timestamp.Before(from) && c.Timestamp.Before(to) && !c.Timestamp.After(now) {
				out = append(out, c)
			}
		}
	}
	slices.SortFunc(out, func(a, b Conversation) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// DayConversations is the number of conversations of one day (a date
// value) as of now: a window's count is the sum of its days.
func (s *Server) DayConversations(project string, day, now time.Time) int64 {
	return int64(len(s.Conversations(project, s.dayStart(day), s.dayStart(day.AddDate(0, 0, 1)), now)))
}

// CallerStats is what /assistant/caller-stats answers for [from, to) as of
// now: conversations by caller, and their total.
func (s *Server) CallerStats(project string, from, to, now time.Time) (byCaller map[string]int64, total int64) {
	byCaller = map[string]int64{"web": 0, "api": 0, "other": 0}
	for _, c := range s.Conversations(project, from, to, now) {
		byCaller[c.Caller]++
		total++
	}
	return byCaller, total
}

type conversationJSON struct {
	ID               string   `json:"id"`
	Timestamp        string   `json:"timestamp"`
	Query            string   `json:"query"`
	Response         string   `json:"response"`
	ResponseType     string   `json:"responseType"`
	Sources          []string `json:"sources"`
	ResolutionStatus string   `json:"resolutionStatus"`
	QueryCategory    *string  `json:"queryCategory"`
	PageURL          string   `json:"pageUrl"`
}

func conversationToJSON(c Conversation) conversationJSON {
	return conversationJSON{
		ID: c.ID, Timestamp: c.Timestamp.UTC().Format(time.RFC3339Nano),
		Query: AssistantQuery, Response: "PRIVATE answer text", ResponseType: c.ResponseType,
		Sources: []string{"/quickstart"}, ResolutionStatus: c.Resolution, QueryCategory: c.Category,
		PageURL: "https://docs.example.com/quickstart",
	}
}

// handleAssistant pages by id: the cursor is the last id of the page
// before. Within a page the order is shuffled: the API promises none.
func (s *Server) handleAssistant(w http.ResponseWriter, r *http.Request, project string, f Fault) {
	q := r.URL.Query()
	limit, ok := parseLimit(w, q, 100, 1000)
	if !ok {
		return
	}
	var c cursorQuery
	if !s.parseRangeOrAnswer(w, q, &c) {
		return
	}
	from, to, now := c.from, c.to, c.now
	all := s.Conversations(project, from, to, now)
	cursor := q.Get("cursor")
	lo := 0
	if cursor != "" {
		lo, _ = slices.BinarySearchFunc(all, cursor, func(c Conversation, id string) int { return strings.Compare(c.ID, id) })
		if lo < len(all) && all[lo].ID == cursor {
			lo++
		}
	}
	hi := min(lo+limit, len(all))
	rows := make([]conversationJSON, 0, hi-lo+1)
	if f.DuplicatePath && lo > 0 {
		rows = append(rows, conversationToJSON(all[lo-1]))
	}
	page := all[lo:hi]
	// A deterministic shuffle: odd positions first, then even ones reversed.
	for i := 1; i < len(page); i += 2 {
		rows = append(rows, conversationToJSON(page[i]))
	}
	for i := (len(page) - 1) &^ 1; i >= 0; i -= 2 {
		rows = append(rows, conversationToJSON(page[i]))
	}
	var next *string
	switch {
	case f.MissingCursor:
	case f.RepeatedCursor:
		next = &loopCursor
	case f.EndlessHasMore:
		n, _ := strconv.Atoi(strings.TrimPrefix(cursor, "endless-"))
		id := "endless-" + strconv.Itoa(n+1)
		next = &id
	case hi < len(all):
		next = &all[hi-1].ID
	}
	if f.UnknownEnum && len(rows) > 0 {
		rows[0].ResponseType, rows[0].ResolutionStatus = UnknownEnumValue, UnknownEnumValue
	}
	writeJSON(w, http.StatusOK, map[string]any{"conversations": rows, "nextCursor": next, "hasMore": next != nil || f.MissingCursor})
}

func (s *Server) handleCallerStats(w http.ResponseWriter, r *http.Request, project string, f Fault) {
	var c cursorQuery
	if !s.parseRangeOrAnswer(w, r.URL.Query(), &c) {
		return
	}
	byCaller, total := s.CallerStats(project, c.from, c.to, c.now)
	body := map[string]int64{"total": total}
	for k, v := range byCaller {
		body[k] = v
	}
	if f.UnknownEnum {
		body[UnknownEnumValue] = 3
		body["total"] += 3
	}
	if f.NegativeCounts {
		body["web"] = -1
	}
	writeJSON(w, http.StatusOK, body)
}
