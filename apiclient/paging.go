package apiclient

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// DateRange is the date range of an analytics request: YYYY-MM-DD or ISO
// 8601, DateTo exclusive. Empty fields are left to the API's default.
type DateRange struct {
	DateFrom string
	DateTo   string
}

func (r DateRange) values() url.Values {
	v := url.Values{}
	if r.DateFrom != "" {
		v.Set("dateFrom", r.DateFrom)
	}
	if r.DateTo != "" {
		v.Set("dateTo", r.DateTo)
	}
	return v
}

// analyticsPath is the escaped path of an analytics endpoint of a project;
// suffix starts with "/".
func analyticsPath(what, projectID, suffix string) (string, error) {
	project, err := segment("project id", projectID)
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	return "/v1/analytics/" + project + suffix, nil
}

// checkLimit refuses a page size the endpoint does not accept.
// cursorRequest is the request for one page of a cursor-paged endpoint: its
// path, the range, limit (1..maxLimit) and the cursor ("" for the first).
// Its answer holds free text, never quoted in an error.
func cursorRequest(endpoint, projectID, suffix string, r DateRange, limit, maxLimit int, cursor string) (request, error) {
	if err := checkLimit(endpoint, limit, maxLimit); err != nil {
		return request{}, err
	}
	path, err := analyticsPath(endpoint, projectID, suffix)
	if err != nil {
		return request{}, err
	}
	v := r.values()
	v.Set("limit", strconv.Itoa(limit))
	if cursor != "" {
		v.Set("cursor", cursor)
	}
	return request{endpoint: endpoint, method: "GET", path: path, query: v, idempotent: true, private: true}, nil
}

func checkLimit(what string, limit, maxLimit int) error {
	if limit < 1 || limit > maxLimit {
		return fmt.Errorf("%s: page size %d outside 1..%d", what, limit, maxLimit)
	}
	return nil
}

// pathRow is a row of an offset-paged endpoint: one path and its counts.
type pathRow interface {
	pathAndCounts() (string, TrafficCounts)
}

// offsetReport is what collectRows gathers.
type offsetReport[R pathRow] struct {
	rows       []R
	duplicates int
	seen       map[string]struct{}
}

// collectRows is a visit of walkOffset that keeps every row. A path seen
// on an earlier page keeps its first row and later copies are dropped:
// with offset pagination a row shifted by concurrent updates shows up
// twice, and the first copy is the one read in ranking order.
func (out *offsetReport[R]) collectRows(rows []R) {
	if out.seen == nil {
		out.seen = map[string]struct{}{}
	}
	for _, r := range rows {
		path, _ := r.pathAndCounts()
		if _, dup := out.seen[path]; dup {
			out.duplicates++
			continue
		}
		out.seen[path] = struct{}{}
		out.rows = append(out.rows, r)
	}
}

// walkOffset walks an offset-paged endpoint (visitors, views): limit =
// pageSize, offset += limit while hasMore, handing each page's rows to
// visit as it arrives (so that a caller keeping only the top paths holds
// one page at a time, not the site). Rows and site totals no answer can
// mean were skipped by the pages' decoding; an empty page that still
// claims hasMore ends the walk (SkipNoNextPage). It fails rather than end
// early after maxPages pages (ErrTooManyPages); a caller then drops what
// visit gathered.
func walkOffset[R any](ctx context.Context, what, projectID string, pageSize, maxPages int,
	fetch func(ctx context.Context, limit, offset int) (offsetPage[R], error),
	visit func(rows []R)) (w OffsetWalk, err error) {
	if err := checkLimit(what, pageSize, MaxPageSize); err != nil {
		return w, err
	}
	if maxPages <= 0 {
		maxPages = DefaultMaxPages
	}
	for offset := 0; ; offset += pageSize {
		if w.Requests >= maxPages {
			return w, fmt.Errorf("%s for project %s: %w (%d pages of %d)", what, projectID, ErrTooManyPages, maxPages, pageSize)
		}
		page, err := fetch(ctx, pageSize, offset)
		if err != nil {
			return w, fmt.Errorf("%s for project %s, offset %d: %w", what, projectID, offset, err)
		}
		w.Requests++
		w.Skipped = w.Skipped.add(page.skipped)
		if w.Requests == 1 {
			w.setTotals(page.totals, page.totalsSkip)
		}
		visit(page.rows)
		if !page.hasMore {
			return w, nil
		}
		// A page whose rows were all skipped still moved the offset: only
		// a page that sent no row at all cannot go on.
		if len(page.rows)+page.skipped.Total() == 0 {
			w.Skipped = w.Skipped.one(SkipNoNextPage, 1)
			return w, nil
		}
	}
}

