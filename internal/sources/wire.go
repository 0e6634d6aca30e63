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

	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
)

// The wire form lets replicas share a walk (through Redis) instead of each
// paying the analytics budget for it. It is an envelope
//
//	{"format":3,"kind":"traffic","data":{"meta":{...},...}}
//
// around one mirror struct per snapshot type. The mirrors, not the snapshot
// types, fix the JSON names: the snapshots keep their unexported fields,
// and renaming a Go field cannot change what other replicas read.
//
// wireFormat changes whenever a field is added, removed or changes meaning.
// Decoding refuses unknown fields as well as other formats, so that a
// replica never exports a snapshot it only half understood: during a
// rolling upgrade it walks the API itself instead (see ErrUnknownFormat).
// Format 3: Meta's skipped rows, the assistant's distinct conversations.
const wireFormat = 3

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
	kind, data, err := kindTraffic, wireData(nil), error(nil)
	if t, ok := fastTraffic(b); ok {
		data = t
	} else {
		kind, data, err = decodeEnvelope(b)
	}
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
	if err := openEnvelope(dec); err != nil {
		return "", nil, err
	}
	e := envelope{dec: dec}
	for dec.More() {
		if err := e.field(); err != nil {
			return e.kind, nil, err
		}
	}
	if err := closeEnvelope(dec); err != nil {
		return e.kind, nil, err
	}
	data, err := e.finish()
	return e.kind, data, err
}

// openEnvelope reads the envelope's opening brace.
func openEnvelope(dec *json.Decoder) error {
	switch tok, err := dec.Token(); {
	case errors.Is(err, io.EOF):
		return errors.New("empty input")
	case err != nil:
		return err
	case tok != json.Delim('{'):
		return errors.New("not a JSON object")
	}
	return nil
}

// closeEnvelope reads the envelope's closing brace and refuses anything
// after it.
func closeEnvelope(dec *json.Decoder) error {
	if tok, err := dec.Token(); err != nil {
		return endErr(err)
	} else if tok != json.Delim('}') {
		return fmt.Errorf("unexpected %v", tok)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("data after the end of the snapshot")
	}
	return nil
}

// envelope is what decodeEnvelope has read of the envelope so far.
type envelope struct {
	dec                           *json.Decoder
	kind                          string // once known and valid
	haveFormat, haveKind, hasData bool
	decode                        func(*json.Decoder) (wireData, error) // the kind's
	data                          wireData                              // decoded in the pass
	raw                           json.RawMessage                       // data held until its kind is known
}

// field reads one key of the envelope and its value.
func (e *envelope) field() error {
	tok, err := e.dec.Token()
	if err != nil {
		return endErr(err)
	}
	key, _ := tok.(string)
	switch {
	case key == "format" && !e.haveFormat:
		e.haveFormat = true
		return e.readFormat()
	case key == "kind" && !e.haveKind:
		e.haveKind = true
		return e.readKind()
	case key == "data" && !e.hasData:
		e.hasData = true
		return e.readData()
	case key == "format" || key == "kind" || key == "data":
		return fmt.Errorf("field %q twice", key)
	default:
		return fmt.Errorf("unknown field %.40q", key)
	}
}

// readFormat refuses every format but this build's.
func (e *envelope) readFormat() error {
	var format int
	if err := e.dec.Decode(&format); err != nil {
		return fmt.Errorf("format: %w", endErr(err))
	}
	if format != wireFormat {
		return fmt.Errorf("%w %d (this build reads %d)", ErrUnknownFormat, format, wireFormat)
	}
	return nil
}

// readKind refuses an empty or unknown kind, and picks the kind's decoder.
func (e *envelope) readKind() error {
	var k string
	if err := e.dec.Decode(&k); err != nil {
		return fmt.Errorf("kind: %w", endErr(err))
	}
	if e.decode = kinds[k]; e.decode == nil {
		if k == "" {
			return errors.New("no kind")
		}
		return fmt.Errorf("unknown kind %.40q", k)
	}
	e.kind = k
	return nil
}

