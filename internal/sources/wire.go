package sources

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mintlify-exporter/mintlify_exporter/internal/redact"
	"github.com/mintlify-exporter/mintlify_exporter/internal/visitors"
)

// The wire form lets replicas share a walk (through Redis) instead of each
// paying the analytics budget for it. It is an envelope
//
//	{"format":2,"kind":"traffic","data":{"meta":{...},...}}
//
// around one mirror struct per snapshot type. The mirrors, not the snapshot
// types, fix the JSON names: the snapshots keep their unexported fields,
// and renaming a Go field cannot change what other replicas read.
//
// wireFormat changes whenever a field is added, removed or changes meaning.
// Decoding refuses unknown fields as well as other formats, so that a
// replica never exports a snapshot it only half understood: during a
// rolling upgrade it walks the API itself instead (see ErrUnknownFormat).
const wireFormat = 2

// Kinds of snapshot in the envelope: one per snapshot type (visitors and
// views share TrafficSnapshot, hence "traffic").
const (
	kindTraffic       = "traffic"
	kindFeedback      = "feedback"
	kindFeedbackItems = "feedback_items"
	kindSearches      = "searches"
	kindAssistant     = "assistant"
)

// ErrUnknownFormat is wrapped by DecodeSnapshot's error when the input is
// of a format version this build does not read: another replica runs an
// older or newer build. Callers treat it as a cache miss, not as damage.
var ErrUnknownFormat = errors.New("unknown snapshot format")

// EncodeSnapshot returns s in a versioned, self-describing form (JSON) that
// DecodeSnapshot reads back. It refuses what DecodeSnapshot would refuse
// (a negative count, an invalid date range, duplicate series, ...), so that
// every encoding it returns decodes.
func EncodeSnapshot(s Snapshot) ([]byte, error) {
	kind, data, err := toWire(s)
	if err != nil {
		return nil, fmt.Errorf("encoding snapshot: %w", err)
	}
	if err := data.validate(); err != nil {
		return nil, fmt.Errorf("encoding %s snapshot: %w", kind, err)
	}
	b, err := json.Marshal(struct {
		Format int      `json:"format"`
		Kind   string   `json:"kind"`
		Data   wireData `json:"data"`
	}{wireFormat, kind, data})
	if err != nil {
		return nil, fmt.Errorf("encoding %s snapshot: %w", kind, err)
	}
	return b, nil
}

// DecodeSnapshot reads what EncodeSnapshot wrote. It refuses (with an error
// naming the problem) unknown format versions (wrapping ErrUnknownFormat),
// an unknown snapshot kind, and malformed input, and never panics on any
// input. Errors name rows by position, never by their text: paths and
// queries may hold personal data.
func DecodeSnapshot(b []byte) (Snapshot, error) {
	kind, data, err := decodeEnvelope(b)
	if err != nil {
		if kind != "" {
			return nil, fmt.Errorf("decoding %s snapshot: %w", kind, err)
		}
		return nil, fmt.Errorf("decoding snapshot: %w", err)
	}
	if err := data.validate(); err != nil {
		return nil, fmt.Errorf("decoding %s snapshot: %w", kind, err)
	}
	return data.snapshot(), nil
}

