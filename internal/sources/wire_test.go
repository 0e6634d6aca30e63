package sources_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// wireCases are the fakes and configurations the round trip walks every
// source against: between them, every field that changes a sample or Meta
// takes more than one value (see the coverage check).
var wireCases = []struct {
	name  string
	opts  fakeapi.Options
	mod   func(*sources.Config)
	fault func(*fakeapi.Server)
}{
	{name: "default", opts: fakeapi.Options{Paths: 300}, mod: func(c *sources.Config) {
		c.Settings = map[string]int{"top_queries": 10, "top_categories": 2}
	}},
	{name: "capped", opts: fakeapi.Options{Paths: 300}, mod: func(c *sources.Config) {
		c.Paths, c.Settings = analytics.PathPolicy{MaxPaths: 40}, map[string]int{"feedback_pages": 10, "top_categories": -1}
	}},
	{name: "empty site", opts: fakeapi.Options{PathsByProject: map[string]int{project: 0}}, mod: func(c *sources.Config) {
		c.Settings = map[string]int{"top_queries": 5}
	}},
	{name: "odd answers", opts: fakeapi.Options{Paths: 30}, mod: func(c *sources.Config) {
		c.Paths = analytics.PathPolicy{Include: regexp.MustCompile(`^/matches-nothing$`)}
	}, fault: func(f *fakeapi.Server) {
		for _, ep := range []string{fakeapi.Feedback, fakeapi.Assistant, fakeapi.AssistantCallerStats} {
			f.SetFault(ep, fakeapi.Fault{UnknownEnum: true})
		}
		f.SetFault(fakeapi.FeedbackByPage, fakeapi.Fault{DuplicatePath: true})
	}},
}

// TestSnapshotWireRoundTrip: every source's real snapshots, walked over
// HTTP for pages and for totals only, decode to a snapshot of the same
// type with the same Meta and the very same samples, in the same order,
// and encode again to the same bytes.
func TestSnapshotWireRoundTrip(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	covered := map[string]bool{}
	t.Run("cases", func(t *testing.T) {
		for _, c := range wireCases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				e := start(t, c.opts, c.mod)
				if c.fault != nil {
					c.fault(e.fake)
				}
				for _, def := range sources.All() {
					src := e.source(def.Name)
					for _, totalsOnly := range []bool{false, true} {
						q := e.window(30)
						q.TotalsOnly = totalsOnly
						snap := e.walk(src, q)
						what := fmt.Sprintf("%s, totals only %v", def.Name, totalsOnly)
						back := roundTrip(t, what, src.Families(), snap)
						got := collect(t, src, back, "30d")
						mu.Lock()
						noteCoverage(covered, def.Name, snap, got)
						mu.Unlock()
					}
				}
			})
		}
	})
	for _, want := range []string{
		"visitors paths null", "visitors paths empty", "visitors dropped", "views dropped", "views totals only",
		"feedback truncated", "feedback not truncated", "feedback_items pending", "feedback_items none pending",
		"feedback_items unknown value", "searches queries", "searches totals only",
		"assistant other categories", "assistant unknown value",
	} {
		if !covered[want] {
			t.Errorf("no case has %s: the round trip did not test it", want)
		}
	}
}

