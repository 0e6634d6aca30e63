//go:build e2e

package e2e

// The history checks: backfilled days read through the Daily panels of the
// visitors dashboard, the documented week-over-week query of whole days and
// the week-over-week recording rules, and each day's backfilled views,
// searches and assistant conversations, on Debian's Prometheus, each
// against the fake API's number for that local day.
//
// TestHistoryAtAnyHour runs them at chosen clock times (a fake API whose
// clock and time zone the test sets, reached by the backfill through
// --mintlify.api-url), every hour class of a UTC day included, the 22:00
// to 24:00 UTC that once failed among them, into one Prometheus.
// TestDailyHistory runs them now, on the sandbox, with a live exporter
// serving the settled numbers of yesterday beside the backfill: it runs in
// the Etc/GMT±N zone where it is now between 00:00 and 01:00, the hour in
// which the live exporter exports yesterday (window="yesterday"), so that
// yesterday is both backfilled and served live.

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/alerts"
	"github.com/mintlify-exporter/mintlify_exporter/dashboards"
	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil/blackbox"
)

const (
	historyProject = "acme-docs"
	historyDays    = 30
	day            = 24 * time.Hour
	historyKey     = "mint_e2e_history"
)

// localMidnightZone returns the Etc/GMT±N zone in which now is between 00:00
// and 01:00, and its UTC offset in hours (Etc/GMT+N is UTC-N). East of UTC
// (H > 0) is only used when no zone west of it or UTC fits.
func localMidnightZone(now time.Time) (string, int) {
	h := now.UTC().Hour()
	H := -h // UTC-h: 00:xx local when it is h:xx UTC
	if H < -12 {
		H = 24 - h
	}
	switch {
	case H == 0:
		return "Etc/GMT", 0
	case H < 0:
		return fmt.Sprintf("Etc/GMT+%d", -H), H
	default:
		return fmt.Sprintf("Etc/GMT-%d", H), H
	}
}

// dayNumbers is what the fake API answers for one day of a project.
type dayNumbers struct {
	human, ai, total float64
	pages            map[string]float64 // path -> deduplicated unique visitors
}

