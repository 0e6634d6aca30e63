package history

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/refresh"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

const testKey = "mint_backfill_secret_42"

var today = time.Date(2026, 3, 20, 15, 0, 0, 0, time.UTC)

type rig struct {
	fake   *fakeapi.Server
	client *apiclient.Client
	budget *budget.Budget
	// now is the clock of the budget and of the backfill.
	now func() time.Time

	mu       sync.Mutex
	requests []string
}

// newRig serves a fake API; the budget and the backfill share its clock
// (opts.Now, default today).
func newRig(t testing.TB, opts fakeapi.Options, limit int, window time.Duration) *rig {
	t.Helper()
	opts.APIKey = testKey
	if opts.Now == nil {
		opts.Now = func() time.Time { return today }
	}
	fake := fakeapi.New(opts)
	r := &rig{fake: fake, now: opts.Now}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.requests = append(r.requests, req.URL.Path+"?"+req.URL.RawQuery)
		r.mu.Unlock()
		fake.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	b, err := budget.New(budget.Config{Limit: limit, Window: window, Now: opts.Now})
	if err != nil {
		t.Fatal(err)
	}
	client, err := apiclient.New(apiclient.Config{BaseURL: srv.URL, APIKey: testKey, AnalyticsBudget: b})
	if err != nil {
		t.Fatal(err)
	}
	r.client, r.budget = client, b
	return r
}

// sent returns the requests the fake received so far, path and query.
func (r *rig) sent() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.requests)
}

// visitorsOnly are projects backfilling visitors alone over windows, in
// zone loc.
func visitorsOnly(loc *time.Location, windows []analytics.Window, ids ...string) []refresh.Project {
	return withSources(loc, windows, []string{sources.NameVisitors}, ids...)
}

// withSources are projects with the sources names over windows, in zone loc.
func withSources(loc *time.Location, windows []analytics.Window, names []string, ids ...string) []refresh.Project {
	out := make([]refresh.Project, len(ids))
	for i, id := range ids {
		out[i] = refresh.Project{Project: analytics.Project{ID: id, Windows: windows, Location: loc}}
		for _, n := range names {
			out[i].Sources = append(out[i].Sources, sources.Spec{Name: n})
		}
	}
	return out
}

func day(s string) time.Time {
	d, err := time.Parse(analytics.DateLayout, s)
	if err != nil {
		panic(err)
	}
	return d
}

func (r *rig) run(t *testing.T, ctx context.Context, cfg Config) (string, string, error) {
	t.Helper()
	var out, progress bytes.Buffer
	cfg.Stdout = &out
	if cfg.Now == nil {
		cfg.Now = r.now
	}
	if cfg.StateDir == "" {
		cfg.StateDir = filepath.Join(t.TempDir(), "days")
	}
	err := Backfill(ctx, r.client, r.budget, cfg, &progress)
	if strings.Contains(out.String()+progress.String(), testKey) {
		t.Fatal("the API key appeared in the output or the progress")
	}
	return out.String(), progress.String(), err
}

// sample is one parsed line of the OpenMetrics output.
type sample struct {
	name, labels string
	value        float64
	ts           int64
}

var lineRE = regexp.MustCompile(`^([a-z_]+)\{(.*)\} (\S+) (\d+)$`)

func parse(t *testing.T, text string) []sample {
	t.Helper()
	if !strings.HasSuffix(text, "# EOF\n") {
		t.Fatalf("output does not end with # EOF")
	}
	var out []sample
	seenFamily := map[string]bool{}
	last := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "# TYPE ") {
			name := strings.Fields(line)[2]
			if seenFamily[name] {
				t.Fatalf("family %s appears twice: families must not interleave", name)
			}
			seenFamily[name], last = true, name
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		m := lineRE.FindStringSubmatch(line)
		if m == nil || m[1] != last {
			t.Fatalf("bad sample line %q (family %s)", line, last)
		}
		v, _ := strconv.ParseFloat(m[3], 64)
		ts, _ := strconv.ParseInt(m[4], 10, 64)
		out = append(out, sample{m[1], m[2], v, ts})
	}
	return out
}

