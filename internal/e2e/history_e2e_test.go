//go:build e2e

package e2e

// TestDailyHistory checks the Daily row of the visitors dashboard against
// history: 30 days backfilled with `mintlify_exporter backfill` and turned
// into blocks by promtool, plus a live exporter that serves the settled
// numbers of yesterday (window="yesterday"), all read by Debian's
// Prometheus. Every bar must be the fake API's number for that local day.
//
// The test runs in the Etc/GMT±N zone where it is now between 00:00 and
// 01:00, the hour in which the live exporter exports yesterday's settled
// numbers, so that yesterday is both backfilled and served live.

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/alerts"
	"github.com/mintlify-exporter/mintlify_exporter/dashboards"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

const (
	historyProject = "acme-docs"
	historyDays    = 30
	day            = 24 * time.Hour
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

// span is an expected value: exact (lo == hi) for a day the fake API has
// finished, a range for one it still counts (see TestDailyHistory).
type span struct{ lo, hi float64 }

func (s span) add(o span) span { return span{s.lo + o.lo, s.hi + o.hi} }

func (s span) holds(v float64) bool {
	tol := 1e-9 * math.Max(1, math.Abs(s.hi))
	return v >= s.lo-tol && v <= s.hi+tol
}

func (s span) String() string {
	if s.lo == s.hi {
		return strconv.FormatFloat(s.lo, 'f', -1, 64)
	}
	return fmt.Sprintf("[%g, %g]", s.lo, s.hi)
}

// dayNumbers is what the fake API answers for one day of a project.
type dayNumbers struct {
	human, ai, total float64
	pages            map[string]float64 // path -> deduplicated unique visitors
}

// fakeDay asks a fake API like the sandbox's (default 300 paths) for one
// date, dateFrom=date and dateTo=date+1, as of at: the site totals and every
// page, through its HTTP handler.
func fakeDay(t *testing.T, date time.Time, at time.Time) dayNumbers {
	t.Helper()
	fake := fakeapi.New(fakeapi.Options{Projects: projects, Now: func() time.Time { return at }})
	out := dayNumbers{pages: map[string]float64{}}
	for offset := 0; ; offset += 250 {
		q := fmt.Sprintf("/v1/analytics/%s/visitors?dateFrom=%s&dateTo=%s&limit=250&offset=%d",
			historyProject, date.Format(time.DateOnly), date.AddDate(0, 0, 1).Format(time.DateOnly), offset)
		req := httptest.NewRequest(http.MethodGet, q, nil)
		req.Header.Set("Authorization", "Bearer mint_e2e_history")
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
	h, a, tot := fakeapi.New(fakeapi.Options{Projects: projects}).DayCounts(historyProject, date, at)
	if float64(h) != out.human || float64(a) != out.ai || float64(tot) != out.total {
		t.Fatalf("fake API %s: totals %v/%v/%v, DayCounts says %d/%d/%d", date.Format(time.DateOnly), out.human, out.ai, out.total, h, a, tot)
	}
	return out
}

// dayRange combines a day's numbers at two times into spans.
type dayRange struct{ lo, hi dayNumbers }

func (d dayRange) get(f func(dayNumbers) float64) span { return span{f(d.lo), f(d.hi)} }

func TestDailyHistory(t *testing.T) {
	began := time.Now()
	promBin := lookTool(t, "prometheus", "prometheus")
	promtool := testutil.Promtool(t)

	bin, err := testutil.BuildExporter(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// The live exporter serves yesterday only until 01:00 local: leave the
	// test (some 15 seconds from here) at least 2 minutes of it, or wait for
	// the next hour, the first of the next zone west.
	if now := time.Now(); now.Minute() >= 58 {
		wait := now.Truncate(time.Hour).Add(time.Hour + 5*time.Second).Sub(now)
		t.Logf("%s: waiting %s for the next local midnight of an Etc/GMT zone", now.UTC().Format(time.TimeOnly), wait.Round(time.Second))
		time.Sleep(wait)
	}
	start := time.Now()
	zone, H := localMidnightZone(start)
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	local := start.In(loc)
	if local.Hour() != 0 {
		t.Fatalf("%s: local time %s is not in the first hour of the day", zone, local)
	}
	dayOffset := fmt.Sprintf("-%dh", 25-H) // -(25h - H)
	today := time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, time.UTC)
	yesterday := today.AddDate(0, 0, -1)
	first := yesterday.AddDate(0, 0, -(historyDays - 1))
	var days []time.Time // local dates as UTC midnights: also each day's 1d step
	for d := first; !d.After(yesterday); d = d.AddDate(0, 0, 1) {
		days = append(days, d)
	}
	t.Logf("zone %s (UTC%+d), local time %s, day_offset %s, days %s to %s",
		zone, H, local.Format(time.DateTime), dayOffset, first.Format(time.DateOnly), yesterday.Format(time.DateOnly))

	// 1. The backfill, and its blocks in a fresh data directory.
	dir := t.TempDir()
	omFile, dataDir := filepath.Join(dir, "history.om"), filepath.Join(dir, "data")
	beforeBackfill := time.Now()
	backfill := exec.Command(bin, "backfill", "--mintlify.sandbox", "--mintlify.project="+historyProject,
		"--visitors.timezone="+zone, "--from="+first.Format(time.DateOnly), "--to="+yesterday.Format(time.DateOnly),
		"--output="+omFile)
	if out, err := backfill.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(backfill.Args, " "), err, out)
	}
	t.Logf("backfilled %d days in %s", historyDays, time.Since(beforeBackfill).Round(100*time.Millisecond))
	if out, err := exec.Command(promtool, "tsdb", "create-blocks-from", "openmetrics", omFile, dataDir).CombinedOutput(); err != nil {
		t.Fatalf("promtool tsdb create-blocks-from openmetrics: %v\n%s", err, out)
	}

	// 2. The live exporter: its final-day walk starts at once (delay 0s).
	exporterAddr := testutil.FreeAddr(t)
	exporter := startProc(t, "exporter", bin, []string{
		"--web.listen-address=" + exporterAddr,
		"--mintlify.sandbox",
		"--mintlify.project=" + historyProject,
		"--visitors.timezone=" + zone,
		"--visitors.final-day-delay=0s",
	}, nil)

	// 3. Prometheus on the backfilled data, scraping the live exporter every
	// 5s. The live window="1d" series are dropped: the sandbox counts a day
	// as the fake API's UTC day, so at 00:30 local in Etc/GMT+12 its "today
	// so far" already holds 12.5 hours of traffic and can top a quiet
	// yesterday, which the real first hour of a day never does. Without it,
	// window="1d" is the backfilled data alone.
	promAddr := testutil.FreeAddr(t)
	promDir := t.TempDir()
	writeFile(t, filepath.Join(promDir, "prometheus.yml"), fmt.Appendf(nil, `global:
  scrape_interval: 5s
  evaluation_interval: 5s
rule_files:
  - %q
scrape_configs:
  - job_name: %s
    static_configs:
      - targets: [%q]
    metric_relabel_configs:
      - source_labels: [__name__, window]
        regex: 'mintlify_(site|page)_unique_visitors(_deduplicated)?;1d'
        action: drop
`, alerts.RulesPath(), scrapeJob, exporterAddr))
	prom := startProc(t, "prometheus", promBin, []string{
		"--config.file=" + filepath.Join(promDir, "prometheus.yml"),
		"--storage.tsdb.path=" + dataDir,
		"--storage.tsdb.retention.time=400d", // the default 15d would delete half the history
		"--web.listen-address=" + promAddr,
	}, nil)
	procs := []*proc{exporter, prom}
	waitReady(t, "http://"+promAddr+"/-/ready", procs)
	api := promAPI{base: "http://" + promAddr}

	paths := len(fakeDay(t, yesterday, start).pages)
	eventually(t, `live window="yesterday" scraped, site and every page`, 60*time.Second, time.Second, procs, func() error {
		for q, want := range map[string]int{
			`count(mintlify_site_unique_visitors{window="yesterday"})`:              2,
			`count(mintlify_site_unique_visitors_deduplicated{window="yesterday"})`: 1,
			`count(mintlify_page_unique_visitors_deduplicated{window="yesterday"})`: paths,
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
	afterLive := time.Now()
	if l := afterLive.In(loc); l.Hour() != 0 {
		t.Fatalf("local time %s: past the hour in which yesterday is exported", l)
	}

	// Expected numbers. A finished (UTC) day of the fake reads the same at
	// any later time. The fake counts local date D as its UTC day D: east
	// of UTC (H > 0) local yesterday is not over there yet, and its numbers
	// still grow, so yesterday is a range: from before the backfill to after
	// the live walk.
	want := map[time.Time]dayRange{}
	for _, d := range days {
		n := fakeDay(t, d, start)
		want[d] = dayRange{n, n}
	}
	settled := !yesterday.Add(day).After(beforeBackfill)
	if !settled {
		want[yesterday] = dayRange{fakeDay(t, yesterday, beforeBackfill), fakeDay(t, yesterday, afterLive)}
		t.Logf("UTC%+d: the fake API has not finished %s (its UTC day) yet: checking that day against a range", H, yesterday.Format(time.DateOnly))
	}

	// 4. The Daily panels, their variables filled in as Grafana would.
	ds, err := dashboards.Load(dashboards.Dir())
	if err != nil {
		t.Fatal(err)
	}
	vars, err := dashboardVars(api, "visitors.json", ds["visitors.json"])
	if err != nil {
		t.Fatal(err)
	}
	vars[dashboards.DayOffsetVariable] = dayOffset
	vars["__range"], vars["__range_s"], vars["__range_ms"] = "30d", "2592000", "2592000000"
	t.Logf("variables %v", vars)
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
	rangeStart, rangeEnd := first, yesterday
	daily := func(name, expr string, labels func(map[string]string) string) map[string]map[time.Time]float64 {
		r, err := api.queryRange(expr, rangeStart, rangeEnd, day)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out := map[string]map[time.Time]float64{}
		for _, s := range r.Series {
			k := labels(s.Metric)
			out[k] = map[time.Time]float64{}
			for _, v := range s.Values {
				ts, val := pointOf(t, v)
				out[k][ts] = val
			}
		}
		return out
	}
	check := func(name string, got map[time.Time]float64, want func(d time.Time) (span, bool)) {
		t.Helper()
		n := 0
		for _, d := range days {
			w, ok := want(d)
			v, have := got[d]
			switch {
			case !ok && have:
				t.Errorf("%s %s: %v, want no value", name, d.Format(time.DateOnly), v)
			case ok && !have:
				t.Errorf("%s %s: no value, want %s", name, d.Format(time.DateOnly), w)
			case ok && !w.holds(v):
				t.Errorf("%s %s: %v, want %s", name, d.Format(time.DateOnly), v, w)
			case ok:
				n++
			}
		}
		for ts := range got {
			if !slices.Contains(days, ts) {
				t.Errorf("%s: value at %s, which is no step of the range", name, ts.UTC())
			}
		}
		t.Logf("%s: %d days as the fake API says", name, n)
	}
	byTraffic := func(m map[string]string) string { return m["project"] + "/" + m["traffic"] }
	byProject := func(m map[string]string) string { return m["project"] }
	onlyProject := func(name string, got map[string]map[time.Time]float64, keys ...string) {
		t.Helper()
		var have []string
		for k := range got {
			have = append(have, k)
		}
		slices.Sort(have)
		slices.Sort(keys)
		if !slices.Equal(have, keys) {
			t.Fatalf("%s: series %v, want %v", name, have, keys)
		}
	}
	always := func(f func(d time.Time) span) func(time.Time) (span, bool) {
		return func(d time.Time) (span, bool) { return f(d), true }
	}

	// a) human and AI.
	title := "Daily unique visitors, human and AI"
	got := daily(title, panel(title), byTraffic)
	onlyProject(title, got, historyProject+"/human", historyProject+"/ai")
	check(title+", human", got[historyProject+"/human"], always(func(d time.Time) span {
		return want[d].get(func(n dayNumbers) float64 { return n.human })
	}))
	check(title+", AI", got[historyProject+"/ai"], always(func(d time.Time) span {
		return want[d].get(func(n dayNumbers) float64 { return n.ai })
	}))

	// b) deduplicated.
	title = "Daily unique visitors, deduplicated"
	total := func(d time.Time) span { return want[d].get(func(n dayNumbers) float64 { return n.total }) }
	got = daily(title, panel(title), byProject)
	onlyProject(title, got, historyProject)
	check(title, got[historyProject], always(total))

	// c), d) against 7 and 28 days earlier, for each day whose earlier day is
	// in the range too (always a finished day, so the ratio's range is the
	// numerator's).
	for _, c := range []struct {
		title string
		back  int
	}{{"Daily visitors, week over week", 7}, {"Daily visitors, 4 weeks over 4 weeks", 28}} {
		got = daily(c.title, panel(c.title), byProject)
		onlyProject(c.title, got, historyProject)
		check(c.title, got[historyProject], func(d time.Time) (span, bool) {
			earlier := d.AddDate(0, 0, -c.back)
			if earlier.Before(first) {
				return span{}, false
			}
			now, then := total(d), total(earlier)
			if then.lo != then.hi {
				t.Fatalf("%s: %s is not a finished day", c.title, earlier.Format(time.DateOnly))
			}
			return span{now.lo / then.lo, now.hi / then.lo}, true
		})
	}

	// e) top pages by visitor-days: an instant query at noon UTC after the
	// last day's step, so that [$__range:1d] (30d) holds the 30 days' steps.
	title = "Top pages by visitor-days"
	sums := map[string]span{}
	for _, d := range days {
		for p := range want[d].hi.pages {
			sums[p] = sums[p].add(span{want[d].lo.pages[p], want[d].hi.pages[p]})
		}
	}
	ranked := make([]string, 0, len(sums))
	for p := range sums {
		ranked = append(ranked, p)
	}
	slices.SortFunc(ranked, func(a, b string) int { return cmp.Or(cmp.Compare(sums[b].lo, sums[a].lo), strings.Compare(a, b)) })
	r, err := api.query(panel(title), yesterday.Add(12*time.Hour))
	if err != nil {
		t.Fatalf("%s: %v", title, err)
	}
	if len(r.Series) != 10 {
		t.Fatalf("%s: %d rows, want 10", title, len(r.Series))
	}
	var lowest float64 = math.Inf(1)
	returned := map[string]bool{}
	for _, s := range r.Series {
		p := s.Metric["path"]
		_, v := pointOf(t, s.Value)
		returned[p] = true
		lowest = math.Min(lowest, v)
		if s.Metric["project"] != historyProject || !sums[p].holds(v) {
			t.Errorf("%s: %v = %v, want project %s and %s visitor-days", title, s.Metric, v, historyProject, sums[p])
		}
	}
	for _, p := range ranked {
		if !returned[p] && sums[p].lo > lowest {
			t.Errorf("%s: %s has %s visitor-days, more than the table's lowest (%v), and is not in it", title, p, sums[p], lowest)
		}
	}
	t.Logf("%s: %v (expected top 3: %s %s, %s %s, %s %s)", title, len(r.Series), ranked[0], sums[ranked[0]], ranked[1], sums[ranked[1]], ranked[2], sums[ranked[2]])

	// 5. Yesterday, served live and backfilled, reads the same from either
	// source alone and through the panel. One step at yesterday's UTC
	// midnight, as in the panel.
	dedup := func(window string) string {
		return strings.Replace(panel("Daily unique visitors, deduplicated"), `window=~"1d|yesterday"`, `window=~"`+window+`"`, 1)
	}
	read := func(expr string) float64 {
		r, err := api.queryRange(expr, yesterday, yesterday, day)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		if len(r.Series) != 1 || len(r.Series[0].Values) != 1 {
			t.Fatalf("%s: %d series, want one with one value: %+v", expr, len(r.Series), r.Series)
		}
		_, v := pointOf(t, r.Series[0].Values[0])
		return v
	}
	backfilled, live, both := read(dedup("1d")), read(dedup("yesterday")), read(dedup("1d|yesterday"))
	t.Logf("%s deduplicated: backfilled %v, live yesterday %v, panel %v", yesterday.Format(time.DateOnly), backfilled, live, both)
	if settled {
		if backfilled != live || both != live || !total(yesterday).holds(live) {
			t.Errorf("%s: backfilled %v, live yesterday %v, panel %v: want all %s", yesterday.Format(time.DateOnly), backfilled, live, both, total(yesterday))
		}
	} else {
		// Not over in the fake's UTC day: the live walk came later and saw more.
		if !(backfilled <= live) || both != live || !total(yesterday).holds(backfilled) || !total(yesterday).holds(live) {
			t.Errorf("%s: backfilled %v, live yesterday %v, panel %v: want backfilled <= live = panel, both in %s", yesterday.Format(time.DateOnly), backfilled, live, both, total(yesterday))
		}
	}
	t.Logf("done in %s (%s after the wait)", time.Since(began).Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond))
	_ = os.Remove(omFile)
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
