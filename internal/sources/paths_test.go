package sources

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/secrets"
)

// TestBuildRedactsPaths: a visitor's path that carries the API key, whole,
// cut or encoded, becomes a label value without it; paths that differed
// only by the key merge as duplicates do.
func TestBuildRedactsPaths(t *testing.T) {
	t.Parallel()
	const key = "mint_q8W2zR5tY7uI9oP1"
	res := &apiclient.VisitorsReport{Paths: []apiclient.PathVisitors{
		{Path: "/docs/intro", VisitorCounts: apiclient.VisitorCounts{Human: 5, Total: 5}},
		{Path: "/login?token=" + key, VisitorCounts: apiclient.VisitorCounts{Human: 3, Total: 3}},
		{Path: "/login?token=" + key[:len(key)-1], VisitorCounts: apiclient.VisitorCounts{Human: 2, Total: 2}},
		{Path: "/share/mint_q8W2zR5t%59u", VisitorCounts: apiclient.VisitorCounts{Human: 1, Total: 1}},
	}}
	p := analytics.PathPolicy{Redact: secrets.NewRedactor(key).String}
	s := buildTraffic(p, res, "2026-03-10", "2026-03-11", time.Unix(0, 0))
	var got []string
	for _, pc := range s.Paths {
		got = append(got, pc.Path)
		if strings.Contains(pc.Path, key[5:13]) || strings.Contains(pc.Path, key[8:16]) {
			t.Errorf("label value %q carries the key", pc.Path)
		}
	}
	want := []string{"/docs/intro", "/login?token=" + secrets.Mask, "/share/" + secrets.Mask + "u"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("paths %q, want %q", got, want)
	}
}

// TestBuildSnapshot covers what the collector relies on: unique valid label values,
// filters, ranking with deterministic ties, the cap.
func TestBuildSnapshot(t *testing.T) {
	row := func(path string, h, a, total int64) apiclient.PathVisitors {
		return apiclient.PathVisitors{Path: path, VisitorCounts: apiclient.VisitorCounts{Human: h, AI: a, Total: total}}
	}
	res := &apiclient.VisitorsReport{
		Totals: apiclient.VisitorCounts{Human: 10, AI: 5, Total: 12},
		Paths: []apiclient.PathVisitors{
			row("/a", 1, 1, 2), row("/a", 9, 9, 9), // duplicate: first wins
			row("/b\xff", 3, 0, 3), row("/b\uFFFD", 7, 7, 7), // the same label value once made valid UTF-8
			row("/y", 4, 1, 5), row("/x", 4, 1, 5), // tie on total: path order
			row("/private/1", 50, 50, 90),
			row("/z", 0, 1, 1),
		},
		Requests: 2,
	}
	at := time.Date(2026, 3, 10, 15, 0, 0, 0, time.UTC)
	policy := analytics.PathPolicy{MaxPaths: 3, Exclude: regexp.MustCompile(`^/private/`)}
	s := buildTraffic(policy, res, "2026-03-10", "2026-03-11", at)
	var got []string
	for _, p := range s.Paths {
		got = append(got, p.Path+"="+strconv.FormatFloat(p.Total, 'f', -1, 64))
	}
	if want := []string{"/x=5", "/y=5", "/b\uFFFD=3"}; !slices.Equal(got, want) {
		t.Errorf("paths %q, want %q", got, want)
	}
	// /private/1 by the filter; /a and /z by the cap.
	if s.Dropped != 3 {
		t.Errorf("dropped = %d, want 3", s.Dropped)
	}
	if s.Site != (analytics.Counts{Human: 10, AI: 5, Total: 12}) {
		t.Errorf("site = %+v", s.Site)
	}
	if s.DateFrom != "2026-03-10" || s.DateTo != "2026-03-11" || !s.At.Equal(at) || s.Requests != 2 {
		t.Errorf("snapshot %s..%s at %s, %d requests", s.DateFrom, s.DateTo, s.At, s.Requests)
	}
}

// buildTraffic reduces a whole API result to a snapshot: paths made bounded,
// valid label values (bounded.Label) and merged (first row wins, as in
// apiclient), filtered, ranked and capped. A walk hands its pages to a
// pathBuilder as they arrive instead, which gives the same snapshot without
// holding the site.
func buildTraffic(p analytics.PathPolicy, res *apiclient.VisitorsReport, from, to string, at time.Time) *analytics.Snapshot {
	b := newPathBuilder(p)
	b.Add(res.Paths)
	return b.Snapshot(res.Totals, res.Requests, from, to, at)
}
