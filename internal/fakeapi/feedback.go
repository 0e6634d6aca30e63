package fakeapi

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Feedback is /feedback: individual feedback items.
var Feedback = analyticsRoute("feedback", "feedback", (*Server).handleFeedback)

// FeedbackByPage is /feedback/by-page: feedback counts per page.
var FeedbackByPage = analyticsRoute("feedback_by_page", "feedback/by-page", (*Server).handleFeedbackByPage)

// FeedbackItem is one piece of feedback as the fake holds it.
type FeedbackItem struct {
	ID        string
	Path      string
	CreatedAt time.Time
	Source    string
	// Status is the item's triage status as of the time asked for.
	Status string
	// Helpful is the thumb of thumbs_only and contextual feedback; nil for
	// code snippets and agent feedback.
	Helpful *bool
}

// Feedback sources and statuses the API documents.
var (
	feedbackSources  = []string{"thumbs_only", "contextual", "code_snippet", "agent"}
	feedbackStatuses = []string{"pending", "in_progress", "resolved", "dismissed"}
)

// feedbackItem is an item before its status is known (it depends on when
// it is asked).
type feedbackItem struct {
	FeedbackItem
	// triagedAfter is how long after creation the item leaves pending; 0 is
	// never (it waits for triage forever); final is the status then.
	triagedAfter time.Duration
	final        string
}

// Disliked reports whether readers mostly thumb a page down: one page in
// seven, chosen by project and path.
func Disliked(project, path string) bool { return hash(project, path, "disliked")%7 == 0 }

// feedbackDay is every feedback item created on one day (a date value),
// whether or not it exists yet at a given time.
func (s *Server) feedbackDay(project string, day time.Time) []feedbackItem {
	return s.memoize("feedback\x00"+project+"\x00"+day.Format(dayLayout), func() any {
		n := int(30 * dayWeight(project, day))
		paths := s.paths(project)
		if paths == 0 {
			return []feedbackItem(nil)
		}
		start, end := s.dayStart(day), s.dayStart(day.AddDate(0, 0, 1))
		step := end.Sub(start) / time.Duration(n)
		out := make([]feedbackItem, n)
		for k := range n {
			key := []string{project, day.Format(dayLayout), strconv.Itoa(k)}
			u := func(what string) float64 { return unit(append(key, what)...) }
			path := pathName(zipf(u("path"), min(paths, 200)))
			it := FeedbackItem{
				ID:        fmt.Sprintf("fb_%016x", hash(append(key, "id")...)),
				Path:      path,
				CreatedAt: start.Add(eventOffset(k, step, u("at"))).Truncate(time.Second),
			}
			src := u("source")
			if k == 0 {
				// The day's first item, at midnight, is a vote: a page of
				// today is rated from the day's first second.
				src *= 0.8
			}
			switch {
			case src < 0.55:
				it.Source = "thumbs_only"
			case src < 0.80:
				it.Source = "contextual"
			case src < 0.92:
				it.Source = "code_snippet"
			default:
				it.Source = "agent"
			}
			if it.Source == "thumbs_only" || it.Source == "contextual" {
				down := 0.25
				if Disliked(project, path) {
					down = 0.8
				}
				helpful := u("thumb") >= down
				it.Helpful = &helpful
			}
			fi := feedbackItem{FeedbackItem: it}
			// One item in eight waits for triage forever: the backlog has
			// old items. The others are triaged within 1 to 10 days.
			if t := u("triage"); t >= 0.125 {
				fi.triagedAfter = time.Duration(24*(1+9*u("delay"))) * time.Hour
				fi.final = []string{"resolved", "resolved", "in_progress", "dismissed"}[int(t*1000)%4]
			}
			out[k] = fi
		}
		return out
	}).([]feedbackItem)
}