// decodeEnvelope reads the envelope and its data in one pass: the data is
// decoded straight into its kind's mirror when the format and kind come
// before it, as EncodeSnapshot writes them (otherwise it is held raw and
// decoded at the end). Decoding the envelope with the data raw, then the
// data, took 1.5 times the time and the garbage (BENCHMARKS.md). The kind is
// returned once known, for the error's context.
//
// Unknown fields are refused, here and in the data, as is a field given
// twice and anything after the envelope: a writer of another format that
// forgot to change the version must not be half understood.
func decodeEnvelope(b []byte) (string, wireData, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	switch tok, err := dec.Token(); {
	case errors.Is(err, io.EOF):
		return "", nil, errors.New("empty input")
	case err != nil:
		return "", nil, err
	case tok != json.Delim('{'):
		return "", nil, errors.New("not a JSON object")
	}
	var (
		format, kind                  = 0, ""
		haveFormat, haveKind, hasData bool
		decode                        func(*json.Decoder) (wireData, error)
		data                          wireData
		raw                           json.RawMessage
	)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return kind, nil, endErr(err)
		}
		key, _ := tok.(string)
		switch {
		case key == "format" && !haveFormat:
			haveFormat = true
			if err := dec.Decode(&format); err != nil {
				return kind, nil, fmt.Errorf("format: %w", endErr(err))
			}
			if format != wireFormat {
				return kind, nil, fmt.Errorf("%w %d (this build reads %d)", ErrUnknownFormat, format, wireFormat)
			}
		case key == "kind" && !haveKind:
			haveKind = true
			var k string
			if err := dec.Decode(&k); err != nil {
				return "", nil, fmt.Errorf("kind: %w", endErr(err))
			}
			if decode = kinds[k]; decode == nil {
				if k == "" {
					return "", nil, errors.New("no kind")
				}
				return "", nil, fmt.Errorf("unknown kind %.40q", k)
			}
			kind = k
		case key == "data" && !hasData:
			hasData = true
			if haveFormat && haveKind {
				data, err = decode(dec)
			} else {
				err = dec.Decode(&raw)
			}
			if err != nil {
				return kind, nil, endErr(err)
			}
		case key == "format" || key == "kind" || key == "data":
			return kind, nil, fmt.Errorf("field %q twice", key)
		default:
			return kind, nil, fmt.Errorf("unknown field %.40q", key)
		}
	}
	if tok, err := dec.Token(); err != nil {
		return kind, nil, endErr(err)
	} else if tok != json.Delim('}') {
		return kind, nil, fmt.Errorf("unexpected %v", tok)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return kind, nil, errors.New("data after the end of the snapshot")
	}
	switch {
	case !haveFormat:
		return kind, nil, fmt.Errorf("%w: none given (this build reads %d)", ErrUnknownFormat, wireFormat)
	case !haveKind:
		return "", nil, errors.New("no kind")
	case !hasData:
		return kind, nil, errNoData
	case data == nil:
		// The data came before the format or kind.
		rdec := json.NewDecoder(bytes.NewReader(raw))
		rdec.DisallowUnknownFields()
		var err error
		if data, err = decode(rdec); err != nil {
			return kind, nil, err
		}
	}
	return kind, data, nil
}

// errNoData: a missing or null data would decode as an empty snapshot,
// which exported as real data reads as zero traffic.
var errNoData = errors.New("no data")

