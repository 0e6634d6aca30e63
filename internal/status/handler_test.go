package status

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// get serves one request and returns the status, headers and body.
func get(t *testing.T, h http.Handler, method, target string) (int, http.Header, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	return rec.Code, rec.Header(), rec.Body.String()
}

var demandRow = regexp.MustCompile(`<tr class="demand (\w+)" data-project="([^"]*)" data-source="([^"]*)" data-window="([^"]*)">`)

// demandLevels maps project/source/window to the row's level.
func demandLevels(body string) map[string]string {
	out := map[string]string{}
	for _, m := range demandRow.FindAllStringSubmatch(body, -1) {
		out[m[2]+"/"+m[3]+"/"+m[4]] = m[1]
	}
	return out
}

// wantDemandLevels is how the sample's rows must be marked.
var wantDemandLevels = map[string]string{
	"acme-docs/visitors/1d":        "ok",
	"acme-api/visitors/1d":         "ok",
	"acme-docs/views/1d":           "ok",
	"acme-api/views/1d":            "ok",
	"acme-docs/visitors/7d":        "bad",  // server_error
	"acme-docs/visitors/30d":       "ok",   // running
	"acme-api/feedback/7d":         "warn", // 7m overdue
	"acme-docs/searches/7d":        "ok",
	"acme-docs/assistant/7d":       "ok", // not run yet
	"acme-docs/visitors/yesterday": "ok",
	"globex-dev/visitors/1d":       "bad",
	"globex-dev/visitors/30d":      "bad",
}

func TestHTMLShowsTheReport(t *testing.T) {
	h := Handler(sampleSource, Options{})
	code, hdr, body := get(t, h, "GET", "/")
	if code != 200 {
		t.Fatalf("status %d, body %s", code, body)
	}
	if ct := hdr.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if csp := hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "script-src") {
		t.Errorf("Content-Security-Policy %q: want no script allowed", csp)
	}
	if got := demandLevels(body); !reflect.DeepEqual(got, wantDemandLevels) {
		t.Errorf("demand rows (project/source/window: level):\n got %v\nwant %v", got, wantDemandLevels)
	}
	for _, want := range []string{
		`<meta name="viewport" content="width=device-width, initial-scale=1">`,
		// Verdict.
		`<section class="verdict bad" id="verdict">`,
		`<strong>8 of 12 refreshes ok, 1 not run yet</strong>`,
		`<li>globex: paused after a 429 until 14:08:20</li>`,
		`<li>3 refreshes failing</li>`, `<li>1 refresh overdue</li>`,
		`<li>1 window&#39;s data too old to export</li>`,
		`<li>a poll of job job_7f3a91 is 2m 5s overdue</li>`,
		// Budgets.
		`<article class="card org ok" data-organization="acme">`,
		`<article class="card org bad" data-organization="globex">`,
		`<p class="projects">acme-docs, acme-api</p>`,
		`<b>47</b> of 60 requests spent in the last 1h`,
		`<span style="width:78%">`, `<b>20</b> of 20 requests`, `<span style="width:100%">`,
		`<dd>54.2 requests per 1h</dd>`,
		`<br><span class="tag warn">20 until 15:06:30</span> after a 429</dd>`,
		`<dd>can leave now</dd>`,
		`<time datetime="2026-11-23T14:11:40Z" title="2026-11-23T14:11:40Z">in 4m 10s</time> <span class="abs">14:11:40</span>`,
		`<span class="tag bad">until 14:08:20</span> <span class="abs">in 50s</span> after a 429`,
		`<dd>3 since start</dd>`,
		// Demands: result, times relative and absolute, duration, cost, interval, age.
		`<span class="tag bad" title="the API failed (5xx)">server_error</span>`,
		`<span class="tag bad" title="the API answered 429 (someone else spends the organization&#39;s quota)">rate_limited</span>`,
		`>budget_exhausted</span>`,
		`<span class="tag" title="not refreshed yet">pending</span>`,
		`<span class="tag">running</span>`, `running now`,
		`<time datetime="2026-11-23T14:01:30Z" title="2026-11-23T14:01:30Z">6m ago</time> <span class="abs">14:01:30</span>`,
		`<td class="minor" data-label="Took">2.4s</td>`, `<td class="minor" data-label="Took">31s</td>`, `<td class="minor" data-label="Took">600ms</td>`,
		`<span class="tag warn">7m overdue</span>`,
		`<span>4 req <span class="est">est.</span></span>`, `<span>3 req</span>`,
		`<td class="minor" data-label="Every">12m</td>`, `<td class="minor" data-label="Every">6h</td>`,
		`<td class="minor" data-label="Every">once a day</td>`,
		`<h3 class="orggroup">acme <small>10 planned, 1 failing, 1 late or stale</small></h3>`,
		`<h3 class="orggroup">globex <small>2 planned, 2 failing</small></h3>`,
		`2h 14m`, `1d 7h <span class="tag warn">too old, not exported</span>`, `no data yet`,
		// Jobs.
		`<h2 id="projects">Agent jobs</h2>`, `<h2 id="deployments">Deployments</h2>`, `<p class="muted">Newest first.</p>`,
		`<th class="num">paused</th>`,
		`<tr class="row" data-kind="projects" data-project="acme-api">`,
		`<td class="num minor" data-label="completed">41</td>`,
		`<td class="num minor warn" data-label="lost">1</td>`,
		`<td class="num minor warn" data-label="Unknown creates">1</td>`,
		`<td class=" warn" data-label="Status"><code>failure</code></td>`,
		`job <code>job_7f3a91</code> of <b>acme-docs</b>`, `<span class="tag warn">2m 5s overdue</span>`,
		// Exporter.
		`version 0.9.0 · up 1d 2h`, `<code>/etc/mintlify/exporter.yml</code>`,
		`last reload <span class="tag ok">ok</span>`,
		// Links.
		`<a href="/metrics">Metrics</a>`, `<a href="/-/healthy">Health</a>`, `<a href="/api/v2/agent/acme-docs/jobs">Jobs of acme-docs</a>`,
		`<a href="?format=json">JSON</a>`,
		`times in UTC`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(body, "<script") {
		t.Error("page has a script")
	}
}

