package collector

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"

	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// Accept headers as Prometheus 2.42 sends them, and for the text format.
const (
	acceptOpenMetrics = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
	acceptText        = "text/plain;version=0.0.4"
)

// pair is the same views served two ways: a plain promhttp handler over a
// registry with the whole Visitors collector (the reference), and the
// exposition handler over a registry with the status collector plus the
// Encoded cache.
type pair struct {
	ref, cur http.Handler
	enc      *Encoded
}

func newPair(src ViewSource, others ...prometheus.Collector) *pair {
	ref := prometheus.NewPedanticRegistry()
	ref.MustRegister(append(others, NewAnalytics(src, nil))...)
	cur := prometheus.NewPedanticRegistry()
	cur.MustRegister(others...)
	enc := NewEncoded(src, nil)
	return &pair{
		ref: promhttp.HandlerFor(ref, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, EnableOpenMetrics: true, Registry: ref}),
		cur: NewHandler(cur, enc, Opts{Registry: cur}),
		enc: enc,
	}
}

type answer struct {
	contentType, contentEncoding string
	body                         []byte // decompressed
}

func get(t testing.TB, h http.Handler, accept string, gz bool) answer {
	t.Helper()
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Accept", accept)
	if gz {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("HTTP %d: %s", rec.Code, rec.Body)
	}
	a := answer{contentType: rec.Header().Get("Content-Type"), contentEncoding: rec.Header().Get("Content-Encoding"), body: rec.Body.Bytes()}
	if gz {
		zr, err := gzip.NewReader(bytes.NewReader(a.body)) // multistream, as Prometheus reads it
		if err != nil {
			t.Fatal(err)
		}
		if a.body, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	return a
}

// checkContiguous fails unless every family has one TYPE line and all its
// samples follow it, before any other family's.
func checkContiguous(body []byte) error {
	seen := map[string]bool{}
	current := ""
	for line := range strings.Lines(string(body)) {
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, _, _ := strings.Cut(rest, " ")
			if seen[name] {
				return fmt.Errorf("family %s split: a second TYPE line", name)
			}
			seen[name], current = true, name
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		name := line[:strings.IndexAny(line, "{ ")]
		suffix, ok := strings.CutPrefix(name, current)
		if current == "" || !ok || !slices.Contains([]string{"", "_total", "_created", "_bucket", "_sum", "_count", "_info"}, suffix) {
			return fmt.Errorf("sample %s outside its family (after TYPE %s)", strings.TrimSpace(line), current)
		}
	}
	return nil
}

// canonicalText parses a text 0.0.4 exposition into sorted lines.
func canonicalText(t testing.TB, body []byte) []string {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("text parser: %v\n%.2000s", err, body)
	}
	var out []string
	for name, mf := range mfs {
		out = append(out, fmt.Sprintf("%s HELP %q TYPE %s", name, mf.GetHelp(), mf.GetType()))
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, lp := range m.GetLabel() {
				ls = append(ls, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
			}
			slices.Sort(ls)
			out = append(out, fmt.Sprintf("%s{%s} %s", name, strings.Join(ls, ","), valueText(m)))
		}
	}
	slices.Sort(out)
	return out
}

// valueText is a parsed sample's value, timestamp and, for a histogram or
// summary, every bucket and quantile. (The protobuf text of the metric,
// m.String(), was most of the package's test time under -race.)
func valueText(m *dto.Metric) string {
	var b strings.Builder
	switch {
	case m.Gauge != nil:
		fmt.Fprintf(&b, "gauge %v", m.Gauge.GetValue())
	case m.Counter != nil:
		fmt.Fprintf(&b, "counter %v", m.Counter.GetValue())
	case m.Untyped != nil:
		fmt.Fprintf(&b, "untyped %v", m.Untyped.GetValue())
	case m.Histogram != nil:
		h := m.Histogram
		fmt.Fprintf(&b, "histogram count %d sum %v", h.GetSampleCount(), h.GetSampleSum())
		for _, bk := range h.GetBucket() {
			fmt.Fprintf(&b, " le %v: %d", bk.GetUpperBound(), bk.GetCumulativeCount())
		}
	case m.Summary != nil:
		sm := m.Summary
		fmt.Fprintf(&b, "summary count %d sum %v", sm.GetSampleCount(), sm.GetSampleSum())
		for _, q := range sm.GetQuantile() {
			fmt.Fprintf(&b, " q %v: %v", q.GetQuantile(), q.GetValue())
		}
	default:
		b.WriteString("no value")
	}
	if m.TimestampMs != nil {
		fmt.Fprintf(&b, " @%d", m.GetTimestampMs())
	}
	return b.String()
}