// roundTrip encodes and decodes snap and compares; it returns the decoded
// snapshot.
func roundTrip(t *testing.T, what string, families []*sources.Family, snap sources.Snapshot) sources.Snapshot {
	t.Helper()
	b, err := sources.EncodeSnapshot(snap)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	back, err := sources.DecodeSnapshot(b)
	if err != nil {
		t.Fatalf("%s: decoding its own encoding: %v", what, err)
	}
	if reflect.TypeOf(back) != reflect.TypeOf(snap) {
		t.Fatalf("%s: %T decoded as %T", what, snap, back)
	}
	if err := sameMeta(snap.Meta(), back.Meta()); err != nil {
		t.Errorf("%s: %v", what, err)
	}
	before, after := emitted(families, snap), emitted(families, back)
	if len(before) == 0 {
		t.Errorf("%s: the snapshot emits nothing", what)
	}
	if d := diff(before, after); d != "" {
		t.Errorf("%s: samples differ after the round trip: %s", what, d)
	}
	// The collector reads these beside the families (paths_dropped, for
	// walks of paths only).
	if s, ok := snap.(*sources.TrafficSnapshot); ok {
		d := back.(*sources.TrafficSnapshot)
		if s.Dropped != d.Dropped || (s.Paths == nil) != (d.Paths == nil) {
			t.Errorf("%s: dropped %d, paths nil %v; decoded: %d, %v", what, s.Dropped, s.Paths == nil, d.Dropped, d.Paths == nil)
		}
	}
	// Nothing the encoding holds is lost on decoding.
	again, err := sources.EncodeSnapshot(back)
	if err != nil || !bytes.Equal(again, b) {
		t.Errorf("%s: encoding the decoded snapshot: %v; same bytes %v", what, err, bytes.Equal(again, b))
	}
	return back
}

func sameMeta(a, b sources.Meta) error {
	if !a.At.Equal(b.At) || a.DateFrom != b.DateFrom || a.DateTo != b.DateTo || a.Requests != b.Requests || a.TotalsOnly != b.TotalsOnly {
		return fmt.Errorf("meta %+v decoded as %+v", a, b)
	}
	return nil
}

// emitted lists every sample of families in s, in the order emitted, with
// exact values ("-0" and 0 differ); it reports a series emitted twice
// (a scrape would fail) as a sample of its own that no snapshot emits.
func emitted(families []*sources.Family, s sources.Snapshot) []string {
	var out []string
	for _, f := range families {
		seen := map[string]bool{}
		f.Emit(s, project, "30d", func(v float64, lv ...string) {
			// Quoted, label values cannot run into each other.
			k := fmt.Sprintf("%s%q", f.Name, lv)
			if seen[k] {
				out = append(out, "DUPLICATE "+k)
			}
			seen[k] = true
			out = append(out, k+" "+strconv.FormatFloat(v, 'g', -1, 64))
		})
	}
	return out
}

// diff describes the first difference of two sample lists.
func diff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("sample %d: %q, then %q", i, a[i], b[i])
		}
	}
	if len(a) != len(b) {
		return fmt.Sprintf("%d samples, then %d", len(a), len(b))
	}
	return ""
}

// noteCoverage records which values of the fields that matter a walk had.
func noteCoverage(covered map[string]bool, name string, snap sources.Snapshot, got samples) {
	note := func(what string, ok bool) {
		if ok {
			covered[name+" "+what] = true
		}
	}
	note("totals only", snap.Meta().TotalsOnly)
	if s, ok := snap.(*sources.TrafficSnapshot); ok {
		note("paths null", s.Paths == nil)
		note("paths empty", s.Paths != nil && len(s.Paths) == 0)
		note("dropped", s.Dropped > 0)
	}
	for _, v := range got["mintlify_feedback_pages_truncated"] {
		note("truncated", v == 1)
		note("not truncated", v == 0)
	}
	for _, v := range got["mintlify_feedback_oldest_pending_age_seconds"] {
		note("pending", v > 0)
		note("none pending", v == 0)
	}
	note("queries", len(got["mintlify_search_query_hits"]) > 0)
	for _, v := range got["mintlify_assistant_turns_other_categories"] {
		note("other categories", v > 0)
	}
	for family, series := range got {
		for k := range series {
			note("unknown value", strings.Contains(k, fakeapi.UnknownEnumValue) && family != "mintlify_assistant_turns_by_caller")
		}
	}
}

