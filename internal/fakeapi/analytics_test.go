package fakeapi_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

func dayStart(d time.Time) time.Time {
	return time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, time.UTC)
}

// cursorWalk reads every page of a cursor endpoint and returns the raw
// items and the number of requests; key is the array field.
func cursorWalk(t *testing.T, e *env, path, key string, limit int) ([]map[string]any, int) {
	t.Helper()
	var items []map[string]any
	cursor := ""
	for n := 1; ; n++ {
		u := fmt.Sprintf("%s&limit=%d", path, limit)
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		var body map[string]json.RawMessage
		e.decode(e.get(u), &body)
		var page []map[string]any
		if err := json.Unmarshal(body[key], &page); err != nil {
			t.Fatal(err)
		}
		items = append(items, page...)
		var next *string
		_ = json.Unmarshal(body["nextCursor"], &next)
		if next == nil {
			return items, n
		}
		if n > 200 {
			t.Fatal("no end")
		}
		cursor = *next
	}
}

func TestAnalyticsEndpointsShareOneBudget(t *testing.T) {
	t.Parallel()
	e := start(t, fakeapi.Options{AnalyticsBudget: 6, Paths: 20})
	for _, p := range []string{"visitors", "views", "feedback/by-page", "feedback", "searches", "assistant"} {
		e.decode(e.get("/v1/analytics/docs/"+p), &map[string]any{})
	}
	e.wantError(e.get("/v1/analytics/docs/assistant/caller-stats"), 429, "seventh analytics request of a budget of 6")
	if e.fake.AnalyticsRejections() != 1 {
		t.Errorf("rejections %d, want 1", e.fake.AnalyticsRejections())
	}
}

func TestAnalyticsLimits(t *testing.T) {
	t.Parallel()
	e := start(t, fakeapi.Options{Paths: 20})
	for path, max := range map[string]int{"views": 250, "feedback/by-page": 100, "feedback": 100, "searches": 100, "assistant": 1000} {
		for limit, ok := range map[int]bool{1: true, max: true, 0: false, max + 1: false} {
			r := e.get(fmt.Sprintf("/v1/analytics/docs/%s?limit=%d", path, limit))
			if ok {
				e.decode(r, &map[string]any{})
			} else {
				e.wantError(r, 400, fmt.Sprintf("%s limit %d", path, limit))
			}
		}
	}
	e.wantError(e.get("/v1/analytics/docs/feedback?cursor=bogus"), 400, "bad cursor")
	e.wantError(e.get("/v1/analytics/docs/feedback/by-page?status=nope"), 400, "bad filter")
	e.wantError(e.get("/v1/analytics/docs/searches?dateFrom=2025-03-02&dateTo=2025-03-01"), 400, "empty range")
}

// TestAdditiveCountsAreSumsOfDays: a window's views, searches and
// conversations, as answered over HTTP, are the sums of the fake's days.
func TestAdditiveCountsAreSumsOfDays(t *testing.T) {
	t.Parallel()
	loc, _ := time.LoadLocation("America/New_York")
	e := start(t, fakeapi.Options{Paths: 50, Location: loc})
	now := fixedNow()
	const q = "?dateFrom=2025-03-08&dateTo=2025-03-15"
	var views struct {
		Totals counts `json:"totals"`
	}
	e.decode(e.get("/v1/analytics/docs/views"+q+"&limit=1"), &views)
	var searches struct {
		Total int64 `json:"totalSearches"`
	}
	e.decode(e.get("/v1/analytics/docs/searches"+q+"&limit=1"), &searches)
	var callers map[string]int64
	e.decode(e.get("/v1/analytics/docs/assistant/caller-stats"+q), &callers)
	convs, _ := cursorWalk(t, e, "/v1/analytics/docs/assistant"+q, "conversations", 1000)

	var wantViews fakeapi.Traffic
	var wantSearches, wantConvs int64
	for d := dayStart(time.Date(2025, 3, 8, 0, 0, 0, 0, time.UTC)); d.Before(time.Date(2025, 3, 15, 0, 0, 0, 0, time.UTC)); d = d.AddDate(0, 0, 1) {
		v := e.fake.DayViews("docs", d, now)
		wantViews.Human += v.Human
		wantViews.AI += v.AI
		wantViews.Total += v.Total
		wantSearches += e.fake.DaySearches("docs", d, now)
		wantConvs += e.fake.DayConversations("docs", d, now)
	}
	if got := (fakeapi.Traffic{Human: views.Totals.Human, AI: views.Totals.AI, Total: views.Totals.Total}); got != wantViews || got.Total == 0 {
		t.Errorf("views %+v, sum of days %+v", got, wantViews)
	}
	if searches.Total != wantSearches || wantSearches == 0 {
		t.Errorf("totalSearches %d, sum of days %d", searches.Total, wantSearches)
	}
	if callers["total"] != wantConvs || int64(len(convs)) != wantConvs || callers["web"]+callers["api"]+callers["other"] != wantConvs {
		t.Errorf("caller stats %v, %d conversations listed, sum of days %d", callers, len(convs), wantConvs)
	}
	// Today (the 14th in New York) is not over: its numbers grow with the
	// time of day, and tomorrow has none.
	today := time.Date(2025, 3, 14, 0, 0, 0, 0, time.UTC)
	if a, b := e.fake.DayViews("docs", today, now), e.fake.DayViews("docs", today, now.Add(3*time.Hour)); a.Total >= b.Total {
		t.Errorf("today's views do not grow: %d then %d", a.Total, b.Total)
	}
	if v := e.fake.DayViews("docs", today.AddDate(0, 0, 1), now); v.Total != 0 {
		t.Errorf("tomorrow has %d views", v.Total)
	}
}