func TestJSONListsAreNeverNull(t *testing.T) {
	rep := Report{Organizations: []Organization{{Name: "acme"}}, Jobs: &Jobs{Sections: []Section{{Key: "things"}}}}
	_, _, body := get(t, Handler(func(context.Context) Report { return rep }, Options{}), "GET", "/?format=json")
	for _, want := range []string{`"organizations": [`, `"projects": []`, `"demands": []`, `"things": []`, `"most_overdue_poll": null`} {
		if !strings.Contains(body, want) {
			t.Errorf("JSON lacks %s:\n%s", want, body)
		}
	}
	if rep.Organizations[0].Projects != nil || rep.Jobs.Sections[0].JSON != nil {
		t.Error("the handler wrote into the source's report")
	}
	_, _, body = get(t, Handler(func(context.Context) Report { return Report{} }, Options{}), "GET", "/?format=json")
	if !strings.Contains(body, `"organizations": []`) || !strings.Contains(body, `"jobs": null`) {
		t.Errorf("empty report:\n%s", body)
	}
}

func TestHTMLEmptyAndQuietReports(t *testing.T) {
	now := sampleAt
	src := func(context.Context) Report {
		return Report{Exporter: Exporter{Version: "1.0.0", StartedAt: now.Add(-time.Hour)}}
	}
	_, _, body := get(t, Handler(src, Options{Now: func() time.Time { return now }}), "GET", "/")
	for _, want := range []string{
		`<section class="verdict ok" id="verdict">`, "Nothing planned",
		"No organization: the exporter reads no analytics.",
		"The gateway is off", "flags only (no configuration file)",
		`<time datetime="2026-11-23T13:07:30Z"`, // started, from the handler's clock
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}

	rep := sampleReport()
	rep.Organizations = rep.Organizations[:1]
	rep.Demands = slices.DeleteFunc(rep.Demands, func(d Demand) bool {
		return d.Organization != "acme" || d.Result != ResultOK || d.NextRefreshAt.Before(sampleAt)
	})
	rep.Jobs.MostOverduePoll = nil
	_, _, body = get(t, Handler(func(context.Context) Report { return rep }, Options{}), "GET", "/")
	for _, want := range []string{
		`<section class="verdict ok" id="verdict">`, "<strong>Working: all 6 refreshes ok</strong>", "No poll is overdue.",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
}

// TestHTMLEscapesUserData: project ids, paths, names and statuses are user
// data; none may become markup, and an error's text never shows.
func TestHTMLEscapesUserData(t *testing.T) {
	const evil = `<img src=x onerror=alert(1)>"'`
	rep := sampleReport()
	rep.Organizations[0].Name = evil
	rep.Organizations[0].Projects = []string{evil}
	rep.Demands[0].Organization = evil
	rep.Demands[0].Project = evil
	rep.Demands[0].Window = evil
	rep.Demands[1].Result = `mintlify API visitors: HTTP 500: {"error":"<b>secret body</b>"}`
	rep.Jobs.Sections[0].Rows[0].Project = evil
	rep.Jobs.Sections[0].Rows[0].Cells[0].Text = evil
	rep.Jobs.Sections[1].Title = evil
	rep.Jobs.Sections[1].Rows[0].Cells[1].Text = evil
	rep.Jobs.MostOverduePoll.JobID = evil
	rep.Exporter.Config.File = evil
	rep.Exporter.Version = evil
	rep.Links = []Link{{Text: "Metrics", Href: "/metrics"}, {Text: "Jobs of " + evil, Href: "/api/v2/agent/x/jobs"}}
	h := Handler(func(context.Context) Report { return rep }, Options{})
	_, _, body := get(t, h, "GET", "/")
	if strings.Contains(body, "<img") || strings.Contains(body, "<b>secret") || strings.Contains(body, "secret body") {
		t.Errorf("user data or error text unescaped:\n%s", body)
	}
	if n := strings.Count(body, "&lt;img src=x onerror=alert(1)&gt;"); n < 8 {
		t.Errorf("escaped user data shown %d times, want every place (>= 8)", n)
	}
	if got := demandLevels(body)["acme-api/visitors/1d"]; got != "bad" {
		t.Errorf("free-text result: row level %q, want bad", got)
	}
	_, _, js := get(t, h, "GET", "/?format=json")
	if strings.Contains(js, "secret body") || !strings.Contains(js, `"result": "error"`) {
		t.Errorf("JSON shows an error's text or not its category:\n%s", js)
	}
}

func TestJSONRoundTrips(t *testing.T) {
	h := Handler(sampleSource, Options{})
	code, hdr, body := get(t, h, "GET", "/?format=json")
	if code != 200 || hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, Content-Type %q", code, hdr.Get("Content-Type"))
	}
	var got Report
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	want := sampleReport()
	want.derive(time.Time{})
	// The sections come back as their JSON (Jobs.Rows reads them), which
	// the re-encoding below compares.
	gotJobs := got.Jobs
	if !reflect.DeepEqual(got.Jobs.MostOverduePoll, want.Jobs.MostOverduePoll) {
		t.Errorf("decoded poll %+v, want %+v", got.Jobs.MostOverduePoll, want.Jobs.MostOverduePoll)
	}
	got.Jobs, want.Jobs = nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decoded report differs:\n got %+v\nwant %+v", got, want)
	}
	got.Jobs = gotJobs
	again, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if string(again)+"\n" != body {
		t.Errorf("re-encoded report differs from the served one")
	}

	// The names scripts rely on (docs/operations.md, "Status page").
	var raw struct {
		GeneratedAt   string           `json:"generated_at"`
		Exporter      map[string]any   `json:"exporter"`
		Organizations []map[string]any `json:"organizations"`
		Demands       []map[string]any `json:"demands"`
		Jobs          map[string]any   `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(body), &raw); err != nil {
		t.Fatal(err)
	}
	if raw.GeneratedAt != "2026-11-23T14:07:30Z" {
		t.Errorf("generated_at %q", raw.GeneratedAt)
	}
	checks := []struct {
		what string
		obj  map[string]any
		want map[string]any
	}{
		{"exporter", raw.Exporter, map[string]any{"version": "0.9.0", "uptime_seconds": 94320.0, "sandbox": false, "started_at": "2026-11-22T11:55:30Z"}},
		{"config", raw.Exporter["config"].(map[string]any), map[string]any{"file": "/etc/mintlify/exporter.yml", "last_reload_successful": true, "last_reload_at": "2026-11-23T11:05:30Z", "last_reload_success_at": "2026-11-23T11:05:30Z"}},
		{"organization globex", raw.Organizations[1], map[string]any{"name": "globex", "limit": 40.0, "effective_limit": 20.0, "spent": 20.0, "planned": 18.5,
			"window_seconds": 3600.0, "next_request_at": "2026-11-23T14:11:40Z", "paused_until": "2026-11-23T14:08:20Z", "reduced_until": "2026-11-23T15:06:30Z", "rejections": 3.0}},
		{"demand acme-docs visitors 1d", raw.Demands[0], map[string]any{"organization": "acme", "project": "acme-docs", "source": "visitors", "window": "1d",
			"result": "ok", "last_refresh_at": "2026-11-23T14:01:30Z", "duration_seconds": 2.4, "next_refresh_at": "2026-11-23T14:13:30Z", "overdue_seconds": 0.0,
			"cost": 3.0, "cost_known": true, "interval_seconds": 720.0, "last_success_at": "2026-11-23T14:01:30Z", "data_age_seconds": 360.0, "exported": true, "running": false}},
		{"demand acme-api feedback 7d", raw.Demands[6], map[string]any{"project": "acme-api", "source": "feedback", "overdue_seconds": 420.0}},
		{"most overdue poll", raw.Jobs["most_overdue_poll"].(map[string]any), map[string]any{"project": "acme-docs", "kind": "job", "job_id": "job_7f3a91", "due_at": "2026-11-23T14:05:25Z", "overdue_seconds": 125.0}},
		{"deployment", raw.Jobs["deployments"].([]any)[1].(map[string]any), map[string]any{"project": "acme-docs", "status": "failure", "branch": "main"}},
		{"project jobs", raw.Jobs["projects"].([]any)[1].(map[string]any), map[string]any{"project": "acme-api", "unknown_creates": 1.0,
			"by_status": map[string]any{"completed": 5.0, "lost": 1.0, "paused": 1.0}}},
	}
	for _, c := range checks {
		for k, v := range c.want {
			if !reflect.DeepEqual(c.obj[k], v) {
				t.Errorf("%s: %q = %#v, want %#v", c.what, k, c.obj[k], v)
			}
		}
	}
	if _, ok := raw.Demands[8]["last_refresh_at"]; ok {
		t.Errorf("a demand never refreshed has last_refresh_at: %v", raw.Demands[8])
	}
}

func TestBadRequests(t *testing.T) {
	h := Handler(sampleSource, Options{})
	for _, c := range []struct {
		method, target string
		code           int
		allow, errText string
	}{
		{"GET", "/?format=xml", 400, "", `unknown format "xml": use html or json`},
		{"GET", "/?format=JSON", 400, "", `unknown format "JSON": use html or json`},
		{"POST", "/", 405, "GET, HEAD", "method not allowed: use GET or HEAD"},
		{"PUT", "/?format=json", 405, "GET, HEAD", "method not allowed: use GET or HEAD"},
		{"DELETE", "/", 405, "GET, HEAD", "method not allowed: use GET or HEAD"},
	} {
		code, hdr, body := get(t, h, c.method, c.target)
		var e struct {
			Error string `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &e); err != nil || code != c.code || e.Error != c.errText ||
			hdr.Get("Content-Type") != "application/json" || hdr.Get("Allow") != c.allow {
			t.Errorf("%s %s: %d %v Allow %q, body %s; want %d with error %q", c.method, c.target, code, err, hdr.Get("Allow"), body, c.code, c.errText)
		}
	}
	for _, target := range []string{"/", "/?format=html", "/?format=json"} {
		code, _, body := get(t, h, "HEAD", target)
		if code != 200 || body != "" {
			t.Errorf("HEAD %s: %d, %d bytes", target, code, len(body))
		}
	}
	if code, _, _ := get(t, h, "GET", "/?format=html"); code != 200 {
		t.Errorf("format=html: %d", code)
	}
}

