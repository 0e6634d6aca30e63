package apiclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"time"
)

// The tolerant reader (docs/sources.md, "What the client reads"): what the
// API's reference allows is read, and a row that cannot be read at all is
// skipped and counted by reason, never a failed walk. A page that is not
// JSON, or whose list is not a list, still fails.

// Reasons a row is skipped. The set is closed (the counter's label values
// are pre-created from it), so a new reason is added here.
const (
	// SkipNoID: the row has no id (or an empty one): it could be neither
	// deduplicated nor told apart from another.
	SkipNoID = "no_id"
	// SkipNoTime: the row's time is null or absent: it belongs to no day.
	SkipNoTime = "no_time"
	// SkipBadTime: the row's time is in none of the forms read
	// (parseTime).
	SkipBadTime = "bad_time"
	// SkipMalformed: the row is not an object of the documented types (a
	// string where a count is, a null row), or holds a count beyond 2^53
	// (no float64 holds it exactly; no site counts that many).
	SkipMalformed = "malformed"
	// SkipNegative: the row holds a negative count: nothing is counted
	// below zero.
	SkipNegative = "negative"
	// SkipOutOfRange: the row holds a ratio outside 0..1, or a poll's
	// answer a value no real answer can mean (clamper).
	SkipOutOfRange = "out_of_range"
	// SkipNoNextPage is not a row: the answer said there was more but gave
	// no way to it (hasMore with a null or empty cursor, a cursor handed
	// back twice in one walk, an empty page that says hasMore). The walk
	// ends there with what it read, and counts it once.
	SkipNoNextPage = "no_next_page"
)

// SkipReasons lists every reason a row is skipped.
var SkipReasons = []string{SkipBadTime, SkipMalformed, SkipNegative, SkipNoID, SkipNoNextPage, SkipNoTime, SkipOutOfRange}

// Skips counts skipped rows by reason.
type Skips map[string]int

// Total is how many rows were skipped.
func (s Skips) Total() int {
	n := 0
	for _, v := range s {
		n += v
	}
	return n
}

// add merges o into s (allocating s when needed) and returns it.
func (s Skips) add(o Skips) Skips {
	for k, v := range o {
		s = s.one(k, v)
	}
	return s
}

// one adds n skips of reason (none for "") to s (allocating s when
// needed) and returns it.
func (s Skips) one(reason string, n int) Skips {
	if reason == "" || n == 0 {
		return s
	}
	if s == nil {
		s = Skips{}
	}
	s[reason] += n
	return s
}

// String lists the reasons in a stable order, e.g. "no_time=2 no_id=1".
func (s Skips) String() string {
	var b bytes.Buffer
	for _, k := range slices.Sorted(maps.Keys(s)) {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%d", k, s[k])
	}
	return b.String()
}

// rowError is why one row cannot be read: one of the Skip* reasons.
type rowError string

func (e rowError) Error() string { return "unreadable row: " + string(e) }

// skipReason is the reason a row's decoding error stands for: its own, or
// malformed for any other (a JSON type error inside the row).
func skipReason(err error) string {
	var re rowError
	if errors.As(err, &re) {
		return string(re)
	}
	return SkipMalformed
}

// wireRow is a row as the reference types it, W, and how it becomes the
// client's T: an error (a rowError) skips the row. W has no UnmarshalJSON
// of its own, so a list of them is read in one pass; a row type whose own
// UnmarshalJSON read its bytes again made every page cost two to four
// times as much (BenchmarkDecodeViewsPage).
type wireRow[T any] interface{ row() (T, error) }

// rowsOf is a list of rows read as W and made into T: a row that cannot
// be read is skipped and counted, the others stand. A value that is not a
// list fails the page.
type rowsOf[T any, W wireRow[T]] struct {
	rows    []T
	skipped Skips
}

func (r *rowsOf[T, W]) UnmarshalJSON(b []byte) error {
	// Every row of the documented types, the common case: one pass over
	// the list (a null row is a nil pointer). Only a list with a row of
	// other types is split and read row by row, to skip just that row.
	var all []*W
	if json.Unmarshal(b, &all) == nil {
		r.rows = make([]T, 0, len(all))
		for _, w := range all {
			r.add(w, nil)
		}
		return nil
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	r.rows = make([]T, 0, len(raw))
	for _, m := range raw {
		w := new(W)
		err := json.Unmarshal(m, w)
		if bytes.Equal(bytes.TrimSpace(m), []byte("null")) {
			w = nil
		}
		r.add(w, err)
	}
	return nil
}

// add appends the row w, or counts why it is skipped: null (nil), not of
// the documented types (err) or refused by its row method.
func (r *rowsOf[T, W]) add(w *W, err error) {
	var v T
	if w == nil {
		err = rowError(SkipMalformed)
	} else if err == nil {
		v, err = (*w).row()
	}
	if err != nil {
		r.skipped = r.skipped.one(skipReason(err), 1)
		return
	}
	r.rows = append(r.rows, v)
}

// lenient is a value of a page beside its rows (site totals, a total of
// searches) read as the rows are: one that no answer can mean (a negative
// count, a string where a count is) is skipped, its reason kept, and the
// page stands without it.
type lenient[T any] struct {
	v    T
	skip string
}

func (l *lenient[T]) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, &l.v); err != nil {
		l.v, l.skip = *new(T), skipReason(err)
	}
	return nil
}