// endErr names the end of the input met inside a value: the decoder
// reports it as io.EOF in some places, which reads as a clean end.
func endErr(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// kinds decode the data of each kind.
var kinds = map[string]func(*json.Decoder) (wireData, error){
	kindTraffic:       decodeData[wireTraffic],
	kindFeedback:      decodeData[wireFeedback],
	kindFeedbackItems: decodeData[wireFeedbackItems],
	kindSearches:      decodeData[wireSearches],
	kindAssistant:     decodeData[wireAssistant],
}

// decodeData decodes the next value as the mirror T; null is no data.
func decodeData[T any, P interface {
	*T
	wireData
}](dec *json.Decoder) (wireData, error) {
	var p P
	if err := dec.Decode(&p); err != nil {
		return nil, err
	}
	if p == nil {
		return nil, errNoData
	}
	return p, nil
}

// wireData is the mirror of one snapshot type.
type wireData interface {
	// validate refuses what would make bad samples or a bad Meta.
	validate() error
	// snapshot builds the snapshot; only after validate.
	snapshot() Snapshot
}

// toWire returns the kind and mirror of s.
func toWire(s Snapshot) (string, wireData, error) {
	switch v := s.(type) {
	case *TrafficSnapshot:
		if v == nil || v.Snapshot == nil {
			break
		}
		w := &wireTraffic{
			Meta:    metaToWire(v.Meta()),
			Site:    wireCounts(v.Site),
			Dropped: v.Dropped,
		}
		// Nil paths (a totals-only walk) stay null, and an empty walk
		// stays []: the collector exports paths_dropped only for a walk
		// of paths.
		if v.Paths != nil {
			w.Paths = make([]wirePath, len(v.Paths))
			for i, p := range v.Paths {
				w.Paths[i] = wirePath{Path: p.Path, Human: p.Human, AI: p.AI, Total: p.Total}
			}
		}
		return kindTraffic, w, nil
	case *FeedbackSnapshot:
		if v == nil {
			break
		}
		w := &wireFeedback{Meta: metaToWire(v.meta), Truncated: v.truncated, Pages: make([]wireFeedbackPage, len(v.pages))}
		for i, p := range v.pages {
			w.Pages[i] = wireFeedbackPage{Path: p.path, ThumbsUp: p.up, ThumbsDown: p.down, CodeSnippet: p.code, Total: p.total}
		}
		return kindFeedback, w, nil
	case *FeedbackItemsSnapshot:
		if v == nil {
			break
		}
		w := &wireFeedbackItems{Meta: metaToWire(v.meta), Counts: make([]wireSourceStatus, len(v.counts))}
		for i, c := range v.counts {
			w.Counts[i] = wireSourceStatus{Source: c.source, Status: c.status, Value: c.value}
		}
		// Zero means none pending (the age family then reads 0): written
		// as null rather than as the year 1.
		if !v.oldestPending.IsZero() {
			t := v.oldestPending.UTC()
			w.OldestPending = &t
		}
		w.Folded = foldedToWire(v.folded)
		return kindFeedbackItems, w, nil
	case *SearchesSnapshot:
		if v == nil {
			break
		}
		w := &wireSearches{Meta: metaToWire(v.meta), Total: v.total, Queries: make([]wireQuery, len(v.queries))}
		for i, q := range v.queries {
			w.Queries[i] = wireQuery{Query: q.query, Hits: q.hits, CTR: q.ctr}
		}
		return kindSearches, w, nil
	case *AssistantSnapshot:
		if v == nil {
			break
		}
		return kindAssistant, &wireAssistant{
			Meta:            metaToWire(v.meta),
			Callers:         labelCountsToWire(v.callers),
			Combined:        v.combined,
			Resolution:      labelCountsToWire(v.resolution),
			ResponseType:    labelCountsToWire(v.responseType),
			Categories:      labelCountsToWire(v.categories),
			OtherCategories: v.otherCategories,
			Folded:          foldedToWire(v.folded),
		}, nil
	case nil:
		return "", nil, errors.New("nil snapshot")
	default:
		return "", nil, fmt.Errorf("snapshot type %T has no wire form", s)
	}
	return "", nil, fmt.Errorf("nil %T", s)
}

// wireMeta is Meta. At is written in UTC (RFC 3339 with nanoseconds): the
// instant survives exactly, the zone and the monotonic reading do not, and
// neither changes a sample.
type wireMeta struct {
	At         time.Time `json:"at"`
	DateFrom   string    `json:"dateFrom"`
	DateTo     string    `json:"dateTo"`
	Requests   int       `json:"requests"`
	TotalsOnly bool      `json:"totalsOnly"`
}

func metaToWire(m Meta) wireMeta {
	return wireMeta{At: m.At.UTC(), DateFrom: m.DateFrom, DateTo: m.DateTo, Requests: m.Requests, TotalsOnly: m.TotalsOnly}
}

func (m wireMeta) meta() Meta {
	return Meta{At: m.At.UTC(), DateFrom: m.DateFrom, DateTo: m.DateTo, Requests: m.Requests, TotalsOnly: m.TotalsOnly}
}

// validate checks Meta as a walk sets it; pages is how many per-page rows
// the snapshot holds (a totals-only snapshot holds none).
func (m wireMeta) validate(pages int) error {
	if err := checkTime("at", m.At); err != nil {
		return err
	}
	// The collector matches a snapshot to its window by these dates, and
	// every walk checked them (checkRange).
	from, err1 := time.Parse(visitors.DateLayout, m.DateFrom)
	to, err2 := time.Parse(visitors.DateLayout, m.DateTo)
	if err1 != nil || err2 != nil || !to.After(from) {
		return fmt.Errorf("invalid date range %.40q..%.40q: want YYYY-MM-DD with dateFrom < dateTo", m.DateFrom, m.DateTo)
	}
	if m.Requests < 0 {
		return fmt.Errorf("negative requests (%d)", m.Requests)
	}
	if m.TotalsOnly && pages > 0 {
		return fmt.Errorf("a totals-only snapshot with %d per-page rows", pages)
	}
	return nil
}

// checkTime refuses the zero time (no walk ended then) and times that
// cannot be written back (RFC 3339 has four-digit years), which a zone
// offset can produce from a readable one.
func checkTime(what string, t time.Time) error {
	if t.IsZero() {
		return fmt.Errorf("no %s time", what)
	}
	if y := t.UTC().Year(); y < 1 || y > 9999 {
		return fmt.Errorf("%s time in year %d, outside 1..9999", what, y)
	}
	return nil
}

// checkValues refuses a value no walk produces: every value is a count or
// a ratio of the API, which refuses negative ones. (JSON has no NaN; a
// snapshot being encoded could.) The error names no row: callers do.
func checkValues(values ...float64) error {
	for _, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return fmt.Errorf("value %v, want a finite value >= 0", v)
		}
	}
	return nil
}

