package sources_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/collector"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// hostile is an API answering the attacks of issue 29 on the assistant and
// feedback endpoints (the fake answers the rest):
//   - /assistant/caller-stats names `callers` callers beside web, api and
//     other, one conversation each;
//   - /assistant has `conversations` conversations, each with its own
//     response type, resolution status and category;
//   - /feedback has `items` items, each with its own status; the first
//     `longStatuses` statuses are 1 MB long, differing in their last byte.
type hostile struct {
	fake                                        http.Handler
	callers, conversations, items, longStatuses int
}

func (h hostile) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	offset, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
	limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
	page := func(n int) (from, to int, body map[string]any) {
		to = min(offset+limit, n)
		body = map[string]any{"hasMore": to < n, "nextCursor": nil}
		if to < n {
			body["nextCursor"] = strconv.Itoa(to)
		}
		return offset, to, body
	}
	var body any
	switch p := r.URL.Path; {
	case strings.HasSuffix(p, "/assistant/caller-stats"):
		stats := map[string]int64{"web": 5, "api": 3, "other": 2, "total": 10 + int64(h.callers)}
		for i := range h.callers {
			stats[fmt.Sprintf("caller_%06d", i)] = 1
		}
		body = stats
	case strings.HasSuffix(p, "/assistant"):
		from, to, b := page(h.conversations)
		var convs []map[string]any
		for i := from; i < to; i++ {
			convs = append(convs, map[string]any{"id": fmt.Sprintf("c%06d", i), "timestamp": fixedNow().Add(-time.Duration(i) * time.Second),
				"query": "PRIVATE", "response": "PRIVATE", "sources": []any{}, "pageUrl": "/",
				"responseType": fmt.Sprintf("rt_%06d", i), "resolutionStatus": fmt.Sprintf("rs_%06d", i), "queryCategory": fmt.Sprintf("cat_%06d", i)})
		}
		b["conversations"] = convs
		body = b
	case strings.HasSuffix(p, "/feedback"):
		from, to, b := page(h.items)
		var items []map[string]any
		for i := from; i < to; i++ {
			status := fmt.Sprintf("st_%06d", i)
			if i < h.longStatuses {
				status = strings.Repeat("s", 1<<20) + strconv.Itoa(i)
			}
			items = append(items, map[string]any{"id": fmt.Sprintf("f%06d", i), "path": "/", "comment": "PRIVATE",
				"createdAt": fixedNow().Add(-time.Duration(i) * time.Second), "source": "thumbs_only", "status": status, "helpful": true})
		}
		b["feedback"] = items
		body = b
	default:
		h.fake.ServeHTTP(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

// startHostile is start with the hostile API in front of the fake.
func startHostile(t *testing.T, h hostile, opts fakeapi.Options) *env {
	t.Helper()
	clock := testutil.NewClock(fixedNow())
	opts.APIKey, opts.Projects, opts.Now, opts.Location = key, []string{project}, clock.Now, time.UTC
	fake := fakeapi.New(opts)
	h.fake = fake
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	client, err := apiclient.New(apiclient.Config{BaseURL: srv.URL, APIKey: key, Timeout: 20 * time.Second, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, fake: fake, clock: clock, cfg: sources.Config{Client: client, Location: time.UTC, Now: clock.Now, StateDir: t.TempDir()}}
}

// boundedSeries checks every label value of every series is at most
// bounded.MaxLabelBytes of valid UTF-8, and returns the series of family.
func boundedSeries(t *testing.T, got samples, family string) map[string]float64 {
	t.Helper()
	for f, series := range got {
		for lv := range series {
			for _, v := range strings.Split(lv, "|") {
				if len(v) > bounded.MaxLabelBytes || !utf8.ValidString(v) {
					t.Fatalf("%s: a label value of %d bytes", f, len(v))
				}
			}
		}
	}
	return got[family]
}

func sum(series map[string]float64) (s float64) {
	for _, v := range series {
		s += v
	}
	return s
}

func folded(t *testing.T, snap sources.Snapshot, label string) int {
	t.Helper()
	r, ok := snap.(sources.FoldReporter)
	if !ok {
		t.Fatalf("%T reports no folded values", snap)
	}
	for _, f := range r.FoldedValues() {
		if f.Label == label {
			return f.Values
		}
	}
	t.Fatalf("no folded count for label %s in %+v", label, r.FoldedValues())
	return 0
}

// TestAPILabelValuesBounded sends issue 29's attacks over HTTP: 100,000
// caller keys, a distinct response type, resolution and category per
// conversation, a distinct feedback status per item (some of them 1 MB).
// Each label keeps its documented values and ten others; other carries the
// rest, so sum() over the label still equals the API's total; the folded
// count says how many were summed; and /metrics stays small.
func TestAPILabelValuesBounded(t *testing.T) {
	t.Parallel()
	const callers, conversations, items = 100_000, 5_000, 2_000
	e := startHostile(t, hostile{callers: callers, conversations: conversations, items: items, longStatuses: 3}, fakeapi.Options{Paths: 10})
	q := e.window(1)

	asst := e.source(sources.NameAssistant)
	snap := e.walk(asst, q)
	got := collect(t, asst, snap, "1d")
	by := boundedSeries(t, got, "mintlify_assistant_turns_by_caller")
	if len(by) != 3+bounded.MaxUnknownValues {
		t.Errorf("%d caller series, want web, api, other and %d more", len(by), bounded.MaxUnknownValues)
	}
	if s := sum(by); s != 10+callers {
		t.Errorf("sum over callers = %v, want the API's %d", s, 10+callers)
	}
	// The documented other caller (2) and the callers folded (one each).
	got.want(t, "mintlify_assistant_turns_by_caller", 2+callers-bounded.MaxUnknownValues, project, "1d", "other")
	if n := folded(t, snap, "caller"); n != callers-bounded.MaxUnknownValues {
		t.Errorf("folded callers = %d, want %d", n, callers-bounded.MaxUnknownValues)
	}
	for family, label := range map[string]string{
		"mintlify_assistant_turns_by_response_type": "response_type",
		"mintlify_assistant_turns_by_resolution":    "resolution",
	} {
		series := boundedSeries(t, got, family)
		if len(series) != 2+bounded.MaxUnknownValues+1 {
			t.Errorf("%s: %d series, want the 2 documented, %d others and other", family, len(series), bounded.MaxUnknownValues)
		}
		if s := sum(series); s != conversations {
			t.Errorf("%s: sum = %v, want %d conversations", family, s, conversations)
		}
		if n := folded(t, snap, label); n < conversations-bounded.MaxUnknownValues {
			t.Errorf("folded %s = %d, want at least %d", label, n, conversations-bounded.MaxUnknownValues)
		}
	}
	cats := boundedSeries(t, got, "mintlify_assistant_turns_by_category")
	if len(cats) != sources.DefaultTopCategories {
		t.Errorf("%d categories exported, want %d", len(cats), sources.DefaultTopCategories)
	}
	if s := sum(cats) + sum(got["mintlify_assistant_turns_other_categories"]); s != conversations {
		t.Errorf("categories and other categories sum to %v, want %d", s, conversations)
	}
	// The state on disk holds each day's documented values and at most a
	// hundred others per label, not one entry per conversation.
	files, _ := filepath.Glob(filepath.Join(e.cfg.StateDir, "assistant-*.json"))
	for _, f := range files {
		if fi, err := os.Stat(f); err != nil || fi.Size() > 64<<10 {
			t.Errorf("assistant state %s: %v bytes (%v), want under 64 KiB", f, fi.Size(), err)
		}
	}
	if len(files) != 1 {
		t.Errorf("%d state files", len(files))
	}

	fb := e.source(sources.NameFeedbackItems)
	fsnap := e.walk(fb, q)
	fgot := collect(t, fb, fsnap, "1d")
	statuses := map[string]bool{}
	series := boundedSeries(t, fgot, "mintlify_feedback_items")
	for lv := range series {
		statuses[strings.Split(lv, "|")[3]] = true
	}
	if len(statuses) != 4+bounded.MaxUnknownValues+1 {
		t.Errorf("%d statuses, want the 4 documented, %d others and other", len(statuses), bounded.MaxUnknownValues)
	}
	if s := sum(series); s != items {
		t.Errorf("sum over feedback items = %v, want %d", s, items)
	}
	if n := folded(t, fsnap, "status"); n != items-bounded.MaxUnknownValues {
		t.Errorf("folded statuses = %d, want %d", n, items-bounded.MaxUnknownValues)
	}
	// The three 1 MB statuses are kept (ties in name order: "sss..."
	// sorts before "st_..."), cut to the cap, and stay distinct.
	long := 0
	for s := range statuses {
		if strings.HasPrefix(s, "sss") {
			long++
			if !strings.Contains(s, "…") || len(s) > bounded.MaxLabelBytes {
				t.Errorf("a 1 MB status became %q", s)
			}
		}
	}
	if long != 3 {
		t.Errorf("%d of the 3 long statuses exported distinctly", long)
	}

	// /metrics of both, with the folded counts: small.
	views := []sources.View{
		{Project: project, Source: sources.NameAssistant, Scope: sources.ScopePages, Window: "1d", Attempted: true, OK: true, Data: snap},
		{Project: project, Source: sources.NameFeedbackItems, Scope: sources.ScopePages, Window: "1d", Attempted: true, OK: true, Data: fsnap},
	}
	body := scrape(t, views)
	t.Logf("/metrics: %d bytes", len(body))
	if len(body) > 256<<10 {
		t.Errorf("/metrics is %d bytes under the attack, want under 256 KiB", len(body))
	}
	for _, want := range []string{
		fmt.Sprintf(`mintlify_analytics_label_values_folded{label="caller",project="docs",source="assistant",window="1d"} %d`, callers-bounded.MaxUnknownValues),
		fmt.Sprintf(`mintlify_analytics_label_values_folded{label="status",project="docs",source="feedback_items",window="1d"} %d`, items-bounded.MaxUnknownValues),
		`mintlify_analytics_label_values_folded{label="source",project="docs",source="feedback_items",window="1d"} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// Shared with replicas: the wire form keeps the folded counts.
	for _, s := range []sources.Snapshot{snap, fsnap} {
		b, err := sources.EncodeSnapshot(s)
		if err != nil {
			t.Fatal(err)
		}
		back, err := sources.DecodeSnapshot(b)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(back.(sources.FoldReporter).FoldedValues()) != fmt.Sprint(s.(sources.FoldReporter).FoldedValues()) {
			t.Errorf("folded counts lost in the wire form: %v", back.(sources.FoldReporter).FoldedValues())
		}
	}
}

type viewList []sources.View

func (v viewList) Views() []sources.View { return v }

// scrape serves views as /metrics and returns the text.
func scrape(t *testing.T, views []sources.View) string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(collector.NewAnalytics(viewList(views), nil))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	res, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d, %v", res.StatusCode, err)
	}
	return string(b)
}

// TestLongPathsCutDistinctly: a site of 70 KB paths exports each path cut
// to 256 bytes with a hash suffix: distinct paths stay distinct, and the
// walk keeps its cap.
func TestLongPathsCutDistinctly(t *testing.T) {
	t.Parallel()
	e := start(t, fakeapi.Options{Paths: 30, PathBytes: 70_000}, func(c *sources.Config) { c.Paths.MaxPaths = 20 })
	src := e.source(sources.NameVisitors)
	snap := e.walk(src, e.window(1)).(*sources.TrafficSnapshot)
	if len(snap.Paths) != 20 || snap.Dropped != 10 {
		t.Fatalf("%d paths exported, %d dropped; want 20 and 10", len(snap.Paths), snap.Dropped)
	}
	seen := map[string]bool{}
	for _, p := range snap.Paths {
		if len(p.Path) > bounded.MaxLabelBytes || !strings.Contains(p.Path, "/xxxx") || !strings.Contains(p.Path, "…") {
			t.Errorf("a 70 KB path exported as %d bytes: %.80q", len(p.Path), p.Path)
		}
		if seen[p.Path] {
			t.Errorf("two paths exported as one label value %q", p.Path)
		}
		seen[p.Path] = true
	}
	body := scrape(t, []sources.View{{Project: project, Source: sources.NameVisitors, Scope: sources.ScopePages, Window: "1d", Attempted: true, OK: true, Data: snap}})
	if len(body) > 64<<10 {
		t.Errorf("/metrics of 20 long paths is %d bytes", len(body))
	}
}

// TestWalkKeepsOnlyWhatItExports is issue 29's third attack, scaled to a
// test: 2,000 paths of 12 KB (24 MB of paths) walked at paths.max 100.
// The live heap during the walk stays at half the site or less (it grows
// about 6 MiB: the walk keeps the top 100, cut to 256 bytes, as pages of
// 100 arrive); the whole site held until the end, as before, is 24 MB
// live. Not parallel: it reads the process's heap. BenchmarkWalkPeakHeap
// measures it at 20,000 and 100,000 paths.
func TestWalkKeepsOnlyWhatItExports(t *testing.T) {
	e := start(t, fakeapi.Options{Paths: 2_000, PathBytes: 12_000}, func(c *sources.Config) { c.Paths.MaxPaths, c.PageSize = 100, 100 })
	src := e.source(sources.NameVisitors)
	q := e.window(1)
	runtime.GC()
	base := liveHeap()
	stop := sampleHeap()
	snap := e.walk(src, q).(*sources.TrafficSnapshot)
	_, peak := stop()
	grew := peak - min(peak, base)
	t.Logf("live heap grew by %.1f MiB during the walk", float64(grew)/(1<<20))
	if grew > 12<<20 {
		t.Errorf("the live heap grew by %d MiB during a walk that exports 100 paths", grew>>20)
	}
	if len(snap.Paths) != 100 || snap.Dropped != 1_900 {
		t.Errorf("%d paths, %d dropped; want 100 and 1,900", len(snap.Paths), snap.Dropped)
	}
}

// TestLongValuesElsewhereBounded: a shared snapshot (from another replica,
// through Redis) with a label value over the cap is refused rather than
// exported.
func TestLongValuesElsewhereBounded(t *testing.T) {
	t.Parallel()
	e := start(t, fakeapi.Options{Paths: 5, PathBytes: 70_000}, nil)
	src := e.source(sources.NameVisitors)
	snap := e.walk(src, e.window(1))
	b, err := sources.EncodeSnapshot(snap)
	if err != nil {
		t.Fatal(err)
	}
	cut := snap.(*sources.TrafficSnapshot).Paths[0].Path
	long := strings.Replace(string(b), cut, strings.Repeat("x", bounded.MaxLabelBytes+1), 1)
	if long == string(b) {
		t.Fatal("the test did not lengthen a path")
	}
	if _, err := sources.DecodeSnapshot([]byte(long)); err == nil || !strings.Contains(err.Error(), "over the cap") {
		t.Errorf("a shared snapshot with a %d-byte label value: %v", bounded.MaxLabelBytes+1, err)
	}
}