// TestBackfillRequestsValuesAndTimes: exactly ceil(paths/250) requests per
// project and day, the API's value for each day as window="yesterday",
// stamped at the next local midnight in the time zone.
func TestBackfillRequestsValuesAndTimes(t *testing.T) {
	t.Parallel()
	r := newRig(t, fakeapi.Options{PathsByProject: map[string]int{"docs": 600, "api": 250}}, 1000, 0)
	ny, _ := time.LoadLocation("America/New_York")
	cfg := Config{Projects: visitorsOnly(ny, nil, "docs", "api"), From: day("2026-03-07"), To: day("2026-03-09")}
	out, progress, err := r.run(t, context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// 3 days × (3 pages of docs + 1 of api).
	if got := r.fake.Requests(fakeapi.Visitors); got != 12 {
		t.Errorf("%d requests, want 12", got)
	}
	for _, q := range r.fake.VisitorsQueries() {
		from, to := day(q.Get("dateFrom")), day(q.Get("dateTo"))
		if to.Sub(from) != 24*time.Hour || q.Get("limit") != "250" {
			t.Errorf("query %v: want one day, limit 250", q)
		}
	}
	if !strings.Contains(progress, "12 walks") && !strings.Contains(progress, "6 walks") {
		t.Errorf("progress says nothing of the walks:\n%s", progress)
	}
	samples := parse(t, out)
	site := map[string]float64{}
	for _, s := range samples {
		if s.name == "mintlify_site_unique_visitors_deduplicated" {
			site[fmt.Sprintf("%s@%d", s.labels, s.ts)] = s.value
		}
	}
	// 2026-03-08 is the 23-hour day of New York.
	w1, _ := analytics.ParseWindow("1d")
	w7, _ := analytics.ParseWindow("7d")
	for _, tc := range []struct {
		day        string
		next, last time.Time // next local midnight, last second of 7d
	}{
		{"2026-03-07", time.Date(2026, 3, 8, 5, 0, 0, 0, time.UTC), time.Date(2026, 3, 8, 4, 59, 59, 0, time.UTC)},
		{"2026-03-08", time.Date(2026, 3, 9, 4, 0, 0, 0, time.UTC), time.Date(2026, 3, 9, 3, 59, 59, 0, time.UTC)},
		{"2026-03-09", time.Date(2026, 3, 10, 4, 0, 0, 0, time.UTC), time.Date(2026, 3, 10, 3, 59, 59, 0, time.UTC)},
	} {
		if got := SampleTime(day(tc.day), w1, ny); !got.Equal(tc.next) {
			t.Errorf("SampleTime(%s, 1d) = %s, want %s", tc.day, got.UTC(), tc.next)
		}
		if got := SampleTime(day(tc.day), w7, ny); !got.Equal(tc.last) {
			t.Errorf("SampleTime(%s, 7d) = %s, want %s", tc.day, got.UTC(), tc.last)
		}
		for _, p := range []string{"docs", "api"} {
			_, _, total := r.fake.DayCounts(p, day(tc.day), today)
			k := fmt.Sprintf(`project="%s",window="yesterday"@%d`, p, tc.next.Unix())
			if got, ok := site[k]; !ok || got != float64(total) {
				t.Errorf("%s %s: exported %v (present %v), API %d", p, tc.day, got, ok, total)
			}
		}
	}
	var docsPages int
	for _, s := range samples {
		if s.name == "mintlify_page_unique_visitors_deduplicated" && strings.HasPrefix(s.labels, `project="docs"`) {
			docsPages++
		}
	}
	if docsPages != 3*600 {
		t.Errorf("%d page series samples of docs, want 1800", docsPages)
	}
	checkBlocks(t, out)
}

// checkBlocks has promtool turn the output into TSDB blocks.
func checkBlocks(t *testing.T, out string) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "history.om")
	if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(testutil.Promtool(t), "tsdb", "create-blocks-from", "openmetrics", file, filepath.Join(dir, "data"))
	if b, err := testutil.CombinedOutput(cmd); err != nil {
		t.Fatalf("promtool tsdb create-blocks-from openmetrics: %v\n%s", err, b)
	}
}