// readData decodes the data straight into its mirror when the format and
// kind are known, and holds it raw otherwise.
func (e *envelope) readData() error {
	var err error
	if e.haveFormat && e.haveKind {
		e.data, err = e.decode(e.dec)
	} else {
		err = e.dec.Decode(&e.raw)
	}
	return endErr(err)
}

// finish refuses an envelope without format, kind or data, and decodes
// data that came before the format or kind.
func (e *envelope) finish() (wireData, error) {
	switch {
	case !e.haveFormat:
		return nil, fmt.Errorf("%w: none given (this build reads %d)", ErrUnknownFormat, wireFormat)
	case !e.haveKind:
		return nil, errors.New("no kind")
	case !e.hasData:
		return nil, errNoData
	case e.data == nil:
		// The data came before the format or kind.
		rdec := json.NewDecoder(bytes.NewReader(e.raw))
		rdec.DisallowUnknownFields()
		return e.decode(rdec)
	}
	return e.data, nil
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

// kinds decode the data of each kind of snapshot in the envelope: one per
// snapshot type, declared in its source's file with wireKind (visitors and
// views share TrafficSnapshot, hence "traffic").
var kinds = map[string]func(*json.Decoder) (wireData, error){}

// wireKind declares a kind of the envelope and how its data decodes; a
// kind declared twice is a programming error.
func wireKind(kind string, decode func(*json.Decoder) (wireData, error)) string {
	if _, dup := kinds[kind]; dup {
		panic("sources: wire kind " + kind + " declared twice")
	}
	kinds[kind] = decode
	return kind
}

// wireSnapshot is a snapshot with a wire form: its kind and mirror, or
// no kind for a nil snapshot.
type wireSnapshot interface {
	Snapshot
	toWire() (kind string, data wireData)
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
	if s == nil {
		return "", nil, errors.New("nil snapshot")
	}
	ws, ok := s.(wireSnapshot)
	if !ok {
		return "", nil, fmt.Errorf("snapshot type %T has no wire form", s)
	}
	kind, data := ws.toWire()
	if kind == "" {
		return "", nil, fmt.Errorf("nil %T", s)
	}
	return kind, data, nil
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
	Skipped    int       `json:"skipped"`
	// TotalsSkipped is omitted when false, as every snapshot written
	// before it was.
	TotalsSkipped bool `json:"totalsSkipped,omitempty"`
}

// metaToWire converts: the two have the same fields, so a field added to
// Meta and not here fails to compile.
func metaToWire(m Meta) wireMeta {
	w := wireMeta(m)
	w.At = m.At.UTC()
	return w
}

func (m wireMeta) meta() Meta {
	out := Meta(m)
	out.At = m.At.UTC()
	return out
}

// validate checks Meta as a walk sets it; pages is how many per-page rows
// the snapshot holds (a totals-only snapshot holds none).
func (m wireMeta) validate(pages int) error {
	if err := checkTime("at", m.At); err != nil {
		return err
	}
	// The collector matches a snapshot to its window by these dates, and
	// every walk checked them (checkRange).
	from, err1 := time.Parse(analytics.DateLayout, m.DateFrom)
	to, err2 := time.Parse(analytics.DateLayout, m.DateTo)
	if err1 != nil || err2 != nil || !to.After(from) {
		return fmt.Errorf("invalid date range %.40q..%.40q: want YYYY-MM-DD with dateFrom < dateTo", m.DateFrom, m.DateTo)
	}
	if m.Requests < 0 || m.Skipped < 0 {
		return fmt.Errorf("negative requests (%d) or skipped rows (%d)", m.Requests, m.Skipped)
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
		if len(v) > bounded.MaxLabelBytes {
			return fmt.Errorf("%s %d: label value of %d bytes, over the cap of %d", what, i+1, len(v), bounded.MaxLabelBytes)
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