// TestSharedReport: a source may hand every request the same report; the
// handler must not write into it (the race detector would see it).
func TestSharedReport(t *testing.T) {
	shared := sampleReport()
	shared.GeneratedAt = time.Time{}
	h := Handler(func(context.Context) Report { return shared }, Options{Now: func() time.Time { return sampleAt }})
	srv := httptest.NewServer(h)
	defer srv.Close()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			target := srv.URL + []string{"/", "/?format=json"}[i%2]
			resp, err := http.Get(target)
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
	wg.Wait()
	if shared.Demands[0].DataAge != 0 || shared.Jobs.MostOverduePoll.Overdue != 0 || !shared.GeneratedAt.IsZero() {
		t.Error("the handler wrote into the source's report")
	}
}

func TestSourceGetsTheRequestContext(t *testing.T) {
	type key struct{}
	var got any
	h := Handler(func(ctx context.Context) Report { got = ctx.Value(key{}); return Report{} }, Options{})
	req := httptest.NewRequest("GET", "/", nil).WithContext(context.WithValue(context.Background(), key{}, "mine"))
	h.ServeHTTP(httptest.NewRecorder(), req)
	if got != "mine" {
		t.Errorf("source got context value %v", got)
	}
}

func TestDurationJSON(t *testing.T) {
	for _, d := range []time.Duration{0, time.Millisecond, 2400 * time.Millisecond, 94320 * time.Second, 400 * 24 * time.Hour, -time.Second} {
		b, err := json.Marshal(Duration(d))
		if err != nil {
			t.Fatal(err)
		}
		var back Duration
		if err := json.Unmarshal(b, &back); err != nil || time.Duration(back) != d {
			t.Errorf("%s -> %s -> %v, %v", d, b, time.Duration(back), err)
		}
	}
	var d Duration
	for _, bad := range []string{`"1s"`, `1e300`, `null x`} {
		if err := json.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestHumanDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", -time.Second: "0s", 320 * time.Millisecond: "320ms", 4200 * time.Millisecond: "4.2s",
		5 * time.Second: "5s", 42 * time.Second: "42s", 250 * time.Second: "4m 10s", 4 * time.Minute: "4m",
		3*time.Hour + 5*time.Minute + 20*time.Second: "3h 5m", 2 * time.Hour: "2h", 52 * time.Hour: "2d 4h",
		59*time.Minute + 59*time.Second + 600*time.Millisecond: "1h",
	} {
		if got := humanDuration(Duration(d)); got != want {
			t.Errorf("humanDuration(%s) = %q, want %q", d, got, want)
		}
	}
}