// FeedbackItems is every feedback item created in [from, to) that exists at
// now, with its status at now, newest first (ties by id): what /feedback
// pages through.
func (s *Server) FeedbackItems(project string, from, to, now time.Time) []FeedbackItem {
	var out []FeedbackItem
	for _, d := range s.eventDays(from, to) {
		for _, fi := range s.feedbackDay(project, d) {
			it := fi.FeedbackItem
			if it.CreatedAt.Before(from) || !it.CreatedAt.Before(to) || it.CreatedAt.After(now) {
				continue
			}
			it.Status = "pending"
			if fi.triagedAfter > 0 && now.Sub(it.CreatedAt) >= fi.triagedAfter {
				it.Status = fi.final
			}
			out = append(out, it)
		}
	}
	slices.SortFunc(out, func(a, b FeedbackItem) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// PageFeedback are the feedback counts of one page as /feedback/by-page
// answers them.
type PageFeedback struct {
	Path                       string
	ThumbsUp, ThumbsDown, Code int64
	// Total counts every item of the page, agent feedback included.
	Total int64
}

// FeedbackByPage is the feedback per page of the items created in [from,
// to) as of now, filtered by source and status when not empty, ordered by
// total descending, then path.
func (s *Server) FeedbackByPage(project string, from, to, now time.Time, source, status string) []PageFeedback {
	byPath := map[string]*PageFeedback{}
	for _, it := range s.FeedbackItems(project, from, to, now) {
		if (source != "" && it.Source != source) || (status != "" && it.Status != status) {
			continue
		}
		p := byPath[it.Path]
		if p == nil {
			p = &PageFeedback{Path: it.Path}
			byPath[it.Path] = p
		}
		p.Total++
		switch {
		case it.Source == "code_snippet":
			p.Code++
		case it.Helpful != nil && *it.Helpful:
			p.ThumbsUp++
		case it.Helpful != nil:
			p.ThumbsDown++
		}
	}
	out := make([]PageFeedback, 0, len(byPath))
	for _, p := range byPath {
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b PageFeedback) int {
		if c := cmp.Compare(b.Total, a.Total); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	})
	return out
}

type pageFeedbackJSON struct {
	Path       string `json:"path"`
	ThumbsUp   int64  `json:"thumbsUp"`
	ThumbsDown int64  `json:"thumbsDown"`
	Code       int64  `json:"code"`
	Total      int64  `json:"total"`
}

func (s *Server) handleFeedbackByPage(w http.ResponseWriter, r *http.Request, project string, f Fault) {
	q := r.URL.Query()
	limit, ok := parseLimit(w, q, 10, 100)
	if !ok {
		return
	}
	source, status := q.Get("source"), q.Get("status")
	if (source != "" && !slices.Contains(feedbackSources, source)) || (status != "" && !slices.Contains(feedbackStatuses, status)) {
		writeError(w, http.StatusBadRequest, "unknown source or status filter")
		return
	}
	var c cursorQuery
	if !s.parseRangeOrAnswer(w, q, &c) {
		return
	}
	pages := s.FeedbackByPage(project, c.from, c.to, c.now, source, status)
	_, hi, more := pageOf(len(pages), 0, limit)
	rows := make([]pageFeedbackJSON, 0, hi)
	for _, p := range pages[:hi] {
		rows = append(rows, pageFeedbackJSON(p))
	}
	if f.DuplicatePath && len(rows) > 0 {
		dup := rows[0]
		dup.ThumbsDown, dup.Total = dup.ThumbsDown+5, dup.Total+5
		rows = append(rows, dup)
	}
	if f.NegativeCounts && len(rows) > 0 {
		rows[0].ThumbsDown = -1
	}
	writeJSON(w, http.StatusOK, map[string]any{"feedback": rows, "hasMore": more})
}

// feedbackJSON is an item as the API sends it, free text included: the
// client must not let it out.
type feedbackJSON struct {
	ID      string  `json:"id"`
	Path    string  `json:"path"`
	Comment *string `json:"comment"`
	// CreatedAt is "string or null" in the reference.
	CreatedAt *string `json:"createdAt"`
	Source    string  `json:"source"`
	Status    string  `json:"status"`
	Helpful   *bool   `json:"helpful,omitempty"`
	Contact   *string `json:"contact,omitempty"`
	Code      *string `json:"code,omitempty"`
	Filename  *string `json:"filename,omitempty"`
	Lang      *string `json:"lang,omitempty"`
}

// FeedbackComment is the free text of every item's comment: tests look for
// it where it must never be (labels, logs, errors).
const FeedbackComment = "PRIVATE reader comment: jane.doe@example.com says this page is wrong"

func feedbackToJSON(it FeedbackItem) feedbackJSON {
	comment, contact := FeedbackComment, "jane.doe@example.com"
	at := it.CreatedAt.UTC().Format(time.RFC3339Nano)
	j := feedbackJSON{ID: it.ID, Path: it.Path, Comment: &comment, CreatedAt: &at, Source: it.Source, Status: it.Status}
	if it.Source == "code_snippet" {
		code, file, lang := "curl https://api.example.com", "example.sh", "bash"
		j.Code, j.Filename, j.Lang = &code, &file, &lang
	} else {
		j.Helpful, j.Contact = it.Helpful, &contact
	}
	return j
}

func (s *Server) handleFeedback(w http.ResponseWriter, r *http.Request, project string, f Fault) {
	q := r.URL.Query()
	c, ok := s.parseCursorQuery(w, q, 50, 100)
	if !ok {
		return
	}
	limit, offset, from, to, now := c.limit, c.offset, c.from, c.to, c.now
	items := s.FeedbackItems(project, from, to, now)
	lo, hi, more := pageOf(len(items), offset, limit)
	rows := make([]feedbackJSON, 0, hi-lo+1)
	if f.DuplicatePath && lo > 0 && lo-1 < len(items) {
		rows = append(rows, feedbackToJSON(items[lo-1]))
	}
	for _, it := range items[lo:hi] {
		rows = append(rows, feedbackToJSON(it))
	}
	next := cursorFor(offset, limit, more, f)
	if f.EndlessHasMore {
		for i := len(rows); i < limit; i++ {
			rows = append(rows, feedbackToJSON(FeedbackItem{ID: fmt.Sprintf("fb_endless_%d", offset+i), Path: "/endless", CreatedAt: from, Source: "thumbs_only", Status: "pending"}))
		}
	}
	if f.UnknownEnum && len(rows) > 0 {
		rows[0].Source, rows[0].Status = UnknownEnumValue, UnknownEnumValue
	}
	if f.NullCreatedAt && len(rows) > 0 {
		rows[0].CreatedAt = nil
	}
	writeJSON(w, http.StatusOK, map[string]any{"feedback": rows, "nextCursor": next, "hasMore": next != nil || f.MissingCursor})
}

// cursorFor is the next cursor of an offset-cursor page, after the faults
// that bend it: nil at the end.
func cursorFor(offset, limit int, more bool, f Fault) *string {
	var next string
	switch {
	case f.MissingCursor:
		return nil
	case f.RepeatedCursor:
		next = loopCursor
	case f.EndlessHasMore || more:
		next = offsetCursor(offset + limit)
	default:
		return nil
	}
	return &next
}