// uniqueLabels checks the label values of rows: valid UTF-8 (else an
// invalid metric; JSON decoding already replaces such bytes, but a
// snapshot being encoded would otherwise change on its way) and, since two
// series with the same labels fail the whole scrape, each tuple once.
type uniqueLabels map[string]struct{}

// add checks row i (from 0) of what; errors name the row by position.
func (u uniqueLabels) add(what string, i int, values ...string) error {
	for _, v := range values {
		if !utf8.ValidString(v) {
			return fmt.Errorf("%s %d: label value not valid UTF-8", what, i+1)
		}
		if len(v) > redact.MaxLabelBytes {
			return fmt.Errorf("%s %d: label value of %d bytes, over the cap of %d", what, i+1, len(v), redact.MaxLabelBytes)
		}
	}
	key := values[0]
	if len(values) > 1 {
		// Valid UTF-8 never holds 0xff: a separator no value contains.
		key = strings.Join(values, "\xff")
	}
	if _, dup := u[key]; dup {
		return fmt.Errorf("%s %d: duplicate series", what, i+1)
	}
	u[key] = struct{}{}
	return nil
}

// wireCounts are visitors.Counts.
type wireCounts struct {
	Human float64 `json:"human"`
	AI    float64 `json:"ai"`
	Total float64 `json:"total"`
}

type wirePath struct {
	Path  string  `json:"path"`
	Human float64 `json:"human"`
	AI    float64 `json:"ai"`
	Total float64 `json:"total"`
}

// wireTraffic is a TrafficSnapshot (visitors or views).
type wireTraffic struct {
	Meta wireMeta   `json:"meta"`
	Site wireCounts `json:"site"`
	// Paths: null in a totals-only snapshot, [] in a walk that kept none.
	Paths   []wirePath `json:"paths"`
	Dropped int        `json:"dropped"`
}

func (w *wireTraffic) validate() error {
	if err := w.Meta.validate(len(w.Paths)); err != nil {
		return err
	}
	if err := checkValues(w.Site.Human, w.Site.AI, w.Site.Total); err != nil {
		return fmt.Errorf("site: %w", err)
	}
	if w.Dropped < 0 {
		return fmt.Errorf("negative dropped paths (%d)", w.Dropped)
	}
	seen := make(uniqueLabels, len(w.Paths))
	for i, p := range w.Paths {
		if err := seen.add("path", i, p.Path); err != nil {
			return err
		}
		if err := checkValues(p.Human, p.AI, p.Total); err != nil {
			return fmt.Errorf("path %d: %w", i+1, err)
		}
	}
	return nil
}

