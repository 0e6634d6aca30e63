package history

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// Blocks are made by Prometheus' own promtool from the OpenMetrics text
// (tsdb create-blocks-from openmetrics), not written here: writing them
// in-process needs github.com/prometheus/prometheus/tsdb, whose imports
// compile the SDKs of three clouds and Kubernetes' client into the
// exporter (772 packages, a 31 MB binary). promtool is the tool the
// Prometheus project ships for this, it matches the server's own block
// format, and the OpenMetrics route already ends with its command.

// DefaultPromtool is the promtool looked up on PATH unless
// --backfill.promtool names another.
const DefaultPromtool = "promtool"

// maxBlockDuration caps the time range of one block, as Prometheus caps
// its own compactions (31 days, or 10% of the retention).
const maxBlockDuration = 31 * 24 * time.Hour

// blockDuration is the largest of Prometheus' compaction ranges (2h times
// powers of 3, tsdb.ExponentialBlockRanges(2h, 10, 3)) not above
// maxBlockDuration: 486h, 20 days 6 hours. promtool makes blocks of it
// with --max-block-duration (its default makes one a day): a year is some
// 19 blocks rather than 365.
func blockDuration() time.Duration {
	d := 2 * time.Hour
	for range 9 {
		if d*3 > maxBlockDuration {
			break
		}
		d *= 3
	}
	return d
}

// promtoolArgs are promtool's arguments that turn the OpenMetrics file
// into blocks in dir, as the OpenMetrics route's last line prints them.
func promtoolArgs(file, dir string) []string {
	return []string{"tsdb", "create-blocks-from", "openmetrics", fmt.Sprintf("--max-block-duration=%dh", int(blockDuration().Hours())), file, dir}
}

// findPromtool resolves --backfill.promtool (a path, or a name looked up
// on PATH) before anything is fetched, so that a missing promtool costs
// no request of the budget.
func (c *Config) findPromtool() error {
	name := c.Promtool
	if name == "" {
		name = DefaultPromtool
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return fmt.Errorf("--backfill.promtool: %s not found (%v): --output.format=blocks has Prometheus' promtool make the blocks; install it (Debian: apt-get install prometheus) or give its path with --backfill.promtool=PATH", name, errors.Unwrap(err))
	}
	c.Promtool = path
	return nil
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

// writeBlocks writes the OpenMetrics text of jobs into a new directory
// next to cfg.Output, has promtool make blocks of it there, and renames
// the blocks to cfg.Output when all are made (so a failed run leaves no
// partial output). It says what it wrote.
func writeBlocks(ctx context.Context, cfg Config, jobs []job) (string, error) {
	out := filepath.Clean(cfg.Output)
	tmp, err := os.MkdirTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp-")
	if err != nil {
		return "", fmt.Errorf("--output: %w", err)
	}
	defer os.RemoveAll(tmp)
	text, blocks := filepath.Join(tmp, "history.om"), filepath.Join(tmp, "blocks")
	f, err := os.Create(text)
	if err != nil {
		return "", fmt.Errorf("--output: %w", err)
	}
	samples, err := encodeOpenMetrics(f, cfg, jobs)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("--output: %w", cerr)
	}
	if err != nil {
		return "", err
	}
	if err := os.Mkdir(blocks, 0o755); err != nil { // promtool makes none of no samples
		return "", fmt.Errorf("--output: %w", err)
	}
	cmd := exec.CommandContext(ctx, cfg.Promtool, promtoolArgs(text, blocks)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("--output: %s %s: %w: %s", cfg.Promtool, strings.Join(promtoolArgs("FILE", "DIR"), " "), err, lastLine(b))
	}
	entries, err := os.ReadDir(blocks)
	if err != nil {
		return "", fmt.Errorf("--output: %w", err)
	}
	if err := os.Remove(out); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("--output: %w", err) // not empty any more, or not a directory
	}
	if err := os.Rename(blocks, out); err != nil {
		return "", fmt.Errorf("--output: %w", err)
	}
	return fmt.Sprintf("%s samples in %d TSDB block(s) of up to %s in %s, made by %s", group(samples), len(entries), model.Duration(blockDuration()), out, filepath.Base(cfg.Promtool)), nil
}

// lastLine is the last non-empty line of a command's output, at most 300
// bytes: what promtool says went wrong, without the table it prints.
func lastLine(b []byte) string {
	var last string
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			last = l
		}
	}
	if len(last) > 300 {
		last = last[:300] + "…"
	}
	if last == "" {
		return "no output"
	}
	return last
}