// canonicalOpenMetrics parses an OpenMetrics exposition with Prometheus'
// own scrape parser into sorted lines.
func canonicalOpenMetrics(t testing.TB, body []byte) []string {
	t.Helper()
	if !bytes.HasSuffix(body, []byte("\n# EOF\n")) || bytes.Count(body, []byte("# EOF")) != 1 {
		t.Fatalf("OpenMetrics exposition without exactly one # EOF at its end:\n%.500s", body[max(0, len(body)-500):])
	}
	p := textparse.NewOpenMetricsParser(body, labels.NewSymbolTable())
	var out []string
	for {
		et, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("OpenMetrics parser: %v", err)
		}
		switch et {
		case textparse.EntryHelp:
			name, help := p.Help()
			out = append(out, fmt.Sprintf("%s HELP %q", name, help))
		case textparse.EntryType:
			name, typ := p.Type()
			out = append(out, fmt.Sprintf("%s TYPE %s", name, typ))
		case textparse.EntrySeries:
			_, ts, v := p.Series()
			var ls labels.Labels
			p.Labels(&ls)
			out = append(out, fmt.Sprintf("%s %v %v", ls, ts, v))
		}
	}
	slices.Sort(out)
	return out
}

// compare checks every format and encoding against the reference and
// returns the parsed text exposition.
func (p *pair) compare(t *testing.T, what string) families {
	t.Helper()
	var fams families
	// The plain bodies of each format, by handler: a gzipped answer that
	// decompresses to the same bytes is not parsed again.
	plain := map[string][2][]byte{}
	for _, gz := range []bool{false, true} {
		for _, accept := range []string{acceptText, acceptOpenMetrics} {
			ref, cur := get(t, p.ref, accept, gz), get(t, p.cur, accept, gz)
			if !gz {
				plain[accept] = [2][]byte{ref.body, cur.body}
			}
			where := fmt.Sprintf("%s, Accept %s, gzip %v", what, accept, gz)
			if cur.contentType != ref.contentType || cur.contentEncoding != ref.contentEncoding {
				t.Errorf("%s: Content-Type %q, Content-Encoding %q; promhttp: %q, %q", where,
					cur.contentType, cur.contentEncoding, ref.contentType, ref.contentEncoding)
			}
			if err := checkContiguous(cur.body); err != nil {
				t.Errorf("%s: %v", where, err)
			}
			canonical := canonicalText
			if accept == acceptOpenMetrics {
				canonical = canonicalOpenMetrics
			}
			if gz && bytes.Equal(ref.body, plain[accept][0]) && bytes.Equal(cur.body, plain[accept][1]) {
				continue // compared above, without gzip
			}
			want, got := canonical(t, ref.body), canonical(t, cur.body)
			if !slices.Equal(got, want) {
				t.Errorf("%s: the parsed expositions differ:\n%s", where, diffLines(want, got))
			}
			if accept == acceptText && !gz {
				parser := expfmt.NewTextParser(model.UTF8Validation)
				mfs, _ := parser.TextToMetricFamilies(bytes.NewReader(cur.body))
				fams = families(mfs)
				testutil.CheckMetrics(t, string(cur.body))
			}
		}
	}
	return fams
}

func diffLines(want, got []string) string {
	var b strings.Builder
	for _, l := range want {
		if !slices.Contains(got, l) {
			fmt.Fprintf(&b, "- %.300s\n", l)
		}
	}
	for _, l := range got {
		if !slices.Contains(want, l) {
			fmt.Fprintf(&b, "+ %.300s\n", l)
		}
	}
	return b.String()
}

// windowSeries counts the data series of one window.
func windowSeries(f families, window string) int {
	n := 0
	for k := range f.data() {
		if strings.Contains(k, `window="`+window+`"`) {
			n++
		}
	}
	return n
}