// TestAnalyticsDataTellsStories: disliked pages, a triage backlog with old
// items, searches with low click-through, unanswered conversations.
func TestAnalyticsDataTellsStories(t *testing.T) {
	t.Parallel()
	e := start(t, fakeapi.Options{Paths: 300})
	const month = "?dateFrom=2025-02-13&dateTo=2025-03-15"
	var byPage struct {
		Feedback []struct {
			Path       string `json:"path"`
			ThumbsUp   int64  `json:"thumbsUp"`
			ThumbsDown int64  `json:"thumbsDown"`
			Total      int64  `json:"total"`
		} `json:"feedback"`
		HasMore bool `json:"hasMore"`
	}
	e.decode(e.get("/v1/analytics/docs/feedback/by-page"+month+"&limit=100"), &byPage)
	disliked := 0
	for _, p := range byPage.Feedback {
		if p.ThumbsDown > p.ThumbsUp && p.ThumbsDown >= 3 {
			disliked++
		}
	}
	if disliked == 0 || disliked > len(byPage.Feedback)/2 || !byPage.HasMore {
		t.Errorf("%d of %d pages thumbed down mostly (hasMore %v): want some, not most, and a list cut at 100", disliked, len(byPage.Feedback), byPage.HasMore)
	}

	items, _ := cursorWalk(t, e, "/v1/analytics/docs/feedback"+month, "feedback", 100)
	oldPending, statuses := 0, map[string]int{}
	for _, it := range items {
		statuses[it["status"].(string)]++
		at, _ := time.Parse(time.RFC3339, it["createdAt"].(string))
		if it["status"] == "pending" && fixedNow().Sub(at) > 14*24*time.Hour {
			oldPending++
		}
	}
	if oldPending == 0 || len(statuses) != 4 {
		t.Errorf("statuses %v, %d pending for over 14 days: want all four statuses and an old backlog", statuses, oldPending)
	}

	queries, requests := cursorWalk(t, e, "/v1/analytics/docs/searches"+month, "searches", 50)
	low := 0
	for i, q := range queries {
		if i > 0 && q["hits"].(float64) > queries[i-1]["hits"].(float64) {
			t.Fatalf("searches not ordered by hits at %d", i)
		}
		if q["ctr"].(float64) < 0.1 {
			low++
		}
	}
	if low == 0 || requests != (len(queries)+49)/50 {
		t.Errorf("%d queries with click-through below 0.1, %d requests for %d queries", low, requests, len(queries))
	}

	convs, _ := cursorWalk(t, e, "/v1/analytics/docs/assistant"+month, "conversations", 1000)
	unanswered := 0
	for _, c := range convs {
		if c["resolutionStatus"] == "unanswered" {
			unanswered++
		}
	}
	if unanswered == 0 || unanswered > len(convs)/3 {
		t.Errorf("%d of %d conversations unanswered", unanswered, len(convs))
	}
}

func TestCursorFaults(t *testing.T) {
	t.Parallel()
	e := start(t, fakeapi.Options{Paths: 50})
	next := func(path string) (*string, bool) {
		var body struct {
			Next    *string `json:"nextCursor"`
			HasMore *bool   `json:"hasMore"`
		}
		e.decode(e.get(path), &body)
		return body.Next, body.HasMore != nil && *body.HasMore
	}
	e.fake.SetFault(fakeapi.Feedback, fakeapi.Fault{RepeatedCursor: true})
	a, _ := next("/v1/analytics/docs/feedback?limit=1")
	b, _ := next("/v1/analytics/docs/feedback?limit=1&cursor=" + *a)
	if *a != *b {
		t.Errorf("repeated cursor fault: %q then %q", *a, *b)
	}
	e.fake.SetFault(fakeapi.Assistant, fakeapi.Fault{MissingCursor: true})
	if c, more := next("/v1/analytics/docs/assistant?limit=1"); c != nil || !more {
		t.Errorf("missing cursor fault: cursor %v, hasMore %v", c, more)
	}
	e.fake.SetFault(fakeapi.Searches, fakeapi.Fault{EndlessHasMore: true})
	seen := map[string]bool{}
	cursor := ""
	for range 5 {
		c, _ := next("/v1/analytics/docs/searches?limit=100&dateFrom=2025-03-14&dateTo=2025-03-15&cursor=" + cursor)
		if c == nil || seen[*c] {
			t.Fatalf("endless fault: cursor %v (seen before: %v)", c, c != nil && seen[*c])
		}
		seen[*c], cursor = true, *c
	}
	e.fake.SetFault(fakeapi.Assistant, fakeapi.Fault{UnknownEnum: true})
	var page struct {
		Conversations []struct {
			ResponseType string `json:"responseType"`
		} `json:"conversations"`
	}
	e.decode(e.get("/v1/analytics/docs/assistant?limit=5"), &page)
	if page.Conversations[0].ResponseType != fakeapi.UnknownEnumValue {
		t.Errorf("unknown enum fault: %+v", page.Conversations[0])
	}
	if !strings.Contains(string(e.get("/v1/analytics/docs/feedback?limit=1").body), fakeapi.FeedbackComment) {
		t.Error("feedback items carry no comment: the client's privacy is not tested")
	}
}

