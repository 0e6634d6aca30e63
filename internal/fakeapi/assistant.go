package fakeapi

import (
	"cmp"
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

// Conversation is one row of /assistant as the fake holds it: one turn of
// a conversation. The turns of a conversation share its ID (a thread id)
// and caller; each has its own time, response type and resolution.
type Conversation struct {
	// ID is a ULID of the conversation's first turn: ids sort by time.
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

// MaxTurns is the most turns a conversation of the fake has.
const MaxTurns = 4

// turnsOf is how many turns a conversation has, 1 to MaxTurns: most have
// one.
func turnsOf(u float64) int {
	switch {
	case u < 0.55:
		return 1
	case u < 0.8:
		return 2
	case u < 0.93:
		return 3
	}
	return MaxTurns
}

// assistantDay is every turn of every conversation that starts on one day
// (a date value), whether or not it has happened at a given time, in time
// order. A conversation's turns stay within its slot of the day, so that
// every turn is on its conversation's day.
func (s *Server) assistantDay(project string, day time.Time) []Conversation {
	return s.memoize("assistant\x00"+project+"\x00"+day.Format(dayLayout), func() any {
		if s.paths(project) == 0 {
			return []Conversation(nil)
		}
		n := int(80 * dayWeight(project, day))
		start, end := s.dayStart(day), s.dayStart(day.AddDate(0, 0, 1))
		step := end.Sub(start) / time.Duration(n)
		out := make([]Conversation, 0, n*2)
		for k := range n {
			key := []string{project, day.Format(dayLayout), strconv.Itoa(k), "conv"}
			u := func(what string) float64 { return unit(append(key, what)...) }
			first := start.Add(eventOffset(k, step, u("at"))).Truncate(time.Millisecond)
			c := Conversation{ID: ulid(first, key...)}
			switch v := u("caller"); {
			case v < 0.7:
				c.Caller = "web"
			case v < 0.92:
				c.Caller = "api"
			default:
				c.Caller = "other"
			}
			unanswered := 0.12
			if u("category") >= 0.1 {
				cat := AssistantCategories[zipf(u("which"), len(AssistantCategories))]
				c.Category = &cat
				if hardCategory(cat) {
					unanswered = 0.4
				}
			}
			// The turns follow the first within what is left of the slot.
			// A conversation too near its slot's end for a second between
			// turns has one: no two turns of a conversation share a time.
			turns := turnsOf(u("turns"))
			left := start.Add(step * time.Duration(k+1)).Sub(first)
			if left < time.Duration(turns+1)*time.Second {
				turns = 1
			}
			gap := left / time.Duration(turns+1)
			for t := range turns {
				tu := func(what string) float64 { return u(what + strconv.Itoa(t)) }
				turn := c
				turn.Timestamp = first.Add(gap * time.Duration(t)).Truncate(time.Millisecond)
				turn.ResponseType = "answer"
				if tu("type") >= 0.85 {
					turn.ResponseType = "clarifying_question"
				}
				turn.Resolution = "answered"
				if tu("resolved") < unanswered {
					turn.Resolution = "unanswered"
				}
				out = append(out, turn)
			}
		}
		return out
	}).([]Conversation)
}

// compareTurns orders rows by conversation id, then time: the cursor
// order.
func compareTurns(a, b Conversation) int {
	return cmp.Or(strings.Compare(a.ID, b.ID), a.Timestamp.Compare(b.Timestamp))
}

// turnCursor is the cursor after a row: its id and time (a conversation's
// turns share the id, so the id alone cannot say where a page ended).
func turnCursor(c Conversation) string {
	return c.ID + "." + strconv.FormatInt(c.Timestamp.UnixMilli(), 10)
}

// afterCursor is the index of the first row after cursor in all.
func afterCursor(all []Conversation, cursor string) int {
	id, ms, _ := strings.Cut(cursor, ".")
	n, _ := strconv.ParseInt(ms, 10, 64)
	at := Conversation{ID: id, Timestamp: time.UnixMilli(n)}
	lo, found := slices.BinarySearchFunc(all, at, compareTurns)
	if found {
		lo++
	}
	return lo
}

// Conversations is every turn with a timestamp in [from, to) that has
// happened at now, in the cursor order (compareTurns).
func (s *Server) Conversations(project string, from, to, now time.Time) []Conversation {
	var out []Conversation
	for _, d := range s.eventDays(from, to) {
		for _, c := range s.assistantDay(project, d) {
			if !c.Timestamp.Before(from) && c.Timestamp.Before(to) && !c.Timestamp.After(now) {
				out = append(out, c)
			}
		}
	}
	slices.SortFunc(out, compareTurns)
	return out
}

// DayConversations is the number of turns of one day (a date value) as of
// now: a window's count is the sum of its days.
func (s *Server) DayConversations(project string, day, now time.Time) int64 {
	return int64(len(s.Conversations(project, s.dayStart(day), s.dayStart(day.AddDate(0, 0, 1)), now)))
}

// CallerStats is what /assistant/caller-stats answers for [from, to) as of
// now: assistant queries (turns: each turn is a query) by caller, and
// their total.
func (s *Server) CallerStats(project string, from, to, now time.Time) (byCaller map[string]int64, total int64) {
	byCaller = map[string]int64{"web": 0, "api": 0, "other": 0}
	for _, c := range s.Conversations(project, from, to, now) {
		byCaller[c.Caller]++
		total++
	}
	return byCaller, total
}

type conversationJSON struct {
	ID               string       `json:"id"`
	Timestamp        string       `json:"timestamp"`
	Query            string       `json:"query"`
	Response         string       `json:"response"`
	ResponseType     string       `json:"responseType"`
	Sources          []sourceJSON `json:"sources"`
	ResolutionStatus string       `json:"resolutionStatus"`
	QueryCategory    *string      `json:"queryCategory"`
	PageURL          string       `json:"pageUrl"`
}

// sourceJSON is a page an answer refers to: {title, url} in the reference.
type sourceJSON struct {
	Title string `json:"title"`
	URL   string `json:"url"`
}

func conversationToJSON(c Conversation) conversationJSON {
	return conversationJSON{
		ID: c.ID, Timestamp: c.Timestamp.UTC().Format(time.RFC3339Nano),
		Query: AssistantQuery, Response: "PRIVATE answer text", ResponseType: c.ResponseType,
		Sources: []sourceJSON{{Title: "Quickstart", URL: "https://docs.example.com/quickstart"}}, ResolutionStatus: c.Resolution, QueryCategory: c.Category,
		PageURL: "https://docs.example.com/quickstart",
	}
}

// handleAssistant pages by (id, time): the cursor is the last row of the
// page before (turnCursor), so the turns of a conversation may span two
// pages. Within a page the order is shuffled: the API promises none.
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
	all := s.Conversations(project, c.from, c.to, c.now)
	cursor := q.Get("cursor")
	lo := 0
	if cursor != "" {
		lo = afterCursor(all, cursor)
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
		c := turnCursor(all[hi-1])
		next = &c
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
	if f.NegativeTotals {
		body["total"] = -1
	}
	writeJSON(w, http.StatusOK, body)
}