// wireSeeds are real encodings of every source, small enough to fuzz.
func wireSeeds(tb testing.TB) map[string][]byte {
	tb.Helper()
	e := start(tb, fakeapi.Options{Paths: 20}, func(c *sources.Config) { c.Settings = map[string]int{"top_queries": 5, "top_categories": 2} })
	out := map[string][]byte{}
	for _, def := range sources.All() {
		src := e.source(def.Name)
		for _, totalsOnly := range []bool{false, true} {
			q := e.window(7)
			q.TotalsOnly = totalsOnly
			b, err := sources.EncodeSnapshot(e.walk(src, q))
			if err != nil {
				tb.Fatalf("%s: %v", def.Name, err)
			}
			out[fmt.Sprintf("%s totals-only=%v", def.Name, totalsOnly)] = b
		}
	}
	return out
}

// edit decodes an encoding as generic JSON, lets f change it and encodes
// it again, the envelope's keys in EncodeSnapshot's order (format, kind,
// data, then any other).
func edit(t *testing.T, b []byte, f func(env, data map[string]any)) []byte {
	t.Helper()
	var env map[string]any
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatal(err)
	}
	data, _ := env["data"].(map[string]any)
	f(env, data)
	keys := slices.Sorted(maps.Keys(env))
	slices.SortStableFunc(keys, func(a, b string) int {
		rank := func(k string) int {
			if i := slices.Index([]string{"format", "kind", "data"}, k); i >= 0 {
				return i
			}
			return 3
		}
		return rank(a) - rank(b)
	})
	out := []byte("{")
	for i, k := range keys {
		kb, err1 := json.Marshal(k)
		vb, err2 := json.Marshal(env[k])
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(append(append(out, kb...), ':'), vb...)
	}
	return append(out, '}')
}

func metaOf(data map[string]any) map[string]any { return data["meta"].(map[string]any) }