// TestBackfillWindowsAndFilters: an Nd window adds the Nd value ending on
// each day; max paths and filters apply per day.
func TestBackfillWindowsAndFilters(t *testing.T) {
	t.Parallel()
	r := newRig(t, fakeapi.Options{Paths: 300}, 1000, 0)
	w7, _ := analytics.ParseWindow("7d")
	cfg := Config{Projects: visitorsOnly(nil, []analytics.Window{w7}, "docs"), From: day("2026-03-01"), To: day("2026-03-02")}
	cfg.Projects[0].Paths = analytics.PathPolicy{MaxPaths: 10, Exclude: regexp.MustCompile(`^/changelog/`)}
	out, _, err := r.run(t, context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.fake.Requests(fakeapi.Visitors); got != 2*2*2 {
		t.Errorf("%d requests, want 8 (2 days × 2 windows × 2 pages)", got)
	}
	var sevenDay int
	for _, q := range r.fake.VisitorsQueries() {
		if q.Get("dateFrom") == "2026-02-24" && q.Get("dateTo") == "2026-03-03" {
			sevenDay++
		}
	}
	if sevenDay != 2 {
		t.Errorf("%d walks of the 7d window ending 2026-03-02, want 2 pages", sevenDay)
	}
	paths := map[string]int{}
	for _, s := range parse(t, out) {
		if s.name == "mintlify_page_unique_visitors_deduplicated" {
			if strings.Contains(s.labels, `path="/changelog/`) {
				t.Errorf("excluded path exported: %s", s.labels)
			}
			paths[s.labels[:strings.Index(s.labels, ",path=")]]++
		}
	}
	if paths[`project="docs",window="yesterday"`] != 20 || paths[`project="docs",window="7d"`] != 20 {
		t.Errorf("page samples per window %v, want 10 paths × 2 days each", paths)
	}
}

// TestBackfillResumes: an interrupted backfill resumes without fetching
// finished days again, and the second run's output equals a clean one.
func TestBackfillResumes(t *testing.T) {
	t.Parallel()
	r := newRig(t, fakeapi.Options{Paths: 500}, 1000, 0)
	state := filepath.Join(t.TempDir(), "days")
	cfg := Config{Projects: visitorsOnly(nil, nil, "docs"), From: day("2026-02-01"), To: day("2026-02-28"), StateDir: state}
	ctx, cancel := context.WithCancel(context.Background())
	// Cancel once ten days' files exist.
	go func() {
		defer cancel()
		testutil.WaitUntil(testutil.Patience, func() bool {
			files, _ := filepath.Glob(filepath.Join(state, "docs", "visitors", "1d", "*.json"))
			return len(files) >= 10
		})
	}()
	_, _, err := r.run(t, ctx, cfg)
	if err == nil || !strings.Contains(err.Error(), "run it again to resume") {
		t.Fatalf("interrupted run: err = %v", err)
	}
	first := r.fake.Requests(fakeapi.Visitors)
	out, progress, err := r.run(t, context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if total := r.fake.Requests(fakeapi.Visitors); total > 28*2+2 { // a walk cut in the middle is fetched again
		t.Errorf("%d requests in both runs (%d in the first), want at most 58 for 28 days of 2 pages", total, first)
	}
	if !regexp.MustCompile(`: \d+ kept in .* from an earlier run, \d+ to fetch, `).MatchString(progress) {
		t.Errorf("progress does not say what was kept from the first run:\n%s", progress)
	}
	clean := newRig(t, fakeapi.Options{Paths: 500}, 1000, 0)
	cfg.StateDir = ""
	want, _, err := clean.run(t, context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if out != want {
		t.Error("the resumed output differs from a clean run's")
	}
	// Resuming with other settings is refused, naming the flag.
	cfg.StateDir, cfg.Projects[0].Paths.MaxPaths = state, 5
	if _, _, err := r.run(t, context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "--backfill.state-dir") {
		t.Errorf("resume with another --analytics.max-paths: %v", err)
	}
}

// TestBackfillTotalsOnly: one request per project and day, site series only.
func TestBackfillTotalsOnly(t *testing.T) {
	t.Parallel()
	r := newRig(t, fakeapi.Options{Paths: 2500}, 1000, 0)
	out, _, err := r.run(t, context.Background(), Config{Projects: visitorsOnly(nil, nil, "docs"), From: day("2026-01-01"), To: day("2026-01-31"), TotalsOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.fake.Requests(fakeapi.Visitors); got != 31 {
		t.Errorf("%d requests for 31 days of totals, want 31", got)
	}
	samples := parse(t, out)
	if len(samples) != 31*3 {
		t.Errorf("%d samples, want 93 (31 days × human, ai, deduplicated)", len(samples))
	}
	for _, s := range samples {
		if strings.HasPrefix(s.name, "mintlify_page_") {
			t.Fatalf("page series in a totals-only backfill: %v", s)
		}
	}
}

// TestBackfillWaitsForBudget: with a budget smaller than the work, the
// backfill waits instead of sending: no 429 from a fake enforcing the same
// quota, and it takes at least the windows the budget needs.
func TestBackfillWaitsForBudget(t *testing.T) {
	t.Parallel()
	// Long enough that four walks always fit in one window, so the budget
	// does run out (at 500 ms a loaded machine's walks were slower than
	// the budget, which then never ran out, and no line said it waited).
	const window = 2 * time.Second
	// The fake counts its quota on the real clock, as the service does, at
	// arrival: over a window a little shorter than the budget's, so that a
	// loaded test machine's latency cannot shift a request into the
	// previous window (in production a hundredth of the hour covers it).
	r := newRig(t, fakeapi.Options{Paths: 250, AnalyticsBudget: 4, AnalyticsWindow: window * 4 / 5, Now: time.Now}, 4, window)
	start := time.Now()
	_, progress, err := r.run(t, context.Background(), Config{Projects: visitorsOnly(nil, nil, "docs"), From: day("2026-01-01"), To: day("2026-01-10"), ProgressEvery: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 2*window {
		t.Errorf("10 requests at 4 per %s took %s", window, d)
	}
	if n := r.fake.AnalyticsRejections(); n != 0 {
		t.Errorf("%d requests answered 429", n)
	}
	if !strings.Contains(progress, "requests to go for") || !strings.Contains(progress, "waiting for the analytics budget") {
		t.Errorf("no plan or periodic progress lines:\n%s", progress)
	}
}

func TestBackfillRefusesUnfinishedDays(t *testing.T) {
	t.Parallel()
	r := newRig(t, fakeapi.Options{}, 10, 0)
	_, _, err := r.run(t, context.Background(), Config{Projects: visitorsOnly(nil, nil, "docs"), From: day("2026-03-19"), To: day("2026-03-20")})
	if err == nil || !strings.HasPrefix(err.Error(), "--to:") {
		t.Errorf("a --to of today: %v", err)
	}
	if r.fake.Requests(fakeapi.Visitors) != 0 {
		t.Error("requests sent for a refused backfill")
	}
}

func TestFormatting(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 3650: "3,650", 1234567: "1,234,567"} {
		if got := group(n); got != want {
			t.Errorf("group(%d) = %q", n, got)
		}
	}
	for d, want := range map[time.Duration]string{
		30 * time.Second: "under a minute", 42 * time.Minute: "42 min",
		5*time.Hour + 7*time.Minute: "5 h 7 min", (3*24+19)*time.Hour + 20*time.Minute: "3 d 19 h",
	} {
		if got := formatETA(d); got != want {
			t.Errorf("formatETA(%s) = %q, want %q", d, got, want)
		}
	}
	if got := escapeLabel("a\"b\\c\nd"); got != `a\"b\\c\nd` {
		t.Errorf("escapeLabel = %s", got)
	}
}

func TestBackfillLabels(t *testing.T) {
	t.Parallel()
	r := newRig(t, fakeapi.Options{Paths: 3}, 100, 0)
	job, _ := ParseLabel("job=mintlify")
	inst, _ := ParseLabel(`instance=exp:9871`)
	out, _, err := r.run(t, context.Background(), Config{Projects: visitorsOnly(nil, nil, "docs"), From: day("2026-03-01"), To: day("2026-03-01"), Labels: []Label{job, inst}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range parse(t, out) {
		if !strings.HasPrefix(s.labels, `job="mintlify",instance="exp:9871",project="docs",window="yesterday"`) {
			t.Fatalf("sample without the extra labels first: %s{%s}", s.name, s.labels)
		}
	}
	for _, bad := range []string{"job", "=x", "__name__=x", "path=/x", "1a=b", "project=p"} {
		if _, err := ParseLabel(bad); err == nil {
			t.Errorf("ParseLabel(%q) accepted", bad)
		}
	}
}

// TestBackfillFailuresNameTheirCause: an output that cannot be written and
// a damaged day file each fail with what to do, and nothing is half-written.
func TestBackfillFailuresNameTheirCause(t *testing.T) {
	t.Parallel()
	r := newRig(t, fakeapi.Options{Paths: 3}, 100, 0)
	state := filepath.Join(t.TempDir(), "days")
	cfg := Config{Projects: visitorsOnly(nil, nil, "docs"), From: day("2026-03-01"), To: day("2026-03-02"), StateDir: state,
		Output: filepath.Join(t.TempDir(), "missing-dir", "history.om")}
	if _, _, err := r.run(t, context.Background(), cfg); err == nil || !strings.HasPrefix(err.Error(), "--output:") {
		t.Fatalf("output in a missing directory: %v", err)
	}
	// The days were fetched and kept: fixing the output fetches nothing.
	before := r.fake.Requests(fakeapi.Visitors)
	cfg.Output = filepath.Join(t.TempDir(), "history.om")
	if _, _, err := r.run(t, context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if got := r.fake.Requests(fakeapi.Visitors); got != before {
		t.Errorf("%d more requests after fixing --output, want 0", got-before)
	}
	dayFile := filepath.Join(state, "docs", "visitors", "1d", "2026-03-01.json")
	if err := os.WriteFile(dayFile, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.run(t, context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "delete it to fetch that day again") {
		t.Fatalf("damaged day file: %v", err)
	}
}