// TestEncodedEqualsRegistry: the exposition handler's answer parses to
// exactly what promhttp over the whole collector gives, in text and
// OpenMetrics, plain and gzipped, as the views change the way the plan
// changes them (internal/refresh tests when): snapshots come, are
// replaced, go stale and pass midnight; the cache holds only what is
// served, in the encodings asked for.
func TestEncodedEqualsRegistry(t *testing.T) {
	day7 := analytics.Window{Name: "7d", Days: 7, Interval: time.Hour}
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 40}, now: time.Date(2026, 3, 10, 23, 0, 0, 0, time.UTC)})
	p := newPair(h.views)
	// views[i] is projects[i/2] at windows[i%2].
	projects, windows := []string{"docs", "api"}, []analytics.Window{day1, day7}
	views := make([]sources.View, 4)
	for i := range views {
		views[i] = sources.View{Project: projects[i/2], Source: sources.NameVisitors, Scope: sources.ScopePages, Window: windows[i%2].Name, Interval: time.Minute}
	}
	// walk replaces the snapshots of window w of every project.
	walk := func(w analytics.Window) {
		for i := range views {
			if windows[i%2] == w {
				views[i] = h.walk(walkSpec{project: projects[i/2], window: w})
			}
		}
		h.views.set(views...)
	}
	// fail marks the walks of w failed; keep: their snapshots still served.
	fail := func(w analytics.Window, keep bool) {
		for i := range views {
			if windows[i%2] == w {
				views[i].OK, views[i].Failures = false, views[i].Failures+1
				if !keep {
					views[i].Data = nil
				}
			}
		}
		h.views.set(views...)
	}

	h.views.set(views...)
	if n := len(p.compare(t, "before any walk").data()); n != 0 {
		t.Fatalf("%d data series before any walk", n)
	}
	if b := p.enc.Bytes(); b != [NumEncodings]int{} {
		t.Fatalf("cache holds %v bytes before any walk", b)
	}

	walk(day1)
	walk(day7)
	fams := p.compare(t, "first snapshots")
	if n := len(fams.data()); n != 2*2*(3+3*40) {
		t.Fatalf("%d data series, want %d", n, 2*2*(3+3*40))
	}
	first := p.enc.Bytes()
	for _, e := range Encodings {
		if (first[e.Index()] > 0) != e.Gzip {
			t.Errorf("%s holds %d bytes after a scrape asked for it: only gzipped encodings are kept", e, first[e.Index()])
		}
	}

	h.clock.Advance(2 * time.Minute)
	walk(day1) // replaces both 1d snapshots; 7d stays
	p.compare(t, "1d replaced")
	if p.enc.Bytes() == first {
		t.Error("cache unchanged after new snapshots") // counts grow through the day
	}

	h.clock.Advance(12 * time.Minute)
	fail(day1, true)
	p.compare(t, "1d failed, last good data served")
	fail(day1, false)
	fams = p.compare(t, "1d stale")
	if windowSeries(fams, "1d") != 0 || windowSeries(fams, "7d") != 2*(3+3*40) {
		t.Fatalf("stale 1d: %d 1d and %d 7d data series", windowSeries(fams, "1d"), windowSeries(fams, "7d"))
	}

	h.clock.Set(time.Date(2026, 3, 10, 23, 55, 0, 0, time.UTC))
	walk(day1)
	p.compare(t, "recovered")

	h.clock.Set(time.Date(2026, 3, 11, 0, 1, 0, 0, time.UTC))
	fail(day1, false) // past midnight yesterday's 1d is not served
	fams = p.compare(t, "past midnight, before the walk")
	if windowSeries(fams, "1d") != 0 || windowSeries(fams, "7d") == 0 {
		t.Fatalf("past midnight: %d 1d and %d 7d data series", windowSeries(fams, "1d"), windowSeries(fams, "7d"))
	}
	walk(day1)
	p.compare(t, "past midnight, after the walk")
}

// TestEncodedAheadOfScrapes: with Run, a snapshot is encoded when it is
// published, in the encoding Prometheus asks for (OpenMetrics, gzip),
// before any scrape; scrapes then read no view and encode nothing; plain
// text is never kept; the text gzip encoding is kept from the first scrape
// that asks for it on.
func TestEncodedAheadOfScrapes(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 40}})
	src := &countingViews{src: h.views}
	h.views.set(h.walk(walkSpec{}))
	p := newPair(src)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); p.enc.Run(ctx, time.Hour) }() // no tick within the test
	t.Cleanup(func() { cancel(); <-done })
	testutil.Eventually(t, 0, "Run started", p.enc.running.Load)
	omgz := Encoding{Format: OpenMetrics, Gzip: true}
	textgz := Encoding{Format: Text, Gzip: true}
	b := p.enc.Bytes()
	for _, e := range Encodings {
		if (b[e.Index()] > 0) != (e == omgz) {
			t.Errorf("before any scrape, %s holds %d bytes; want only %s encoded", e, b[e.Index()], omgz)
		}
	}
	reads := src.n.Load()
	p.compare(t, "served by Run's state") // every encoding, against the whole collector
	if n := src.n.Load(); n != reads+4 {  // the reference handler's 4 scrapes only
		t.Errorf("scrapes read the views %d times, want 0", n-reads-4)
	}
	b = p.enc.Bytes()
	if b[textgz.Index()] == 0 || b[omgz.Index()] == 0 {
		t.Errorf("gzipped encodings not kept after scrapes asked for them: %v", b)
	}
	for _, e := range []Encoding{{Format: Text}, {Format: OpenMetrics}} {
		if b[e.Index()] != 0 {
			t.Errorf("%s holds %d bytes: plain encodings are not kept", e, b[e.Index()])
		}
	}
}

