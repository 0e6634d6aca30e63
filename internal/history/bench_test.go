package history

import (
	"context"
	"io"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// countingWriter counts the bytes of the OpenMetrics output.
type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// BenchmarkBackfillYear backfills 365 days of a 2,500-path project with the
// default sources (visitors, views and searches backfill; feedback does
// not) from the fake API over loopback HTTP, with a budget that never waits
// (the wall time is the exporter's and the fake's, not the quota's), as
// OpenMetrics and as TSDB blocks (made by promtool), and reports the requests and the output
// size. Visitors alone and the assistant (off
// by default) are measured apart.
//
//	go test -run '^$' -bench BackfillYear -benchtime 1x ./internal/history/
func BenchmarkBackfillYear(b *testing.B) {
	for _, bc := range []struct {
		name, format string
		sources      []string
	}{
		{FormatOpenMetrics, FormatOpenMetrics, nil},
		{FormatBlocks, FormatBlocks, nil},
		{"visitors", FormatOpenMetrics, []string{sources.NameVisitors}},
		{"assistant", FormatOpenMetrics, []string{sources.NameAssistant}},
	} {
		format := bc.format
		b.Run(bc.name, func(b *testing.B) {
			for range b.N {
				r := newRig(b, fakeapi.Options{Paths: 2500}, 1_000_000, 0)
				out := &countingWriter{}
				names := bc.sources
				if names == nil {
					names = analytics.SourceNames(true)
				}
				projects := withSources(nil, nil, names, "docs")
				cfg := Config{Projects: projects, From: day("2025-03-20"), To: day("2026-03-19"), Format: format,
					StateDir: filepath.Join(b.TempDir(), "days"), Stdout: out}
				if format == FormatBlocks {
					cfg.Output, cfg.Promtool = filepath.Join(b.TempDir(), "blocks"), testutil.Promtool(b)
				}
				start := time.Now()
				if err := Backfill(context.Background(), r.client, r.budget, cfg, io.Discard); err != nil {
					b.Fatal(err)
				}
				size := out.n
				if format == FormatBlocks {
					size = dirSize(b, cfg.Output)
				}
				b.ReportMetric(float64(len(r.sent())), "requests")
				b.ReportMetric(float64(size)/(1<<20), "MiB-output")
				b.ReportMetric(time.Since(start).Seconds(), "s-wall")
			}
		})
	}
}

func dirSize(b *testing.B, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		n += info.Size()
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}