// TestDecodeSnapshotRefuses: garbage, other formats, unknown kinds,
// truncated input and data no walk produces are each an error that names
// the problem (never a path or query: they may hold personal data), and
// no snapshot.
func TestDecodeSnapshotRefuses(t *testing.T) {
	t.Parallel()
	seeds := wireSeeds(t)
	traffic, items := seeds["visitors totals-only=false"], seeds["feedback_items totals-only=false"]
	var firstPath string
	edit(t, traffic, func(_, data map[string]any) { firstPath = data["paths"].([]any)[0].(map[string]any)["path"].(string) })

	cases := []struct {
		name  string
		input []byte
		want  string // in the error
	}{
		{"empty", nil, "empty input"},
		{"whitespace", []byte(" \n"), "empty input"},
		{"garbage", []byte("\x00\x01 not JSON"), "invalid character"},
		{"an array", []byte(`[1,2,3]`), "not a JSON object"},
		{"null", []byte(`null`), "not a JSON object"},
		{"no format", []byte(`{"kind":"traffic","data":{}}`), "unknown snapshot format: none given"},
		{"format twice", []byte(`{"format":3,"format":3,"kind":"traffic","data":{}}`), `field "format" twice`},
		{"format 1", edit(t, traffic, func(env, _ map[string]any) { env["format"] = 1 }), "unknown snapshot format 1 (this build reads 3)"},
		{"format as a string", edit(t, traffic, func(env, _ map[string]any) { env["format"] = "1" }), "cannot unmarshal string"},
		{"format 1.5", edit(t, traffic, func(env, _ map[string]any) { env["format"] = 1.5 }), "cannot unmarshal number 1.5"},
		{"unknown kind", edit(t, traffic, func(env, _ map[string]any) { env["kind"] = "spreadsheet" }), `unknown kind "spreadsheet"`},
		{"empty kind", edit(t, traffic, func(env, _ map[string]any) { env["kind"] = "" }), "no kind"},
		{"no kind", edit(t, traffic, func(env, _ map[string]any) { delete(env, "kind") }), "no kind"},
		{"no data", edit(t, traffic, func(env, _ map[string]any) { delete(env, "data") }), "no data"},
		{"null data", edit(t, traffic, func(env, _ map[string]any) { env["data"] = nil }), "no data"},
		{"null data first", []byte(`{"data":null,"kind":"traffic","format":3}`), "no data"},
		{"data first of another kind", []byte(`{"data":{"site":{}},"kind":"feedback","format":3}`), `unknown field "site"`},
		{"data first, format 4 last", []byte(`{"data":{},"kind":"traffic","format":4}`), "unknown snapshot format 4"},
		{"data not an object", edit(t, traffic, func(env, _ map[string]any) { env["data"] = []int{1} }), "cannot unmarshal array"},
		{"data of another kind", edit(t, traffic, func(env, _ map[string]any) { env["kind"] = "feedback" }), "unknown field"},
		{"unknown field in data", edit(t, traffic, func(_, data map[string]any) { data["sampled"] = true }), `unknown field "sampled"`},
		{"unknown field in envelope", edit(t, traffic, func(env, _ map[string]any) { env["compressed"] = true }), `unknown field "compressed"`},
		{"data after the end", append(slices.Clone(traffic), " {}"...), "data after the end"},
		{"two snapshots", append(slices.Clone(traffic), traffic...), "data after the end"},
		{"number out of range", bytes.Replace(traffic, []byte(`"dropped":0`), []byte(`"dropped":1e400`), 1), "cannot unmarshal number 1e400"},
		{"negative requests", edit(t, traffic, func(_, data map[string]any) { metaOf(data)["requests"] = -1 }), "negative requests (-1)"},
		{"negative dropped", edit(t, traffic, func(_, data map[string]any) { data["dropped"] = -3 }), "negative dropped paths (-3)"},
		{"negative site count", edit(t, traffic, func(_, data map[string]any) {
			data["site"].(map[string]any)["ai"] = -1
		}), "site: value -1, want a finite value >= 0"},
		{"negative page count", edit(t, traffic, func(_, data map[string]any) {
			data["paths"].([]any)[2].(map[string]any)["total"] = -0.5
		}), "path 3: value -0.5"},
		{"negative feedback count", edit(t, items, func(_, data map[string]any) {
			data["counts"].([]any)[0].(map[string]any)["value"] = -1
		}), "count 1: value -1"},
		{"no time", edit(t, traffic, func(_, data map[string]any) { delete(metaOf(data), "at") }), "no at time"},
		{"time a zone shifts out of range", edit(t, traffic, func(_, data map[string]any) {
			metaOf(data)["at"] = "0001-01-01T00:30:00+01:00"
		}), "at time in year 0, outside 1..9999"},
		{"time not RFC 3339", edit(t, traffic, func(_, data map[string]any) { metaOf(data)["at"] = "yesterday" }), "cannot parse"},
		{"bad date", edit(t, traffic, func(_, data map[string]any) { metaOf(data)["dateFrom"] = "2025-02-30" }), "invalid date range"},
		{"empty range", edit(t, traffic, func(_, data map[string]any) { metaOf(data)["dateTo"] = metaOf(data)["dateFrom"] }), "invalid date range"},
		{"totals only with pages", edit(t, traffic, func(_, data map[string]any) { metaOf(data)["totalsOnly"] = true }), "a totals-only snapshot with 20 per-page rows"},
		{"duplicate path", edit(t, traffic, func(_, data map[string]any) {
			paths := data["paths"].([]any)
			paths[4].(map[string]any)["path"] = paths[0].(map[string]any)["path"]
		}), "path 5: duplicate series"},
		{"duplicate source and status", edit(t, items, func(_, data map[string]any) {
			counts := data["counts"].([]any)
			counts[1] = maps.Clone(counts[0].(map[string]any))
		}), "count 2: duplicate series"},
		{"zero oldest pending", edit(t, items, func(_, data map[string]any) {
			data["oldestPending"] = time.Time{}
		}), "no oldestPending time"},
	}
	for _, c := range cases {
		s, err := sources.DecodeSnapshot(c.input)
		if err == nil || s != nil {
			t.Errorf("%s: snapshot %v, error %v; want an error and no snapshot", c.name, s != nil, err)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q, want it to say %q", c.name, err, c.want)
		}
		// Another format is a cache miss to the caller, the rest damage.
		if errors.Is(err, sources.ErrUnknownFormat) != strings.Contains(c.want, "unknown snapshot format") {
			t.Errorf("%s: errors.Is(ErrUnknownFormat) = %v", c.name, errors.Is(err, sources.ErrUnknownFormat))
		}
		if strings.Contains(err.Error(), firstPath) {
			t.Errorf("%s: error quotes a path: %v", c.name, err)
		}
	}

	// Keys in another order (here sorted: data first) read the same.
	for name, b := range seeds {
		var env map[string]any
		if err := json.Unmarshal(b, &env); err != nil {
			t.Fatal(err)
		}
		reordered, err := json.Marshal(env)
		if err != nil || !bytes.HasPrefix(reordered, []byte(`{"data":`)) {
			t.Fatalf("%s: reordered %.20s...", name, reordered)
		}
		a, err1 := sources.DecodeSnapshot(b)
		r, err2 := sources.DecodeSnapshot(reordered)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v, reordered: %v", name, err1, err2)
		}
		if d := diff(emitted(allFamilies(), a), emitted(allFamilies(), r)); d != "" || sameMeta(a.Meta(), r.Meta()) != nil {
			t.Errorf("%s: reordered keys read differently: %s %v", name, d, sameMeta(a.Meta(), r.Meta()))
		}
	}

	// Every proper prefix of every encoding (as a write cut short, or a
	// value cut at a size limit, leaves it) is refused.
	for name, b := range seeds {
		for n := range len(b) {
			if s, err := sources.DecodeSnapshot(b[:n]); err == nil || s != nil {
				t.Fatalf("%s cut to %d of %d bytes: decoded", name, n, len(b))
			}
		}
	}
}