func (w *wireTraffic) snapshot() Snapshot {
	m := w.Meta.meta()
	s := &visitors.Snapshot{At: m.At, DateFrom: m.DateFrom, DateTo: m.DateTo, Site: visitors.Counts(w.Site), Dropped: w.Dropped, Requests: m.Requests}
	if w.Paths != nil {
		s.Paths = make([]visitors.PathCounts, len(w.Paths))
		for i, p := range w.Paths {
			s.Paths[i] = visitors.PathCounts{Path: p.Path, Counts: visitors.Counts{Human: p.Human, AI: p.AI, Total: p.Total}}
		}
	}
	return &TrafficSnapshot{Snapshot: s, totalsOnly: m.TotalsOnly}
}

// wireFeedback is a FeedbackSnapshot.
type wireFeedback struct {
	Meta      wireMeta           `json:"meta"`
	Pages     []wireFeedbackPage `json:"pages"`
	Truncated bool               `json:"truncated"`
}

type wireFeedbackPage struct {
	Path        string  `json:"path"`
	ThumbsUp    float64 `json:"thumbsUp"`
	ThumbsDown  float64 `json:"thumbsDown"`
	CodeSnippet float64 `json:"codeSnippet"`
	Total       float64 `json:"total"`
}

func (w *wireFeedback) validate() error {
	if err := w.Meta.validate(len(w.Pages)); err != nil {
		return err
	}
	seen := make(uniqueLabels, len(w.Pages))
	for i, p := range w.Pages {
		if err := seen.add("page", i, p.Path); err != nil {
			return err
		}
		if err := checkValues(p.ThumbsUp, p.ThumbsDown, p.CodeSnippet, p.Total); err != nil {
			return fmt.Errorf("page %d: %w", i+1, err)
		}
	}
	return nil
}

func (w *wireFeedback) snapshot() Snapshot {
	s := &FeedbackSnapshot{meta: w.Meta.meta(), truncated: w.Truncated, pages: make([]pageFeedback, len(w.Pages))}
	for i, p := range w.Pages {
		s.pages[i] = pageFeedback{path: p.Path, up: p.ThumbsUp, down: p.ThumbsDown, code: p.CodeSnippet, total: p.Total}
	}
	return s
}

// wireFeedbackItems is a FeedbackItemsSnapshot.
type wireFeedbackItems struct {
	Meta   wireMeta           `json:"meta"`
	Counts []wireSourceStatus `json:"counts"`
	// OldestPending is null when no item is pending.
	OldestPending *time.Time   `json:"oldestPending"`
	Folded        []wireFolded `json:"folded"`
}

type wireSourceStatus struct {
	Source string  `json:"source"`
	Status string  `json:"status"`
	Value  float64 `json:"value"`
}

func (w *wireFeedbackItems) validate() error {
	if err := w.Meta.validate(0); err != nil {
		return err
	}
	seen := make(uniqueLabels, len(w.Counts))
	for i, c := range w.Counts {
		if err := seen.add("count", i, c.Source, c.Status); err != nil {
			return err
		}
		if err := checkValues(c.Value); err != nil {
			return fmt.Errorf("count %d: %w", i+1, err)
		}
	}
	if w.OldestPending != nil {
		// The zero time would read as "none pending" once decoded: one
		// meaning, one spelling (null).
		if err := checkTime("oldestPending", *w.OldestPending); err != nil {
			return err
		}
	}
	return validateFolded(w.Folded)
}

func (w *wireFeedbackItems) snapshot() Snapshot {
	s := &FeedbackItemsSnapshot{meta: w.Meta.meta(), counts: make([]sourceStatusCount, len(w.Counts))}
	for i, c := range w.Counts {
		s.counts[i] = sourceStatusCount{source: c.Source, status: c.Status, value: c.Value}
	}
	if w.OldestPending != nil {
		s.oldestPending = w.OldestPending.UTC()
	}
	s.folded = foldedFromWire(w.Folded)
	return s
}