// countingViews counts the reads of a ViewSource.
type countingViews struct {
	src ViewSource
	n   atomic.Int64
}

func (c *countingViews) Views() []sources.View { c.n.Add(1); return c.src.Views() }

// TestEncodedOddPaths: label values that need escaping, a site without
// paths and an empty window encode as the registry does.
func TestEncodedOddPaths(t *testing.T) {
	at := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	odd := &analytics.Snapshot{At: at, Site: analytics.Counts{Human: 10, AI: 3, Total: 12}, Paths: []analytics.PathCounts{
		{Path: `/a "quoted" page`, Counts: analytics.Counts{Human: 1, AI: 0, Total: 1}},
		{Path: `/back\slash\`, Counts: analytics.Counts{Human: 2, AI: 1e7, Total: 1e7}},
		{Path: "/new\nline", Counts: analytics.Counts{Human: 0.5, AI: 123456789012, Total: 123456789012}},
		{Path: "/ünïcödé/\uFFFD/日本", Counts: analytics.Counts{Human: 3}},
		{Path: "/{braces},=commas# not a comment", Counts: analytics.Counts{Human: 4, AI: 4, Total: 7}},
	}}
	src := staticViews{
		{Project: "docs", Source: "visitors", Scope: "pages", Window: "1d", Attempted: true, OK: true, LastSuccess: at, Interval: time.Hour, Data: &sources.TrafficSnapshot{Snapshot: odd}},
		{Project: `we"ird\proj`, Source: "visitors", Scope: "pages", Window: "7d", Attempted: true, OK: true, LastSuccess: at, Data: &sources.TrafficSnapshot{Snapshot: &analytics.Snapshot{At: at, Site: analytics.Counts{Human: 1, AI: 1, Total: 1}}}},
		{Project: "empty", Window: "1d", Attempted: true, OK: false},
	}
	p := newPair(src)
	p.compare(t, "odd paths")
	p = newPair(src[1:])
	fams := p.compare(t, "no paths anywhere")
	if _, ok := fams[pageVisitors]; ok {
		t.Error("a page family without series is exported")
	}
}

// TestPublishedAfterEncoded: the views the status page shows (Published)
// are those of the last update, stored once scrapes serve their
// snapshots: a walk that ended after the last update is not published yet
// (issue 38, item 4: a row read "ok" half a second before /metrics had its
// series).
func TestPublishedAfterEncoded(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 5}})
	e := NewEncoded(h.views, nil)
	if e.Published() != nil {
		t.Fatal("published before any update")
	}
	first := h.walk(walkSpec{})
	h.views.set(first)
	e.update()
	if got := e.Published(); len(got) != 1 || got[0].Data != first.Data {
		t.Fatalf("published %+v, want the first walk", got)
	}
	// A new walk ends: the scheduler has it, the encoder has not read it.
	second := h.walk(walkSpec{})
	h.views.set(second)
	if got := e.Published(); got[0].Data != first.Data {
		t.Error("a walk published before the encoder read it")
	}
	e.update()
	if got := e.Published(); got[0].Data != second.Data {
		t.Error("the encoder read the new walk but did not publish it")
	}
}

// TestPrimeEncodesBeforeScrapes: Prime encodes what the views hold (what a
// restart restored) at its faster level before any scrape, and serves the
// same series as the registry; the usual level is the smaller.
func TestPrimeEncodesBeforeScrapes(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 400}})
	h.views.set(h.walk(walkSpec{}), h.walk(walkSpec{window: days7}))
	p := newPair(h.views)
	omgz := Encoding{Format: OpenMetrics, Gzip: true}
	p.enc.Prime()
	primed := p.enc.Bytes()[omgz.Index()]
	if primed == 0 {
		t.Fatal("Prime encoded nothing")
	}
	p.compare(t, "primed")
	// The same snapshots encoded as a walk's would be: at chunkGzipLevel.
	q := newPair(h.views)
	q.enc.update()
	if usual := q.enc.Bytes()[omgz.Index()]; usual >= primed {
		t.Errorf("the usual level took %d bytes, Prime's %d: Prime's is not the faster, larger level", usual, primed)
	}
}
