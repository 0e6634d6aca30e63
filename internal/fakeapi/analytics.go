package fakeapi

import (
	"encoding/base64"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// UnknownEnumValue is the value the UnknownEnum fault puts where the API
// documents an enumeration: a value a client has never heard of.
const UnknownEnumValue = "brand_new_value"

// Traffic are counts split by human and AI traffic with their total.
type Traffic struct{ Human, AI, Total int64 }

// dayLayout is the API's date format.
const dayLayout = "2006-01-02"

// dateValue is the calendar date of instant t in the fake's time zone, as
// midnight UTC of that date.
func (s *Server) dateValue(t time.Time) time.Time {
	y, m, d := t.In(s.opts.Location).Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// dayStart is the instant the date value day begins in the fake's zone.
func (s *Server) dayStart(day time.Time) time.Time {
	return time.Date(day.Year(), day.Month(), day.Day(), 0, 0, 0, 0, s.opts.Location)
}

// days lists the date values of the days that begin in [from, to).
func (s *Server) days(from, to time.Time) []time.Time {
	var out []time.Time
	d := s.dateValue(from)
	if s.dayStart(d).Before(from) {
		d = d.AddDate(0, 0, 1)
	}
	for ; s.dayStart(d).Before(to); d = d.AddDate(0, 0, 1) {
		out = append(out, d)
	}
	return out
}

// eventDays lists the date values of every day that overlaps [from, to):
// the days whose events may fall in the range.
func (s *Server) eventDays(from, to time.Time) []time.Time {
	var out []time.Time
	for d := s.dateValue(from); s.dayStart(d).Before(to); d = d.AddDate(0, 0, 1) {
		out = append(out, d)
	}
	return out
}

// parseRange reads dateFrom and dateTo as instants: a date is the start of
// that day in the fake's zone, an ISO 8601 time is itself. Each bound is
// optional, as the reference says: without dateFrom the range starts 29
// days before today, without dateTo it ends at tomorrow's start (a guess
// the client must not rely on).
func (s *Server) parseRange(q url.Values, now time.Time) (from, to time.Time, err error) {
	today := s.dateValue(now)
	return rangeOf(q, s.dayStart(today.AddDate(0, 0, -29)), s.dayStart(today.AddDate(0, 0, 1)), s.parseBound)
}

// rangeOf reads dateFrom and dateTo with parse, each optional (from and
// to when absent), or says what is wrong with them.
func rangeOf(q url.Values, from, to time.Time, parse func(string) (time.Time, error)) (time.Time, time.Time, error) {
	var problems []string
	var err error
	if v := q.Get("dateFrom"); v != "" {
		if from, err = parse(v); err != nil {
			problems = append(problems, "dateFrom must be a date (YYYY-MM-DD) or an ISO 8601 time")
		}
	}
	if v := q.Get("dateTo"); v != "" {
		if to, err = parse(v); err != nil {
			problems = append(problems, "dateTo must be a date (YYYY-MM-DD) or an ISO 8601 time")
		}
	}
	if len(problems) == 0 && !to.After(from) {
		problems = append(problems, "dateFrom must be before dateTo")
	}
	if len(problems) > 0 {
		return time.Time{}, time.Time{}, &rangeError{problems}
	}
	return from, to, nil
}

// rangeError is a refused date range, with a detail per problem (the
// reference's AnalyticsErrorResponse details).
type rangeError struct{ problems []string }

func (e *rangeError) Error() string { return "invalid date range" }

// writeAnalyticsError answers an analytics request's error as the
// reference's AnalyticsErrorResponse: {error, details[{message}]}.
func writeAnalyticsError(w http.ResponseWriter, status int, err error) {
	body := map[string]any{"error": err.Error()}
	if re, ok := err.(*rangeError); ok {
		details := make([]map[string]string, len(re.problems))
		for i, p := range re.problems {
			details[i] = map[string]string{"message": p}
		}
		body["details"] = details
	}
	writeJSON(w, status, body)
}

func (s *Server) parseBound(v string) (time.Time, error) {
	if d, err := time.Parse(dayLayout, v); err == nil {
		return s.dayStart(d), nil
	}
	return time.Parse(time.RFC3339, v)
}

// cursorQuery is what a cursor page asks: its limit, the offset its cursor
// encodes, and the range.
type cursorQuery struct {
	limit, offset int
	from, to, now time.Time
}

// parseCursorQuery reads an offset-cursor request (feedback, searches); it
// answers 400 and returns false when invalid.
func (s *Server) parseCursorQuery(w http.ResponseWriter, q url.Values, def, maxLimit int) (cursorQuery, bool) {
	var c cursorQuery
	var ok bool
	if c.limit, ok = parseLimit(w, q, def, maxLimit); !ok {
		return c, false
	}
	if c.offset, ok = parseOffsetCursor(w, q); !ok {
		return c, false
	}
	return c, s.parseRangeOrAnswer(w, q, &c)
}

// parseRangeOrAnswer sets c's range and clock, or answers 400.
func (s *Server) parseRangeOrAnswer(w http.ResponseWriter, q url.Values, c *cursorQuery) bool {
	c.now = s.opts.Now()
	var err error
	if c.from, c.to, err = s.parseRange(q, c.now); err != nil {
		writeAnalyticsError(w, http.StatusBadRequest, err)
		return false
	}
	return true
}

// parseLimit reads limit in 1..maxLimit, def when absent; it answers 400
// and returns false when invalid.
func parseLimit(w http.ResponseWriter, q url.Values, def, maxLimit int) (int, bool) {
	v := q.Get("limit")
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxLimit {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("limit must be an integer between 1 and %d", maxLimit))
		return 0, false
	}
	return n, true
}

// Opaque cursors of the feedback and searches endpoints encode an offset.
const cursorPrefix = "off:"

func offsetCursor(offset int) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + strconv.Itoa(offset)))
}