// TestEncodeSnapshotRefuses: what DecodeSnapshot would refuse is not
// written in the first place, so that another replica never reads it.
func TestEncodeSnapshotRefuses(t *testing.T) {
	t.Parallel()
	at := fixedNow()
	traffic := func(mod func(*analytics.Snapshot)) sources.Snapshot {
		s := &analytics.Snapshot{At: at, DateFrom: "2025-03-14", DateTo: "2025-03-15", Requests: 1,
			Site:  analytics.Counts{Human: 2, AI: 1, Total: 3},
			Paths: []analytics.PathCounts{{Path: "/a", Counts: analytics.Counts{Human: 1, Total: 1}}, {Path: "/b", Counts: analytics.Counts{AI: 1, Total: 1}}}}
		mod(s)
		return &sources.TrafficSnapshot{Snapshot: s}
	}
	if _, err := sources.EncodeSnapshot(traffic(func(*analytics.Snapshot) {})); err != nil {
		t.Fatalf("the valid snapshot the cases start from: %v", err)
	}
	cases := []struct {
		name string
		snap sources.Snapshot
		want string
	}{
		{"nil", nil, "nil snapshot"},
		{"typed nil", (*sources.TrafficSnapshot)(nil), "nil *sources.TrafficSnapshot"},
		{"no visitors snapshot", &sources.TrafficSnapshot{}, "nil *sources.TrafficSnapshot"},
		{"foreign type", foreign{}, "type sources_test.foreign has no wire form"},
		{"NaN", traffic(func(s *analytics.Snapshot) { s.Site.AI = math.NaN() }), "site: value NaN"},
		{"infinity", traffic(func(s *analytics.Snapshot) { s.Paths[1].Total = math.Inf(1) }), "path 2: value +Inf"},
		{"invalid UTF-8", traffic(func(s *analytics.Snapshot) { s.Paths[0].Path = "/\xff" }), "path 1: label value not valid UTF-8"},
		{"duplicate path", traffic(func(s *analytics.Snapshot) { s.Paths[1].Path = "/a" }), "path 2: duplicate series"},
		{"no time", traffic(func(s *analytics.Snapshot) { s.At = time.Time{} }), "no at time"},
		{"no dates", traffic(func(s *analytics.Snapshot) { s.DateFrom, s.DateTo = "", "" }), "invalid date range"},
	}
	for _, c := range cases {
		b, err := sources.EncodeSnapshot(c.snap)
		if err == nil || b != nil {
			t.Errorf("%s: encoded %q, error %v; want an error", c.name, b, err)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q, want it to say %q", c.name, err, c.want)
		}
	}
}

