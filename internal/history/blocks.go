package history

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"
)

// maxBlockDuration caps the time range of one written block, as
// Prometheus caps its own compactions (31 days, or 10% of the retention).
// Blocks are aligned and sized as promtool sizes them for its
// --max-block-duration: the largest of Prometheus' compaction ranges (2h
// times powers of 3) not above the cap, 20 days 6 hours; a year is some
// 19 blocks rather than one a day.
const maxBlockDuration = 31 * 24 * time.Hour

func blockDuration() int64 {
	ranges := tsdb.ExponentialBlockRanges(tsdb.DefaultBlockDuration, 10, 3)
	d := ranges[0]
	for _, r := range ranges {
		if r <= maxBlockDuration.Milliseconds() {
			d = r
		}
	}
	return d
}

// checkBlocksDir refuses an output directory holding anything: blocks
// written next to earlier ones would overlap them, and Prometheus would
// count each sample twice until it merged them.
func checkBlocksDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("--output: %w", err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("--output: %s is not empty; blocks go into a new or empty directory", dir)
	}
	return nil
}

// writeBlocks writes the samples of jobs as TSDB blocks into a new
// directory next to cfg.Output, renamed to it when all are written (so a
// failed run leaves no partial output). It says what it wrote.
func writeBlocks(ctx context.Context, cfg Config, jobs []job) (string, error) {
	out := filepath.Clean(cfg.Output)
	tmp, err := os.MkdirTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp-")
	if err != nil {
		return "", fmt.Errorf("--output: %w", err)
	}
	defer os.RemoveAll(tmp)
	size := blockDuration()
	// Jobs by the block their samples fall in, in job order.
	byBlock := map[int64][]job{}
	var starts []int64
	for _, j := range jobs {
		ms := j.sampleTime().UnixMilli()
		start := ms - ms%size
		if _, ok := byBlock[start]; !ok {
			starts = append(starts, start)
		}
		byBlock[start] = append(byBlock[start], j)
	}
	samples := 0
	for _, start := range starts {
		n, err := writeBlock(ctx, cfg, tmp, size, byBlock[start])
		if err != nil {
			return "", fmt.Errorf("--output: block from %s: %w", time.UnixMilli(start).UTC().Format(time.DateOnly), err)
		}
		samples += n
	}
	if err := os.Remove(out); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("--output: %w", err) // not empty any more, or not a directory
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", fmt.Errorf("--output: %w", err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return "", fmt.Errorf("--output: %w", err)
	}
	return fmt.Sprintf("%s samples in %d TSDB block(s) of up to %s in %s", group(samples), len(starts), model.Duration(time.Duration(size)*time.Millisecond), out), nil
}

// writeBlock writes one block of jobs' samples into dir.
func writeBlock(ctx context.Context, cfg Config, dir string, size int64, jobs []job) (samples int, err error) {
	// The writer only takes samples within half its size of the newest
	// one; twice the block's size lets all of it in (promtool does the same).
	w, err := tsdb.NewBlockWriter(slog.New(slog.DiscardHandler), dir, 2*size)
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, w.Close()) }()
	app := w.Appender(ctx)
	var b labels.ScratchBuilder
	for _, f := range families(jobs) {
		names := cfg.labelNames(f)
		var appendErr error
		err := cfg.eachSample(f, jobs, func(ms int64, v float64, lv []string) {
			if appendErr != nil {
				return
			}
			b.Reset()
			b.Add(model.MetricNameLabel, f.Name)
			for i, name := range names {
				b.Add(name, lv[i])
			}
			b.Sort()
			if _, err := app.Append(0, b.Labels(), ms, v); err != nil {
				appendErr = err
				return
			}
			samples++
		})
		if err = errors.Join(err, appendErr); err != nil {
			_ = app.Rollback()
			return 0, err
		}
	}
	if err := app.Commit(); err != nil {
		return 0, err
	}
	if _, err := w.Flush(ctx); err != nil {
		return 0, err
	}
	return samples, nil
}