// offsetTotals reads the site totals of an offset endpoint alone (what
// they count: "visitor", "view"): its first page of one row.
func offsetTotals[R any](ctx context.Context, c *Client, endpoint, what, projectID string,
	fetch func(ctx context.Context, limit, offset int) (offsetPage[R], error)) (OffsetWalk, error) {
	page, err := fetch(ctx, 1, 0)
	if err != nil {
		return OffsetWalk{}, fmt.Errorf("%s totals for project %s: %w", what, projectID, err)
	}
	w := OffsetWalk{Requests: 1}
	w.setTotals(page.totals, page.totalsSkip)
	c.reportSkipped(endpoint, projectID, w.Skipped)
	return w, nil
}

// setTotals keeps the site totals of the first page, or counts why they
// were skipped.
func (w *OffsetWalk) setTotals(totals TrafficCounts, skip string) {
	w.Totals, w.TotalsSkipped = totals, skip != ""
	w.Skipped = w.Skipped.one(skip, 1)
}

// offsetPage is one page of an offset-paged endpoint.
type offsetPage[R any] struct {
	totals TrafficCounts
	// totalsSkip is why the totals were skipped ("": read).
	totalsSkip string
	rows       []R
	hasMore    bool
	skipped    Skips
}

// DefaultMaxCursorPages caps a cursor walk when the caller gives no cap:
// 1,000 pages of 100 feedback items or of 1,000 conversations is far more
// than a window holds, yet the walk still ends.
const DefaultMaxCursorPages = 1000

// cursorPage is one page of a cursor-paged endpoint.
type cursorPage[T any] struct {
	items []T
	// next is the cursor of the following page; nil or "" when none.
	next *string
	// hasMore is the API's hasMore; for an endpoint without one (searches)
	// the fetch sets it from next.
	hasMore bool
	// skipped counts the page's rows that could not be read.
	skipped Skips
}

// walkCursor follows an endpoint's cursors from the first page (cursor "")
// and hands every page's items to visit, until the API says there is no
// more or visit says it has enough. Every loop ends: a cursor handed back
// twice in one walk, or hasMore without a cursor, ends the walk with what
// it read (SkipNoNextPage, in the skips it returns with the pages');
// more than maxPages pages is ErrTooManyPages. It returns the requests
// sent.
func walkCursor[T any](ctx context.Context, what, projectID string, maxPages int,
	fetch func(ctx context.Context, cursor string) (cursorPage[T], error),
	visit func(items []T) (enough bool)) (requests int, skipped Skips, err error) {
	if maxPages <= 0 {
		maxPages = DefaultMaxCursorPages
	}
	seen := map[string]struct{}{}
	cursor := ""
	for {
		if requests >= maxPages {
			return requests, skipped, fmt.Errorf("%s for project %s: %w (%d pages)", what, projectID, ErrTooManyPages, maxPages)
		}
		page, err := fetch(ctx, cursor)
		if err != nil {
			return requests, skipped, fmt.Errorf("%s for project %s, page %d: %w", what, projectID, requests+1, err)
		}
		requests++
		skipped = skipped.add(page.skipped)
		if visit(page.items) || !page.hasMore {
			return requests, skipped, nil
		}
		// The cursor itself is opaque and never quoted: it might encode
		// anything.
		if page.next == nil || *page.next == "" {
			return requests, skipped.one(SkipNoNextPage, 1), nil
		}
		cursor = cursorParam(*page.next)
		if _, again := seen[cursor]; again {
			return requests, skipped.one(SkipNoNextPage, 1), nil
		}
		seen[cursor] = struct{}{}
	}
}

// distinctWalk is what walkDistinct gathers.
type distinctWalk[T any] struct {
	items      []T
	requests   int
	duplicates int
	skipped    Skips
}

// walkDistinct walks a cursor endpoint whose items carry a key, keeping
// the first copy of each key (across pages too). Rows without a key never
// get here: the page's decoding skipped and counted them (rowsOf).
func walkDistinct[T any](ctx context.Context, what, projectID string, maxPages int,
	fetch func(ctx context.Context, cursor string) (cursorPage[T], error),
	key func(T) string) (distinctWalk[T], error) {
	var w distinctWalk[T]
	seen := map[string]struct{}{}
	var err error
	w.requests, w.skipped, err = walkCursor(ctx, what, projectID, maxPages, fetch,
		func(page []T) bool {
			for _, it := range page {
				k := key(it)
				if _, dup := seen[k]; dup {
					w.duplicates++
					continue
				}
				seen[k] = struct{}{}
				w.items = append(w.items, it)
			}
			return false
		})
	return w, err
}

// cursorParam is the cursor to send for the next cursor an answer gave.
// The reference calls nextCursor an opaque string, but an independent
// integration of this API reports it given as a full URL of the next
// page: then its cursor query parameter is the cursor (sending the whole
// URL back as a cursor would repeat it, and grow, page after page). A URL
// without a cursor parameter, or any other string, is sent as it is.
func cursorParam(next string) string {
	if !strings.HasPrefix(next, "http://") && !strings.HasPrefix(next, "https://") && !strings.HasPrefix(next, "/") {
		return next
	}
	u, err := url.Parse(next)
	if err != nil {
		return next
	}
	if c := u.Query().Get("cursor"); c != "" {
		return c
	}
	return next
}