// fakeDay asks a fake API like the sandbox's (default 300 paths, its day
// ending at midnight in loc, as the sandbox's in --analytics.timezone) for
// one date of project, dateFrom=date and dateTo=date+1, as of at: the site
// totals and every page, through its HTTP handler. (It once asked a fake
// whose days ended at UTC midnight: between 22:00 and 24:00 UTC, in UTC+2
// or UTC+1, its "yesterday" was not over, the sandbox's was.)
func fakeDay(t *testing.T, project string, date time.Time, loc *time.Location, at time.Time) dayNumbers {
	t.Helper()
	fake := fakeapi.New(fakeapi.Options{Now: func() time.Time { return at }, Location: loc})
	out := dayNumbers{pages: map[string]float64{}}
	for offset := 0; ; offset += 250 {
		q := fmt.Sprintf("/v1/analytics/%s/visitors?dateFrom=%s&dateTo=%s&limit=250&offset=%d",
			project, date.Format(time.DateOnly), date.AddDate(0, 0, 1).Format(time.DateOnly), offset)
		req := httptest.NewRequest(http.MethodGet, q, nil)
		req.Header.Set("Authorization", "Bearer "+historyKey)
		rec := httptest.NewRecorder()
		fake.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("fake API %s: %d %s", q, rec.Code, rec.Body)
		}
		var body struct {
			Totals struct{ Human, AI, Total float64 }
			// The fields as the API names them.
			Visitors []struct {
				Path  string  `json:"path"`
				Total float64 `json:"total"`
			} `json:"visitors"`
			HasMore bool `json:"hasMore"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatal(err)
		}
		out.human, out.ai, out.total = body.Totals.Human, body.Totals.AI, body.Totals.Total
		for _, v := range body.Visitors {
			out.pages[v.Path] = v.Total
		}
		if !body.HasMore {
			break
		}
	}
	// The site totals must be the numbers fakeapi.DayCounts documents.
	h, a, tot := fakeapi.New(fakeapi.Options{Location: loc}).DayCounts(project, date, at)
	if float64(h) != out.human || float64(a) != out.ai || float64(tot) != out.total {
		t.Fatalf("fake API %s: totals %v/%v/%v, DayCounts says %d/%d/%d", date.Format(time.DateOnly), out.human, out.ai, out.total, h, a, tot)
	}
	return out
}

// history is one project's backfilled days, as of a time "now" (between
// 00:00 and 01:00 in its zone), and what the fake API says of each.
type history struct {
	project, zone string
	H             int // UTC offset of zone, in hours
	loc           *time.Location
	now           time.Time
	days          []time.Time // local dates as UTC midnights: also each day's 1d step
	want          map[time.Time]dayNumbers
	// views, searches and conversations are the fake API's counts per day
	// (fakeapi's DayViews, DaySearches, DayConversations).
	views, searches, conversations map[time.Time]float64
	// job and instance labels given to the backfill.
	job, instance string
}

func newHistory(t *testing.T, project string, now time.Time, job, instance string) *history {
	t.Helper()
	zone, H := localMidnightZone(now)
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	local := now.In(loc)
	if local.Hour() != 0 {
		t.Fatalf("%s: local time %s is not in the first hour of the day", zone, local)
	}
	h := &history{project: project, zone: zone, H: H, loc: loc, now: now, want: map[time.Time]dayNumbers{}, job: job, instance: instance,
		views: map[time.Time]float64{}, searches: map[time.Time]float64{}, conversations: map[time.Time]float64{}}
	yesterday := time.Date(local.Year(), local.Month(), local.Day()-1, 0, 0, 0, 0, time.UTC)
	fake := fakeapi.New(fakeapi.Options{Location: loc})
	for d := yesterday.AddDate(0, 0, -(historyDays - 1)); !d.After(yesterday); d = d.AddDate(0, 0, 1) {
		h.days = append(h.days, d)
		// A day the fake has finished reads the same at any later time.
		h.want[d] = fakeDay(t, project, d, loc, now)
		h.views[d] = float64(fake.DayViews(project, d, now).Total)
		h.searches[d] = float64(fake.DaySearches(project, d, now))
		h.conversations[d] = float64(fake.DayConversations(project, d, now))
	}
	return h
}

func (h *history) first() time.Time     { return h.days[0] }
func (h *history) yesterday() time.Time { return h.days[len(h.days)-1] }

// backfilledSources are the sources the history tests backfill: visitors
// and every additive one.
var backfilledSources = []string{"visitors", "views", "searches", "assistant"}

// backfillArgs are the backfill command's arguments for h: every source of
// backfilledSources configured for the project.
func (h *history) backfillArgs() []string {
	args := []string{"backfill", "--mintlify.project=" + h.project, "--analytics.timezone=" + h.zone,
		"--from=" + h.first().Format(time.DateOnly), "--to=" + h.yesterday().Format(time.DateOnly),
		"--backfill.label=job=" + h.job, "--backfill.label=instance=" + h.instance}
	for _, s := range backfilledSources {
		args = append(args, "--analytics.source="+s)
	}
	return args
}

func runBackfill(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	out, err := testutil.CombinedOutput(cmd)
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "backfill: done: ") || !strings.Contains(last, "; next: ") {
		t.Errorf("the backfill's last line does not say where the output is and what to run next: %q", last)
	}
	return string(out)
}

// TestHistoryAtAnyHour backfills 30 days as of chosen times spread over a
// UTC day, from a fake API at that time, as TSDB blocks
// (--output.format=blocks: promtool, found on PATH, makes them of the
// exporter's OpenMetrics text), and checks each history in one Prometheus.
func TestHistoryAtAnyHour(t *testing.T) {
	promBin := lookTool(t, "prometheus", "prometheus")
	bin := exporterBin
	dataDir := t.TempDir()
	// Two days back, so that every chosen day is over here in every zone.
	base := time.Now().UTC().Truncate(day).Add(-2 * day)
	var runs []*history
	for _, hm := range []time.Duration{30 * time.Minute, 5*time.Hour + 30*time.Minute, 11*time.Hour + 59*time.Minute,
		12*time.Hour + 30*time.Minute, 21*time.Hour + 30*time.Minute, 22*time.Hour + 10*time.Minute, 23*time.Hour + 45*time.Minute} {
		now := base.Add(hm)
		h := newHistory(t, "at-"+now.Format("1504"), now, scrapeJob, "history:9871")
		fake := fakeapi.New(fakeapi.Options{APIKey: historyKey, Now: func() time.Time { return now }, Location: h.loc})
		srv := httptest.NewServer(fake)
		blocks := filepath.Join(t.TempDir(), "blocks")
		progress := runBackfill(t, bin, []string{"MINTLIFY_API_KEY=" + historyKey}, append(h.backfillArgs(), "--mintlify.api-url="+srv.URL,
			"--mintlify.analytics-budget=1000", "--output.format=blocks", "--output="+blocks)...)
		if !strings.Contains(progress, " in "+blocks+", made by promtool; next: ") {
			t.Errorf("%s: the blocks were not made by promtool:\n%s", h.project, progress)
		}
		srv.Close()
		entries, err := os.ReadDir(blocks)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) < 1 || len(entries) > 3 {
			t.Errorf("%s: %d blocks for 30 days, want 1 to 3", h.project, len(entries))
		}
		for _, e := range entries {
			if err := os.Rename(filepath.Join(blocks, e.Name()), filepath.Join(dataDir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("%s: now %s, zone %s (UTC%+d), days %s to %s", h.project, now.Format(time.DateTime), h.zone, h.H,
			h.first().Format(time.DateOnly), h.yesterday().Format(time.DateOnly))
		runs = append(runs, h)
	}

	_, api := startHistoryProm(t, promBin, dataDir, []byte("global:\n  evaluation_interval: 5s\n"), nil)
	for _, h := range runs {
		t.Run(h.project, func(t *testing.T) {
			vars := map[string]string{"job": h.job, "instance": h.instance, "project": h.project}
			checkHistory(t, api, h, vars)
		})
	}
}

// scalarOf returns the single value of an instant query, NaN when there is none.
func scalarOf(r queryResult) float64 {
	if len(r.Series) != 1 || len(r.Series[0].Value) != 2 {
		return math.NaN()
	}
	s, _ := r.Series[0].Value[1].(string)
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return math.NaN()
	}
	return f
}

// pointOf decodes a [ts, "value"] pair of the HTTP API.
func pointOf(t *testing.T, p []any) (time.Time, float64) {
	t.Helper()
	if len(p) != 2 {
		t.Fatalf("point %v", p)
	}
	ts, ok := p[0].(float64)
	s, ok2 := p[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	if !ok || !ok2 || err != nil {
		t.Fatalf("point %v", p)
	}
	return time.UnixMilli(int64(math.Round(ts * 1000))).UTC(), v
}

// TestLocalMidnightZone checks the zone choice for every hour of a UTC day:
// a real zone, in its first local hour, west of UTC or UTC when one fits.
func TestLocalMidnightZone(t *testing.T) {
	for h := range 24 {
		now := time.Date(2026, 11, 23, h, 30, 0, 0, time.UTC)
		zone, H := localMidnightZone(now)
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatalf("%02d:30Z: %v", h, err)
		}
		_, off := now.In(loc).Zone()
		if l := now.In(loc); l.Hour() != 0 || off != H*3600 || H < -12 || H > 14 || (H > 0 && h <= 12) {
			t.Errorf("%02d:30Z: %s (UTC%+d) reads %s, offset %ds", h, zone, H, l.Format(time.TimeOnly), off)
		}
	}
}

// TestDailyHistory backfills the 30 days up to yesterday from the sandbox
// (OpenMetrics through promtool: the other route), runs a live exporter on
// the sandbox in the same zone beside it, and checks the history, the live
// settled yesterday, and the week-over-week rules Prometheus records from
// the two together.
func TestDailyHistory(t *testing.T) {
	began := time.Now()
	promBin := lookTool(t, "prometheus", "prometheus")
	promtool := testutil.Promtool(t)

	bin := exporterBin
	// The live exporter serves yesterday only until 01:00 local: leave the
	// test (some 15 seconds from here) at least 2 minutes of it, or wait for
	// the next hour, the first of the next zone west.
	if now := time.Now(); now.Minute() >= 58 {
		wait := now.Truncate(time.Hour).Add(time.Hour + 5*time.Second).Sub(now)
		t.Logf("%s: waiting %s for the next local midnight of an Etc/GMT zone", now.UTC().Format(time.TimeOnly), wait.Round(time.Second))
		time.Sleep(wait) // real time: the exporter's day is the wall clock's
	}
	exporterAddr := testutil.FreeAddr(t)
	h := newHistory(t, historyProject, time.Now(), scrapeJob, exporterAddr)
	t.Logf("zone %s (UTC%+d), local time %s, days %s to %s", h.zone, h.H, h.now.In(h.loc).Format(time.DateTime),
		h.first().Format(time.DateOnly), h.yesterday().Format(time.DateOnly))

	// 1. The backfill, with the live target's job and instance, and its
	// blocks in a fresh data directory. The sandbox holds its simulated
	// organization to the API's 100 requests an hour, so the 210 requests
	// of 30 days of the four sources go in three runs (a sandbox each) of
	// --backfill.source, each within a full budget of 100: visitors (60),
	// views and searches (90), the assistant (60).
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	beforeBackfill := time.Now()
	for i, group := range [][]string{{"visitors"}, {"views", "searches"}, {"assistant"}} {
		omFile := filepath.Join(dir, fmt.Sprintf("history-%d.om", i))
		args := append(h.backfillArgs(), "--mintlify.sandbox", "--mintlify.analytics-budget=100", "--output="+omFile)
		for _, s := range group {
			args = append(args, "--backfill.source="+s)
		}
		out := runBackfill(t, bin, nil, args...)
		if strings.Contains(out, "waiting for the analytics budget") {
			t.Errorf("backfill of %v waited for the budget:\n%s", group, out)
		}
		// The promtool command the last line prints, into the data directory.
		step := testutil.PromtoolStep(t, out, omFile)
		step[0], step[len(step)-1] = promtool, dataDir
		before, _ := os.ReadDir(dataDir)
		if out, err := testutil.CombinedOutput(exec.Command(step[0], step[1:]...)); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(step, " "), err, out)
		}
		if after, _ := os.ReadDir(dataDir); len(after)-len(before) > 3 {
			t.Errorf("%s: %d blocks for %d days, want up to 3", strings.Join(step, " "), len(after)-len(before), historyDays)
		}
	}
	t.Logf("backfilled %d days of %v in %s", historyDays, backfilledSources, time.Since(beforeBackfill).Round(100*time.Millisecond))

	// 2. The live exporter: its final-day walk starts at once (delay 0s).
	exporter := startProc(t, "exporter", bin, []string{
		"--web.listen-address=" + exporterAddr,
		"--mintlify.sandbox",
		"--mintlify.project=" + historyProject,
		"--analytics.timezone=" + h.zone,
		"--analytics.final-day-delay=0s",
	}, nil)

	// 3. Prometheus on the backfilled data, scraping the live exporter every
	// 5s and evaluating the rules.
	prom, api := startHistoryProm(t, promBin, dataDir, fmt.Appendf(nil, `global:
  scrape_interval: 5s
  evaluation_interval: 5s
rule_files:
  - %q
scrape_configs:
  - job_name: %s
    static_configs:
      - targets: [%q]
`, alerts.RulesPath(), scrapeJob, exporterAddr), []*proc{exporter})
	procs := []*proc{exporter, prom}

	// Live samples of yesterday: stamped after today's midnight, where the
	// backfilled ones are.
	midnight := analytics.DayStart(h.yesterday().AddDate(0, 0, 1), h.loc)
	live := func(q string) string { return fmt.Sprintf("(timestamp(%s) > %d)", q, midnight.Unix()) }
	paths := len(h.want[h.yesterday()].pages)
	eventuallyRunning(t, `live window="yesterday" scraped, site and every page`, 60*time.Second, time.Second, procs, func() error {
		for q, want := range map[string]int{
			`count` + live(`mintlify_site_unique_visitors{window="yesterday"}`):              2,
			`count` + live(`mintlify_site_unique_visitors_deduplicated{window="yesterday"}`): 1,
			`count` + live(`mintlify_page_unique_visitors_deduplicated{window="yesterday"}`): paths,
		} {
			r, err := api.query(q, time.Now())
			if err != nil {
				return err
			}
			if got := scalarOf(r); got != float64(want) {
				return fmt.Errorf("%s = %v, want %d", q, got, want)
			}
		}
		return nil
	})
	if l := time.Now().In(h.loc); l.Hour() != 0 {
		t.Fatalf("local time %s: past the hour in which yesterday is exported", l)
	}

	// 4. The history through the panels, the documented query and the rules.
	ds, err := dashboards.Load(dashboards.Dir())
	if err != nil {
		t.Fatal(err)
	}
	vars, err := dashboardVars(api, "visitors.json", ds["visitors.json"])
	if err != nil {
		t.Fatal(err)
	}
	checkHistory(t, api, h, vars)

	// 5. Yesterday, backfilled (at midnight) and served live (after it),
	// reads the settled number.
	total := h.want[h.yesterday()].total
	for _, at := range []time.Time{midnight, time.Now()} {
		r, err := api.query(fmt.Sprintf(`mintlify_site_unique_visitors_deduplicated{project=%q,window="yesterday"}`, h.project), at)
		if err != nil {
			t.Fatal(err)
		}
		if got := scalarOf(r); got != total {
			t.Errorf("%s deduplicated at %s: %v, want %v", h.yesterday().Format(time.DateOnly), at.UTC(), got, total)
		}
	}

	// 6. The week-over-week rules, recorded by Prometheus now from the live
	// yesterday and the backfilled day a week before it.
	week := h.want[h.yesterday().AddDate(0, 0, -7)]
	y := h.want[h.yesterday()]
	wantRules := map[string]float64{
		`mintlify:site_unique_visitors:ratio_1w{traffic="human"}`: y.human / week.human,
		`mintlify:site_unique_visitors:ratio_1w{traffic="ai"}`:    y.ai / week.ai,
		`mintlify:site_ai_share:change_1w`:                        y.ai/(y.human+y.ai) - week.ai/(week.human+week.ai),
	}
	eventuallyRunning(t, "week-over-week rules recorded over the backfilled week", 30*time.Second, time.Second, procs, func() error {
		for q, want := range wantRules {
			sel := strings.Replace(q, "}", ",", 1)
			if !strings.Contains(q, "{") {
				sel = q + "{"
			}
			// No instance: the rules compare whichever replica exported the data.
			sel += fmt.Sprintf(`window="yesterday",project=%q,job=%q,instance=""}`, h.project, h.job)
			r, err := api.query(sel, time.Now())
			if err != nil {
				return err
			}
			if got := scalarOf(r); !near(got, want) {
				return fmt.Errorf("%s = %v, want %v", sel, got, want)
			}
		}
		return nil
	})

	// 7. The week-over-week alerts on the same data: their expressions,
	// thresholds relaxed so that they hold whatever the simulated week did,
	// give the whole-day comparison, so they fire (after their for:) from
	// the first day after a backfill.
	wantAlerts := map[string]float64{
		"MintlifyHumanVisitorsDrop":   y.human / week.human,
		"MintlifyAITrafficShareSurge": y.ai/(y.human+y.ai) - week.ai/(week.human+week.ai),
	}
	rules, err := alerts.Load(alerts.RulesPath())
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range wantAlerts {
		rule, ok := rules.Alert(name)
		expr := relaxThresholds(rule.Expr)
		if !ok || expr == rule.Expr {
			t.Fatalf("%s: no such alert, or no threshold marked in its expression", name)
		}
		r, err := api.query(expr, time.Now())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		seen := 0
		for _, s := range r.Series {
			if s.Metric["project"] != h.project || s.Metric["window"] != "yesterday" {
				continue
			}
			seen++
			if _, v := pointOf(t, s.Value); s.Metric["job"] != h.job || !near(v, want) {
				t.Errorf("%s, thresholds relaxed: %v = %v, want %v", name, s.Metric, v, want)
			}
		}
		if seen != 1 {
			t.Errorf("%s, thresholds relaxed: %d series of window yesterday, want 1: %v", name, seen, r.Series)
		}
	}
	t.Logf("done in %s", time.Since(began).Round(100*time.Millisecond))
}

// thresholdRE is a comparison with the number of an alert's threshold,
// on a line marked "# threshold".
var thresholdRE = regexp.MustCompile(`([<>]=?)\s*[0-9.eE+-]+(\s*# threshold)`)

// relaxThresholds makes every marked comparison of expr hold for any
// value, so that the expression returns what it compares.
func relaxThresholds(expr string) string {
	return thresholdRE.ReplaceAllStringFunc(expr, func(m string) string {
		sub := thresholdRE.FindStringSubmatch(m)
		if strings.HasPrefix(sub[1], "<") {
			return sub[1] + " 1e300" + sub[2]
		}
		return sub[1] + " -1e300" + sub[2]
	})
}

// startHistoryProm starts Prometheus on dataDir with config, keeping a
// year (the default 15d would delete half the history), and waits until it
// is ready (failing early if one of others dies).
func startHistoryProm(t *testing.T, bin, dataDir string, config []byte, others []*proc) (*proc, promAPI) {
	t.Helper()
	addr := testutil.FreeAddr(t)
	file := filepath.Join(t.TempDir(), "prometheus.yml")
	blackbox.WriteFile(t, file, string(config))
	prom := startProc(t, "prometheus", bin, []string{
		"--config.file=" + file,
		"--storage.tsdb.path=" + dataDir,
		"--storage.tsdb.retention.time=400d",
		"--web.listen-address=" + addr,
	}, nil)
	waitReady(t, "http://"+addr+"/-/ready", append(others, prom))
	return prom, promAPI{base: "http://" + addr}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// checkHistory checks h's days in Prometheus: the Daily panels of the
// visitors dashboard (vars filled in as Grafana would, day_offset for h's
// zone), the documented whole-day week-over-week query and the
// week-over-week recording rules' expressions, evaluated at times of day
// spread over each day.
func checkHistory(t *testing.T, api promAPI, h *history, given map[string]string) {
	t.Helper()
	vars := map[string]string{}
	for k, v := range builtinVars {
		vars[k] = v
	}
	for k, v := range given {
		vars[k] = v
	}
	vars["project"] = h.project
	vars[dashboards.DayOffsetVariable] = fmt.Sprintf("-%dh", 25-h.H) // -(25h - H)
	vars["__range"], vars["__range_s"], vars["__range_ms"] = "30d", "2592000", "2592000000"
	queries, err := dashboards.Queries(dashboards.Dir())
	if err != nil {
		t.Fatal(err)
	}
	panel := func(title string) string {
		for _, q := range queries {
			if q.File == "visitors.json" && q.Panel == title {
				return dashboards.Expand(q.Expr, vars)
			}
		}
		t.Fatalf("visitors.json: no panel %q", title)
		return ""
	}
	// Grafana's 1d steps over the 30 days: the UTC midnight of each day.
	daily := func(name, expr string, key string) map[string]map[time.Time]float64 {
		r, err := api.queryRange(expr, h.first(), h.yesterday(), day)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out := map[string]map[time.Time]float64{}
		for _, s := range r.Series {
			k := s.Metric["project"] + "/" + s.Metric[key]
			out[k] = map[time.Time]float64{}
			for _, v := range s.Values {
				ts, val := pointOf(t, v)
				out[k][ts] = val
			}
		}
		return out
	}
	check := func(name string, got map[time.Time]float64, want func(d time.Time) (float64, bool)) {
		t.Helper()
		n := 0
		for _, d := range h.days {
			w, ok := want(d)
			v, have := got[d]
			switch {
			case !ok && have:
				t.Errorf("%s %s: %v, want no value", name, d.Format(time.DateOnly), v)
			case ok && !have:
				t.Errorf("%s %s: no value, want %v", name, d.Format(time.DateOnly), w)
			case ok && !near(v, w):
				t.Errorf("%s %s: %v, want %v", name, d.Format(time.DateOnly), v, w)
			case ok:
				n++
			}
		}
		for ts := range got {
			if !slices.Contains(h.days, ts) {
				t.Errorf("%s: value at %s, which is no step of the range", name, ts.UTC())
			}
		}
		t.Logf("%s: %d days as the fake API says", name, n)
	}
	only := func(name string, got map[string]map[time.Time]float64, keys ...string) {
		t.Helper()
		have := slices.Sorted(maps.Keys(got))
		slices.Sort(keys)
		if !slices.Equal(have, keys) {
			t.Fatalf("%s: series %v, want %v", name, have, keys)
		}
	}
	always := func(f func(n dayNumbers) float64) func(time.Time) (float64, bool) {
		return func(d time.Time) (float64, bool) { return f(h.want[d]), true }
	}
	p := h.project

	title := "Daily unique visitors, human and AI"
	got := daily(title, panel(title), "traffic")
	only(title, got, p+"/human", p+"/ai")
	check(title+", human", got[p+"/human"], always(func(n dayNumbers) float64 { return n.human }))
	check(title+", AI", got[p+"/ai"], always(func(n dayNumbers) float64 { return n.ai }))

	title = "Daily unique visitors, deduplicated"
	got = daily(title, panel(title), "")
	only(title, got, p+"/")
	check(title, got[p+"/"], always(func(n dayNumbers) float64 { return n.total }))

	for _, c := range []struct {
		title string
		back  int
	}{{"Daily visitors, week over week", 7}, {"Daily visitors, 4 weeks over 4 weeks", 28}} {
		got = daily(c.title, panel(c.title), "")
		only(c.title, got, p+"/")
		check(c.title, got[p+"/"], func(d time.Time) (float64, bool) {
			earlier, ok := h.want[d.AddDate(0, 0, -c.back)]
			return h.want[d].total / earlier.total, ok
		})
	}

	// Top pages by visitor-days: an instant query at noon UTC after the last
	// day's step, so that [$__range:1d] (30d) holds the 30 days' steps.
	title = "Top pages by visitor-days"
	sums := map[string]float64{}
	for _, d := range h.days {
		for path, v := range h.want[d].pages {
			sums[path] += v
		}
	}
	ranked := slices.SortedFunc(maps.Keys(sums), func(a, b string) int { return cmp.Or(cmp.Compare(sums[b], sums[a]), strings.Compare(a, b)) })
	r, err := api.query(panel(title), h.yesterday().Add(12*time.Hour))
	if err != nil {
		t.Fatalf("%s: %v", title, err)
	}
	if len(r.Series) != 10 {
		t.Fatalf("%s: %d rows, want 10", title, len(r.Series))
	}
	for _, s := range r.Series {
		_, v := pointOf(t, s.Value)
		if s.Metric["project"] != p || !near(v, sums[s.Metric["path"]]) || v < sums[ranked[9]] {
			t.Errorf("%s: %v = %v, want project %s, the path's %v visitor-days, at least the 10th's %v", title, s.Metric, v, p, sums[s.Metric["path"]], sums[ranked[9]])
		}
	}

	// Whole days against the same weekday a week earlier, at a different
	// time of day for each day (between 00:30 and 23:30 of the next day,
	// while the day is "yesterday"): the query of docs/metrics.md and the rules'.
	rules, err := alerts.Load(alerts.RulesPath())
	if err != nil {
		t.Fatal(err)
	}
	expr := map[string]string{"docs": docsQuery(t, "# Human visitors of the last whole day versus the same weekday a week earlier")}
	for _, g := range rules.Groups {
		for _, rule := range g.Rules {
			if rule.Record == "mintlify:site_unique_visitors:ratio_1w" || rule.Record == "mintlify:site_ai_share:change_1w" {
				expr[rule.Record] = rule.Expr
			}
		}
	}
	if len(expr) != 3 {
		t.Fatalf("week-over-week rules missing: %v", expr)
	}
	n := 0
	for i, d := range h.days {
		week, ok := h.want[d.AddDate(0, 0, -7)]
		if !ok {
			continue
		}
		now := h.want[d]
		at := analytics.DayStart(d.AddDate(0, 0, 1), h.loc).Add(time.Duration(i%24)*time.Hour + 30*time.Minute)
		for name, e := range expr {
			want := map[string]float64{"human": now.human / week.human, "ai": now.ai / week.ai}
			if name == "mintlify:site_ai_share:change_1w" {
				want = map[string]float64{"": now.ai/(now.human+now.ai) - week.ai/(week.human+week.ai)}
			} else if name == "docs" {
				delete(want, "ai")
			}
			r, err := api.query(e, at)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			seen := 0
			for _, s := range r.Series {
				if s.Metric["project"] != p {
					continue
				}
				seen++
				_, v := pointOf(t, s.Value)
				w, ok := want[s.Metric["traffic"]]
				// No instance label: the rules and the documented query
				// aggregate the replica labels away.
				_, hasInstance := s.Metric["instance"]
				if !ok || s.Metric["window"] != "yesterday" || s.Metric["job"] != h.job || hasInstance || !near(v, w) {
					t.Errorf("%s at %s (day %s): %v = %v, want %v", name, at.UTC(), d.Format(time.DateOnly), s.Metric, v, want)
				}
			}
			if seen != len(want) {
				t.Errorf("%s at %s (day %s): %d series of %s, want %d", name, at.UTC(), d.Format(time.DateOnly), seen, p, len(want))
			}
		}
		n++
	}
	t.Logf("whole days week over week: %d days as the fake API says, by the documented query and both rules", n)
	checkSourcesHistory(t, api, h)
}

// checkSourcesHistory checks the backfilled days of the additive sources
// in Prometheus: at the midnight that ends each day, its views, searches
// and conversations (the API's total, and summed by resolution, caller and
// category) are the fake API's numbers of that day.
func checkSourcesHistory(t *testing.T, api promAPI, h *history) {
	t.Helper()
	sel := fmt.Sprintf(`{project=%q,window="yesterday",job=%q,instance=%q}`, h.project, h.job, h.instance)
	queries := []struct {
		expr string
		want map[time.Time]float64
	}{
		{"mintlify_site_page_views_combined" + sel, h.views},
		{"mintlify_searches" + sel, h.searches},
		{"mintlify_assistant_turns_combined" + sel, h.conversations},
		{"sum(mintlify_assistant_turns_by_resolution" + sel + ")", h.conversations},
		{"sum(mintlify_assistant_turns_by_caller" + sel + ")", h.conversations},
		{"sum(mintlify_assistant_turns_by_category" + sel + ") + sum(mintlify_assistant_turns_other_categories" + sel + ")", h.conversations},
	}
	for _, q := range queries {
		n := 0
		for _, d := range h.days {
			at := analytics.DayStart(d.AddDate(0, 0, 1), h.loc)
			r, err := api.query(q.expr, at)
			if err != nil {
				t.Fatalf("%s: %v", q.expr, err)
			}
			if got := scalarOf(r); !near(got, q.want[d]) || q.want[d] == 0 {
				t.Errorf("%s at %s (day %s): %v, the fake API's %v", q.expr, at.UTC(), d.Format(time.DateOnly), got, q.want[d])
				continue
			}
			n++
		}
		t.Logf("%s: %d days as the fake API says", q.expr, n)
	}
}

// docsQuery returns the PromQL example of docs/metrics.md (PromQL examples)
// under the comment line comment.
func docsQuery(t *testing.T, comment string) string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	found := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !found && strings.TrimSpace(line) == comment:
			found = true
		case found && (strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "```")):
			return strings.Join(lines, "\n")
		case found:
			lines = append(lines, line)
		}
	}
	t.Fatalf("docs/metrics.md: no query under %q", comment)
	return ""
}