// parseOffsetCursor reads a cursor of offsetCursor ("" is offset 0); it
// answers 400 and returns false for anything else.
func parseOffsetCursor(w http.ResponseWriter, q url.Values) (int, bool) {
	c := q.Get("cursor")
	if c == "" {
		return 0, true
	}
	raw, err := base64.RawURLEncoding.DecodeString(c)
	digits, ok := strings.CutPrefix(string(raw), cursorPrefix)
	n, convErr := strconv.Atoi(digits)
	if err != nil || !ok || convErr != nil || n < 0 {
		writeError(w, http.StatusBadRequest, "invalid cursor")
		return 0, false
	}
	return n, true
}

// loopCursor is what the RepeatedCursor fault hands out on every page.
var loopCursor = offsetCursor(1)

// pageOf cuts the page [offset, offset+limit) out of n items and says
// whether more follow.
func pageOf(n, offset, limit int) (lo, hi int, more bool) {
	lo = min(offset, n)
	hi = min(offset+limit, n)
	return lo, hi, hi < n
}

// memoize returns the value built for key, building it once. Keys of days
// not yet over carry the minute, so that today's numbers move as time
// passes; the memo is cleared when it grows past a few thousand entries.
func (s *Server) memoize(key string, build func() any) any {
	s.memoMu.Lock()
	v, ok := s.memo[key]
	s.memoMu.Unlock()
	if ok {
		return v
	}
	v = build()
	s.memoMu.Lock()
	if len(s.memo) >= 4096 {
		clear(s.memo)
	}
	s.memo[key] = v
	s.memoMu.Unlock()
	return v
}

// dayKey names a day of a project for memoize: finished days are settled,
// today's numbers are keyed by the minute.
func (s *Server) dayKey(kind, project string, day, now time.Time) string {
	k := kind + "\x00" + project + "\x00" + day.Format(dayLayout)
	if s.dayElapsed(day, now) < 1 {
		k += "\x00" + strconv.FormatInt(now.Unix()/60, 10)
	}
	return k
}

// eventOffset is when, after its day's midnight, the k-th of a day's
// events spaced step apart happens, u in [0, 1) placing it within its
// step: the first is at midnight (see soFar), the others anywhere in their
// step.
func eventOffset(k int, step time.Duration, u float64) time.Duration {
	if k == 0 {
		return 0
	}
	return time.Duration(k)*step + time.Duration(u*float64(step))
}

// unit is a deterministic number in [0, 1) drawn from parts.
func unit(parts ...string) float64 {
	return float64(hash(parts...)%1_000_000) / 1_000_000
}

// zipf draws a rank in [0, n) from u in [0, 1), the low ranks most often.
func zipf(u float64, n int) int {
	if n <= 0 {
		return 0
	}
	return min(int(float64(n)*math.Pow(u, 3)), n-1)
}

// crockford is the ULID alphabet.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// ulid makes a ULID from a time and a seed: 48 bits of milliseconds, then
// 80 bits of the seed's hash. ULIDs of later times sort after earlier ones.
func ulid(t time.Time, seed ...string) string {
	ms := uint64(t.UnixMilli())
	r1, r2 := hash(seed...), hash(append(seed, "2")...)
	var b [26]byte
	for i := 9; i >= 0; i-- {
		b[i] = crockford[ms&31]
		ms >>= 5
	}
	for i := 10; i < 26; i++ {
		src := &r1
		if i >= 18 {
			src = &r2
		}
		b[i] = crockford[*src&31]
		*src >>= 5
	}
	return string(b[:])
}