type foreign struct{}

func (foreign) Meta() sources.Meta { return sources.Meta{} }

// allFamilies are the families of every source: a snapshot emits only
// through its own source's.
func allFamilies() []*sources.Family {
	var out []*sources.Family
	for _, def := range sources.All() {
		out = append(out, def.Families...)
	}
	return out
}

// FuzzDecodeSnapshot: any input either is refused or decodes to a
// snapshot that encodes again, and that encoding decodes to the same Meta
// and samples (none twice) and encodes to itself.
func FuzzDecodeSnapshot(f *testing.F) {
	for _, b := range wireSeeds(f) {
		f.Add(b)
	}
	for _, s := range []string{``, `{}`, `null`, `{"format":1}`, `{"format":1,"kind":"traffic","data":null}`, `{"format":2,"kind":"traffic","data":{}}`, `{"format":3,"kind":"traffic","data":{}}`} {
		f.Add([]byte(s))
	}
	families := allFamilies()
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := sources.DecodeSnapshot(b)
		if err != nil {
			if s != nil {
				t.Fatalf("error %v with a snapshot", err)
			}
			return
		}
		b2, err := sources.EncodeSnapshot(s)
		if err != nil {
			t.Fatalf("decoded, but does not encode again: %v", err)
		}
		s2, err := sources.DecodeSnapshot(b2)
		if err != nil {
			t.Fatalf("its encoding %s does not decode: %v", b2, err)
		}
		if err := sameMeta(s.Meta(), s2.Meta()); err != nil {
			t.Fatal(err)
		}
		before := emitted(families, s)
		if d := diff(before, emitted(families, s2)); d != "" {
			t.Fatalf("samples differ after encoding again: %s", d)
		}
		for _, x := range before {
			if strings.HasPrefix(x, "DUPLICATE ") {
				t.Fatalf("a series emitted twice: %q", x)
			}
		}
		if b3, err := sources.EncodeSnapshot(s2); err != nil || !bytes.Equal(b3, b2) {
			t.Fatalf("encoding is not a fixed point: %v\n%s\n%s", err, b2, b3)
		}
	})
}

// BenchmarkEncodeDecodeTrafficSnapshot: a walk of 10,000 paths (the size
// BENCHMARKS.md measures scrapes at) through the wire form, as one replica
// writes it to Redis and another reads it.
func BenchmarkEncodeDecodeTrafficSnapshot(b *testing.B) {
	e := start(b, fakeapi.Options{Paths: 10000}, nil)
	snap := e.walk(e.source(sources.NameVisitors), e.window(30))
	if n := len(snap.(*sources.TrafficSnapshot).Paths); n != 10000 {
		b.Fatalf("%d paths, want 10000", n)
	}
	enc, err := sources.EncodeSnapshot(snap)
	if err != nil {
		b.Fatal(err)
	}
	run := func(name string, f func() error) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := f(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(enc)), "encoded-bytes")
		})
	}
	run("encode", func() error { _, err := sources.EncodeSnapshot(snap); return err })
	run("decode", func() error { _, err := sources.DecodeSnapshot(enc); return err })
	run("both", func() error {
		out, err := sources.EncodeSnapshot(snap)
		if err == nil {
			_, err = sources.DecodeSnapshot(out)
		}
		return err
	})
}