// maxExactCount is the largest count a float64 holds exactly (2^53).
const maxExactCount = 1 << 53

// Count is a count as the reference types it: a JSON number, so 10.0 is
// read as 10. A fraction is rounded to the nearest count (the API has no
// fractional events; a fraction is a number written by a float encoder).
// A count no real answer can mean is refused with the reason of the row
// (rowsOf) or value (lenient) that holds it: below zero (SkipNegative),
// beyond 2^53 (SkipMalformed).
type Count int64

// UnmarshalJSON reads a JSON number in 0..2^53; null leaves the count as
// it is (an absent optional count is 0).
func (n *Count) UnmarshalJSON(b []byte) error {
	f, null, err := jsonNumber[Count](b)
	switch {
	case err != nil || null:
		return err
	case math.Round(f) < 0:
		return rowError(SkipNegative)
	case f > maxExactCount:
		return rowError(SkipMalformed)
	}
	*n = Count(math.Round(f))
	return nil
}

// Ratio is a share as the reference types it (a JSON number): one outside
// 0..1 means nothing and is refused (SkipOutOfRange).
type Ratio float64

// UnmarshalJSON reads a JSON number in 0..1; null leaves the ratio as it
// is.
func (r *Ratio) UnmarshalJSON(b []byte) error {
	f, null, err := jsonNumber[Ratio](b)
	switch {
	case err != nil || null:
		return err
	case !(f >= 0 && f <= 1):
		return rowError(SkipOutOfRange)
	}
	*r = Ratio(f)
	return nil
}

// jsonNumber reads the JSON value b as a number of type T (named in a type
// error), or reports null.
func jsonNumber[T any](b []byte) (f float64, null bool, err error) {
	if bytes.Equal(b, []byte("null")) {
		return 0, true, nil
	}
	// b is one JSON value (the decoder checked it), so ParseFloat sees a
	// JSON number or fails on a string, bool, object or list; calling
	// json.Unmarshal here read each count twice more.
	if f, err = strconv.ParseFloat(string(b), 64); err != nil {
		return 0, false, &json.UnmarshalTypeError{Value: jsonKind(b), Type: reflect.TypeFor[T]()}
	}
	return f, false, nil
}

// jsonKind names the kind of the JSON value b for an error, as
// encoding/json does ("string", "bool", "object", "array", "number").
func jsonKind(b []byte) string {
	switch b[0] {
	case '"':
		return "string"
	case 't', 'f':
		return "bool"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return "number"
}

// timeLayouts are the forms a timestamp is read in, besides RFC 3339 (the
// reference declares no format): with a space for the T, without a zone
// (read as UTC), with a zone written without its colon, and a bare date.
// Fractions of a second are accepted after the seconds of every layout
// (time.Parse does so without saying it in the layout).
var timeLayouts = []string{
	time.RFC3339,
	"2006-01-02T15:04:05Z0700",
	"2006-01-02T15:04:05",
	"2006-01-02 15:04:05Z07:00",
	"2006-01-02 15:04:05Z0700",
	"2006-01-02 15:04:05 Z07:00",
	"2006-01-02 15:04:05",
	"2006-01-02",
}

// parseTime reads a timestamp in any of timeLayouts; a time without a
// zone is UTC (the API's documented zone for its dates).
func parseTime(s string) (time.Time, error) {
	for _, layout := range timeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, rowError(SkipBadTime)
}

// requiredTime reads a row's time that places it on a day: null or absent
// is SkipNoTime, an unreadable one SkipBadTime.
func requiredTime(s *string) (time.Time, error) {
	if s == nil || *s == "" {
		return time.Time{}, rowError(SkipNoTime)
	}
	return parseTime(*s)
}

// optionalTime reads a time the row can do without: null, absent or
// unreadable is nil (a row is not lost over a field it does not need).
func optionalTime(s *string) *time.Time {
	if s == nil {
		return nil
	}
	t, err := parseTime(*s)
	if err != nil {
		return nil
	}
	return &t
}

// requiredID is a row's id: absent or empty is SkipNoID.
func requiredID(s *string) (string, error) {
	if s == nil || *s == "" {
		return "", rowError(SkipNoID)
	}
	return *s, nil
}