// wireSearches is a SearchesSnapshot.
type wireSearches struct {
	Meta    wireMeta    `json:"meta"`
	Total   float64     `json:"total"`
	Queries []wireQuery `json:"queries"`
}

type wireQuery struct {
	Query string  `json:"query"`
	Hits  float64 `json:"hits"`
	CTR   float64 `json:"ctr"`
}

func (w *wireSearches) validate() error {
	if err := w.Meta.validate(len(w.Queries)); err != nil {
		return err
	}
	if err := checkValues(w.Total); err != nil {
		return fmt.Errorf("total: %w", err)
	}
	seen := make(uniqueLabels, len(w.Queries))
	for i, q := range w.Queries {
		if err := seen.add("query", i, q.Query); err != nil {
			return err
		}
		if err := checkValues(q.Hits, q.CTR); err != nil {
			return fmt.Errorf("query %d: %w", i+1, err)
		}
	}
	return nil
}

func (w *wireSearches) snapshot() Snapshot {
	s := &SearchesSnapshot{meta: w.Meta.meta(), total: w.Total, queries: make([]searchQuery, len(w.Queries))}
	for i, q := range w.Queries {
		s.queries[i] = searchQuery{query: q.Query, hits: q.Hits, ctr: q.CTR}
	}
	return s
}

// wireAssistant is an AssistantSnapshot.
type wireAssistant struct {
	Meta            wireMeta         `json:"meta"`
	Callers         []wireLabelCount `json:"callers"`
	Combined        float64          `json:"combined"`
	Resolution      []wireLabelCount `json:"resolution"`
	ResponseType    []wireLabelCount `json:"responseType"`
	Categories      []wireLabelCount `json:"categories"`
	OtherCategories float64          `json:"otherCategories"`
	Folded          []wireFolded     `json:"folded"`
}

// wireLabelCount is a labelCount. Lists, not JSON objects: the order of
// the series survives (categories are largest first).
type wireLabelCount struct {
	Label string  `json:"label"`
	Value float64 `json:"value"`
}

func labelCountsToWire(in []labelCount) []wireLabelCount {
	out := make([]wireLabelCount, len(in))
	for i, c := range in {
		out[i] = wireLabelCount{Label: c.label, Value: c.value}
	}
	return out
}

func labelCountsFromWire(in []wireLabelCount) []labelCount {
	out := make([]labelCount, len(in))
	for i, c := range in {
		out[i] = labelCount{label: c.Label, value: c.Value}
	}
	return out
}

func (w *wireAssistant) validate() error {
	if err := w.Meta.validate(0); err != nil {
		return err
	}
	for _, l := range [...]struct {
		what string
		rows []wireLabelCount
	}{{"caller", w.Callers}, {"resolution", w.Resolution}, {"response type", w.ResponseType}, {"category", w.Categories}} {
		seen := make(uniqueLabels, len(l.rows))
		for i, c := range l.rows {
			if err := seen.add(l.what, i, c.Label); err != nil {
				return err
			}
			if err := checkValues(c.Value); err != nil {
				return fmt.Errorf("%s %d: %w", l.what, i+1, err)
			}
		}
	}
	if err := checkValues(w.Combined, w.OtherCategories); err != nil {
		return fmt.Errorf("combined or other categories: %w", err)
	}
	return validateFolded(w.Folded)
}

func (w *wireAssistant) snapshot() Snapshot {
	return &AssistantSnapshot{
		meta:            w.Meta.meta(),
		callers:         labelCountsFromWire(w.Callers),
		combined:        w.Combined,
		resolution:      labelCountsFromWire(w.Resolution),
		responseType:    labelCountsFromWire(w.ResponseType),
		categories:      labelCountsFromWire(w.Categories),
		otherCategories: w.OtherCategories,
		folded:          foldedFromWire(w.Folded),
	}
}