// TestTodayHasDataFromMidnight: one second into a day, in the fake's zone,
// the window of today already has visitors, views, a rated page, searched
// queries and a conversation, so dashboards on window 1d are not empty
// right after midnight; tomorrow still has nothing.
func TestTodayHasDataFromMidnight(t *testing.T) {
	t.Parallel()
	loc, _ := time.LoadLocation("Asia/Tokyo")
	midnight := time.Date(2025, 3, 15, 0, 0, 0, 0, loc) // a Saturday: a quiet day
	now := midnight.Add(time.Second)
	e := start(t, fakeapi.Options{Paths: 40, Location: loc, Now: func() time.Time { return now }})
	for _, d := range []struct{ from, to string }{{"2025-03-15", "2025-03-16"}, {"2025-03-16", "2025-03-17"}} {
		today := d.from == "2025-03-15"
		q := "?dateFrom=" + d.from + "&dateTo=" + d.to
		var visitors struct {
			Totals counts `json:"totals"`
		}
		var views struct {
			Rows []map[string]any `json:"views"`
		}
		e.decode(e.get("/v1/analytics/docs/visitors"+q), &visitors)
		e.decode(e.get("/v1/analytics/docs/views"+q), &views)
		var byPage struct {
			Feedback []struct {
				ThumbsUp   int64 `json:"thumbsUp"`
				ThumbsDown int64 `json:"thumbsDown"`
			} `json:"feedback"`
		}
		e.decode(e.get("/v1/analytics/docs/feedback/by-page"+q), &byPage)
		votes := int64(0)
		for _, p := range byPage.Feedback {
			votes += p.ThumbsUp + p.ThumbsDown
		}
		var searches struct {
			Total    int64            `json:"totalSearches"`
			Searches []map[string]any `json:"searches"`
		}
		e.decode(e.get("/v1/analytics/docs/searches"+q), &searches)
		convs, _ := cursorWalk(t, e, "/v1/analytics/docs/assistant"+q, "conversations", 100)
		got := map[string]int64{
			"site human visitors": visitors.Totals.Human, "site AI visitors": visitors.Totals.AI,
			"pages with views": int64(len(views.Rows)), "thumbs votes": votes,
			"searches": searches.Total, "queries": int64(len(searches.Searches)), "conversations": int64(len(convs)),
		}
		for what, n := range got {
			if today && n == 0 {
				t.Errorf("one second after midnight, today has no %s", what)
			}
			if !today && n != 0 {
				t.Errorf("tomorrow has %d %s", n, what)
			}
		}
	}
}

// TestConversationsHaveOneToFourTurns: the fake's (and the sandbox's)
// conversations have 1 to MaxTurns turns, each of one day, sharing the
// conversation's id and caller, each at its own time.
func TestConversationsHaveOneToFourTurns(t *testing.T) {
	t.Parallel()
	e := start(t, fakeapi.Options{Paths: 30})
	from := time.Date(2025, 3, 7, 0, 0, 0, 0, time.UTC)
	turns := e.fake.Conversations("docs", from, from.AddDate(0, 0, 7), fixedNow())
	byID := map[string][]fakeapi.Conversation{}
	for _, c := range turns {
		byID[c.ID] = append(byID[c.ID], c)
	}
	sizes := map[int]int{}
	for id, ts := range byID {
		sizes[len(ts)]++
		for i, c := range ts {
			if c.Caller != ts[0].Caller || c.Timestamp.Format("2006-01-02") != ts[0].Timestamp.Format("2006-01-02") {
				t.Errorf("conversation %s: turn %d of another caller or day", id, i+1)
			}
			if i > 0 && !c.Timestamp.After(ts[i-1].Timestamp) {
				t.Errorf("conversation %s: turn %d not after the one before", id, i+1)
			}
		}
	}
	for n := 1; n <= fakeapi.MaxTurns; n++ {
		if sizes[n] == 0 {
			t.Errorf("no conversation of %d turns among %d (%v)", n, len(byID), sizes)
		}
	}
	if len(sizes) != fakeapi.MaxTurns {
		t.Errorf("conversation sizes %v, want 1 to %d turns", sizes, fakeapi.MaxTurns)
	}
}
