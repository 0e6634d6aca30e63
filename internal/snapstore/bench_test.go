package snapstore_test

import (
	"context"
	"fmt"
	"io/fs"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/refresh"
	"github.com/mintlify-exporter/mintlify_exporter/internal/snapstore"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// BenchmarkRestore is one organization of the scale benchmark (make
// scale-bench: 10 organizations of this): 10 projects, every source,
// windows 1d/7d/30d, 1,000 paths a project, about 192,000 series, walked
// once into a state directory; each op opens the directory and restores
// every snapshot into a new plan, as a restarted exporter does before it
// reports ready. It reports the series restored and the bytes kept.
//
//	go test -run '^$' -bench Restore -benchtime 5x ./internal/snapstore/
func BenchmarkRestore(b *testing.B) {
	const projects, paths = 10, 1000
	fake := fakeapi.New(fakeapi.Options{APIKey: key, Paths: paths})
	srv := httptest.NewServer(fake)
	b.Cleanup(srv.Close)
	var yml strings.Builder
	yml.WriteString("organizations:\n  - name: acme\n    api_key_env: KEY\n    analytics_budget: 100000\nprojects:\n")
	for p := range projects {
		fmt.Fprintf(&yml, "  - id: p%d\n    windows: [1d, 7d, 30d]\n    paths: {max: %d}\n", p, paths)
		yml.WriteString("    sources: {visitors: {}, views: {}, feedback: {}, feedback_items: {}, searches: {}, assistant: {}}\n")
	}
	cfg, err := config.Parse("bench.yml", []byte(yml.String()), time.Minute)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	plan := func() *refresh.Scheduler {
		d, err := snapstore.Open(dir, nil)
		if err != nil {
			b.Fatal(err)
		}
		bud, err := budget.New(budget.Config{Limit: 100000})
		if err != nil {
			b.Fatal(err)
		}
		client, err := apiclient.New(apiclient.Config{BaseURL: srv.URL, APIKey: key, AnalyticsBudget: bud, MaxRetries: 0})
		if err != nil {
			b.Fatal(err)
		}
		s, err := refresh.New(client, bud, refresh.Config{Projects: cfg.ProjectsOf("acme"), PageSize: apiclient.MaxPageSize,
			MinInterval: time.Hour, FinalDayDelay: -1, SiteInterval: -1, Concurrency: 8, Shared: d}, nil)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	first := plan()
	ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
	first.RefreshDue(ctx)
	cancel()
	want := series(first)
	first.Close()
	var size int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			info, _ := d.Info()
			size += info.Size()
		}
		return err
	})

	b.ResetTimer()
	for b.Loop() {
		s := plan()
		s.Restore(b.Context())
		if got := series(s); got != want {
			b.Fatalf("restored %d series, want %d", got, want)
		}
		s.Close()
	}
	b.ReportMetric(float64(want), "series")
	b.ReportMetric(float64(size), "state-bytes")
	b.ReportMetric(float64(size)/float64(want), "state-bytes/series")
}

// series counts the series of every served snapshot.
func series(s *refresh.Scheduler) int {
	n := 0
	for _, v := range s.Views() {
		if v.Data == nil {
			continue
		}
		def, _ := sources.ByName(v.Source)
		for _, f := range def.Families {
			f.Emit(v.Data, v.Project, v.Window, func(float64, ...string) { n++ })
		}
	}
	return n
}
