package status

import (
	"context"
	"html"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestRefreshesGroupedByProject: the refreshes are grouped by project, a
// project whose refreshes are all fine collapsed (its rows one click
// away), one with a failing or overdue refresh open; the organization's
// staleness notice is on its budget card.
func TestRefreshesGroupedByProject(t *testing.T) {
	at := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	demand := func(project, window, result string, overdue time.Duration) Demand {
		return Demand{Organization: "acme", Project: project, Source: "visitors", Window: window, Result: result,
			LastRefreshAt: at.Add(-time.Minute), NextRefreshAt: at.Add(5*time.Minute - overdue), Overdue: Duration(overdue),
			LastSuccessAt: at.Add(-time.Minute), Exported: true, Interval: Duration(5 * time.Minute)}
	}
	notice := "3 of 6 refreshes are planned less often than --analytics.max-staleness (1h0m0s) allows: raise the organization's analytics budget."
	r := Report{GeneratedAt: at,
		Organizations: []Organization{{Name: "acme", Projects: []string{"fine", "broken", "late"}, Limit: 60, EffectiveLimit: 60,
			Window: Duration(time.Hour), NextRequestAt: at, Notice: notice}},
		Demands: []Demand{
			demand("fine", "1d", ResultOK, 0), demand("fine", "7d", ResultOK, 0),
			demand("broken", "1d", ResultOK, 0), demand("broken", "7d", "server_error", 0),
			demand("late", "1d", ResultOK, 10*time.Minute), demand("late", "7d", "", 0),
		}}
	_, _, body := get(t, Handler(func(context.Context) Report { return r }, Options{}), "GET", "/")
	groups := regexp.MustCompile(`<details class="project (\w+)" data-project="(\w+)"( open)?>`).FindAllStringSubmatch(body, -1)
	got := map[string]string{}
	for _, g := range groups {
		got[g[2]] = g[1] + g[3]
	}
	want := map[string]string{"fine": "ok", "broken": "bad open", "late": "warn open"}
	if len(got) != len(want) {
		t.Fatalf("project groups %v, want %v", got, want)
	}
	for p, w := range want {
		if got[p] != w {
			t.Errorf("project %s: group %q, want %q", p, got[p], w)
		}
	}
	// Each group holds its own rows, in the plan's order.
	for _, p := range []string{"fine", "broken", "late"} {
		i := strings.Index(body, `data-project="`+p+`"`)
		j := strings.Index(body[i:], "</details>")
		if n := strings.Count(body[i:i+j], `<tr class="demand`); n != 2 {
			t.Errorf("project %s: %d rows in its group, want 2", p, n)
		}
	}
	if !strings.Contains(body, `<p class="notice">`+html.EscapeString(notice)+`</p>`) {
		t.Errorf("the page does not show the organization's notice")
	}
	if !strings.Contains(body, `<summary><b>late</b> <span class="tag warn">1 late or stale</span> <small>2 refreshes, 1 not run yet · next 5m ago</small></summary>`) {
		t.Errorf("the late project's summary line is not as expected:\n%s", body[strings.Index(body, `data-project="late"`):][:400])
	}
}

// TestNextRefreshOnTheBudgetCard: the budget has room for a request, but
// every due refresh waits for a larger share of it (issue 38, item 1):
// the card says when the next refresh really goes, beside "can leave now".
func TestNextRefreshOnTheBudgetCard(t *testing.T) {
	at := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	r := Report{GeneratedAt: at,
		Organizations: []Organization{{Name: "acme", Projects: []string{"api"}, Limit: 60, EffectiveLimit: 60, Spent: 46,
			Window: Duration(time.Hour), NextRequestAt: at}},
		Demands: []Demand{
			{Organization: "acme", Project: "api", Source: "visitors", Window: "30d", NextRefreshAt: at.Add(45 * time.Minute)},
			{Organization: "acme", Project: "api", Source: "visitors", Window: "1d", Result: ResultOK, LastRefreshAt: at.Add(-time.Minute),
				NextRefreshAt: at.Add(50 * time.Minute), LastSuccessAt: at.Add(-time.Minute), Exported: true},
			{Organization: "acme", Project: "api", Source: "views", Window: "1d", Running: true, NextRefreshAt: at},
		}}
	_, _, body := get(t, Handler(func(context.Context) Report { return r }, Options{}), "GET", "/")
	want := `<dt>Next refresh</dt><dd><time datetime="2026-03-10T12:45:00Z" title="2026-03-10T12:45:00Z">in 45m</time>`
	if !strings.Contains(body, want) {
		t.Errorf("budget card lacks %s:\n%s", want, body)
	}
	// Not run yet is never failing.
	if strings.Contains(body, "failing") {
		t.Errorf("a refresh not run yet counts as failing:\n%s", body)
	}
}

// TestKeyExpiryOnThePage: a key expiring in 7 days is on the budget card,
// in the JSON, and a warning of the verdict (issue 38, item 5: it appeared
// nowhere on the page); a key a year away is on the card alone.
func TestKeyExpiryOnThePage(t *testing.T) {
	at := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	r := Report{GeneratedAt: at, Organizations: []Organization{
		{Name: "acme", Limit: 60, EffectiveLimit: 60, Window: Duration(time.Hour), NextRequestAt: at, KeyExpiresAt: at.Add(7 * 24 * time.Hour)},
		{Name: "beta", Limit: 60, EffectiveLimit: 60, Window: Duration(time.Hour), NextRequestAt: at, KeyExpiresAt: at.Add(365 * 24 * time.Hour)},
	}}
	h := Handler(func(context.Context) Report { return r }, Options{})
	_, _, body := get(t, h, "GET", "/")
	for _, want := range []string{
		`<dt>API key expires</dt><dd><span class="tag warn">in 7d</span>`,
		`acme: the API key expires in 7d, on Mar 17 12:00 (api_key_expires): rotate it`,
		`<dt>API key expires</dt><dd><time datetime="2027-03-10T12:00:00Z"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(body, "beta: the API key") {
		t.Errorf("a key a year away is a warning:\n%s", body)
	}
	_, _, js := get(t, h, "GET", "/?format=json")
	if !strings.Contains(js, `"key_expires_at": "2026-03-17T12:00:00Z"`) {
		t.Errorf("JSON lacks key_expires_at:\n%s", js)
	}
}
