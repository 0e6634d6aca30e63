package exporter

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

type staticViews []sources.View

func (s staticViews) Views() []sources.View { return s }

// TestScrapeReadsTheRoleOnce: the role changes at every read (as if the
// primary lease moved between any two reads), and every scrape, in every
// format, still shows one view of it: the role gauge at 1 with the status,
// data and budget series, or at 0 without any of them.
func TestScrapeReadsTheRoleOnce(t *testing.T) {
	at := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	snap := &analytics.Snapshot{At: at, DateFrom: "2026-03-10", DateTo: "2026-03-10", Site: analytics.Counts{Human: 3, AI: 1, Total: 4},
		Paths: []analytics.PathCounts{{Path: "/a", Counts: analytics.Counts{Human: 2, AI: 1, Total: 3}}}}
	views := staticViews{{Project: "docs", Source: sources.NameVisitors, Scope: sources.ScopePages, Window: "1d",
		Attempted: true, OK: true, Interval: time.Minute, LastSuccess: at, Data: &sources.TrafficSnapshot{Snapshot: snap}}}
	b, err := budget.New(budget.Config{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var reads atomic.Int64
	flip := func() bool { return reads.Add(1)%2 == 0 }

	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	h := metricsHandler(ctx, &wg, prometheus.NewRegistry(), metricsOptions{Views: views, Budgets: func() []*budget.Budget { return []*budget.Budget{b} }, Primary: flip})
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); cancel(); wg.Wait() })

	// What each kind of series is recognised by.
	kinds := map[string]string{
		"status": "mintlify_analytics_refresh_success",
		"data":   sources.All()[0].Families[0].Name, // visitors
		"budget": "mintlify_api_budget_spent_requests",
	}
	accepts := map[string]string{
		"text":             "text/plain;version=0.0.4",
		"openmetrics+gzip": "application/openmetrics-text;version=1.0.0",
		"protobuf":         "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited",
	}
	seen := map[bool]int{}
	for i := range 12 {
		for name, accept := range accepts {
			req, _ := http.NewRequestWithContext(t.Context(), "GET", srv.URL, nil)
			req.Header.Set("Accept", accept)
			req.Header.Set("Accept-Encoding", "identity")
			if strings.HasSuffix(name, "gzip") {
				req.Header.Set("Accept-Encoding", "gzip")
			}
			// The transport would ask for gzip and decompress by itself
			// when no Accept-Encoding is set; here it is always set.
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			names, primary := scrapedFamilies(t, resp)
			seen[primary]++
			for kind, fam := range kinds {
				if names[fam] != primary {
					t.Errorf("scrape %d (%s): mintlify_exporter_cluster_primary %v, %s series (%s) present: %v", i, name, primary, kind, fam, names[fam])
				}
			}
		}
	}
	if seen[true] == 0 || seen[false] == 0 {
		t.Errorf("scrapes as primary and not: %v; want both", seen)
	}
}

// scrapedFamilies reads a /metrics answer: the names of its families and
// the value of mintlify_exporter_cluster_primary (which must be there).
func scrapedFamilies(t *testing.T, resp *http.Response) (map[string]bool, bool) {
	t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTP %d", resp.StatusCode)
	}
	var body io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	primary, found := false, false
	format := expfmt.ResponseFormat(resp.Header)
	if format.FormatType() == expfmt.TypeProtoDelim {
		dec := expfmt.NewDecoder(bytes.NewReader(raw), format)
		for {
			mf := &dto.MetricFamily{}
			if err := dec.Decode(mf); err != nil {
				if err == io.EOF {
					break
				}
				t.Fatal(err)
			}
			names[mf.GetName()] = true
			if mf.GetName() == "mintlify_exporter_cluster_primary" {
				found, primary = true, mf.GetMetric()[0].GetGauge().GetValue() == 1
			}
		}
	} else {
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "#") || line == "" {
				continue
			}
			name, rest, _ := strings.Cut(line, " ")
			name, _, _ = strings.Cut(name, "{")
			names[name] = true
			if name == "mintlify_exporter_cluster_primary" {
				found, primary = true, strings.HasPrefix(rest, "1")
			}
		}
	}
	if !found {
		t.Fatalf("no mintlify_exporter_cluster_primary in the scrape:\n%.2000s", raw)
	}
	return names, primary
}