func TestMakeWhen(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no time zone database:", err)
	}
	for _, c := range []struct {
		t        time.Time
		loc      *time.Location
		rel, abs string
	}{
		{sampleAt, time.UTC, "now", "14:07:30"},
		{sampleAt.Add(-90 * time.Second), time.UTC, "1m 30s ago", "14:06:00"},
		{sampleAt.Add(10 * time.Hour), time.UTC, "in 10h", "Nov 24 00:07"},
		{sampleAt.Add(10 * time.Hour), berlin, "in 10h", "Nov 24 01:07"},
		{sampleAt.Add(-400 * 24 * time.Hour), time.UTC, "400d ago", "2025-10-19 14:07"},
	} {
		w := makeWhen(c.t, sampleAt, c.loc)
		if w.Rel != c.rel || w.Abs != c.abs || w.ISO != c.t.In(c.loc).Format(time.RFC3339) {
			t.Errorf("makeWhen(%s, %s) = %+v, want %q %q", c.t, c.loc, w, c.rel, c.abs)
		}
	}
	if w := makeWhen(time.Time{}, sampleAt, time.UTC); w != (when{}) {
		t.Errorf("zero time: %+v", w)
	}
	_, _, body := get(t, Handler(sampleSource, Options{Location: berlin}), "GET", "/")
	if !strings.Contains(body, `<time datetime="2026-11-23T15:01:30&#43;01:00" title="2026-11-23T15:01:30&#43;01:00">6m ago</time> <span class="abs">15:01:30</span>`) ||
		!strings.Contains(body, "times in CET") {
		t.Error("times not shown in the page's zone")
	}
}
