package visitors

import (
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/redact"
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
	p := PathPolicy{Redact: redact.New(key).String}
	s := p.Build(res, "2026-03-10", "2026-03-11", time.Unix(0, 0))
	var got []string
	for _, pc := range s.Paths {
		got = append(got, pc.Path)
		if strings.Contains(pc.Path, key[5:13]) || strings.Contains(pc.Path, key[8:16]) {
			t.Errorf("label value %q carries the key", pc.Path)
		}
	}
	want := []string{"/docs/intro", "/login?token=" + redact.Mask, "/share/" + redact.Mask + "u"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("paths %q, want %q", got, want)
	}
}
