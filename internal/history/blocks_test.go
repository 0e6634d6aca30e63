package history

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/common/model"

	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// TestBackfillBlocks: --output.format=blocks has promtool make TSDB blocks
// that hold exactly the samples of the OpenMetrics output, in blocks of up
// to 20 days (not one a day), read back by promtool tsdb dump, and
// refuses a directory that is not empty.
func TestBackfillBlocks(t *testing.T) {
	t.Parallel()
	promtool := testutil.Promtool(t)
	w7, _ := analytics.ParseWindow("7d")
	job, _ := ParseLabel("job=mintlify")
	cfg := Config{Projects: visitorsOnly(nil, []analytics.Window{w7}, "docs", "api"), From: day("2026-01-01"), To: day("2026-03-01"), Labels: []Label{job}}
	text, _, err := newRig(t, fakeapi.Options{Paths: 20}, 10000, 0).run(t, context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, s := range parse(t, text) {
		want[fmt.Sprintf("%s{%s} %g @%d", s.name, s.labels, s.value, s.ts*1000)] = true
	}

	dir := filepath.Join(t.TempDir(), "blocks")
	cfg.Format, cfg.Output, cfg.Promtool = FormatBlocks, dir, promtool
	_, progress, err := newRig(t, fakeapi.Options{Paths: 20}, 10000, 0).run(t, context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(progress, "TSDB block(s) of up to 20d6h in "+dir+", made by promtool; next: copy them into Prometheus' data directory (cp -r "+dir+"/* ") {
		t.Errorf("last line:\n%s", progress)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) < 3 || len(entries) > 5 {
		t.Errorf("%d blocks for 60 days, want 3 to 5 of 20 days", len(entries))
	}
	got := readBlocks(t, promtool, dir)
	if len(got) != len(want) {
		t.Errorf("%d samples in the blocks, %d in the OpenMetrics text", len(got), len(want))
	}
	for s := range got {
		if !want[s] {
			t.Fatalf("sample %s in the blocks only", s)
		}
	}

	if _, _, err := newRig(t, fakeapi.Options{Paths: 20}, 10000, 0).run(t, context.Background(), cfg); err == nil || !strings.HasPrefix(err.Error(), "--output:") || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("blocks into a full directory: %v", err)
	}
}

// TestBackfillBlocksWithoutPromtool: without promtool, blocks are refused
// before anything is fetched, in one line naming --backfill.promtool; a
// promtool that fails leaves no output directory and says why.
func TestBackfillBlocksWithoutPromtool(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "blocks")
	cfg := Config{Projects: visitorsOnly(nil, nil, "docs"), From: day("2026-01-01"), To: day("2026-01-03"),
		Format: FormatBlocks, Output: dir, Promtool: filepath.Join(t.TempDir(), "promtool")}
	r := newRig(t, fakeapi.Options{Paths: 20}, 10000, 0)
	_, _, err := r.run(t, context.Background(), cfg)
	if err == nil || !strings.HasPrefix(err.Error(), "--backfill.promtool: ") || !strings.Contains(err.Error(), "give its path with --backfill.promtool=PATH") || strings.Contains(err.Error(), "\n") {
		t.Errorf("blocks without promtool: %v", err)
	}
	if sent := r.sent(); len(sent) > 0 {
		t.Errorf("%d requests sent before promtool was found missing", len(sent))
	}

	// A promtool that fails (false exits 1 and says nothing).
	failing, err := exec.LookPath("false")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Promtool = failing
	if _, _, err := r.run(t, context.Background(), cfg); err == nil || !strings.HasPrefix(err.Error(), "--output: "+failing+" tsdb create-blocks-from openmetrics --max-block-duration=486h FILE DIR: exit status 1") {
		t.Errorf("blocks by a failing promtool: %v", err)
	}
	if entries, err := os.ReadDir(filepath.Dir(dir)); err != nil || len(entries) != 0 {
		t.Errorf("a failed promtool left %v behind (%v)", entries, err)
	}
}

// readBlocks returns every sample of the blocks in dir as
// `name{labels} value @ms`, labels in the OpenMetrics output's order, as
// promtool tsdb dump reads them (Prometheus' own reader of blocks: the tsdb
// package would pull Prometheus' module graph, cloud SDKs included, into
// the first `make test` of a fresh clone).
func readBlocks(t *testing.T, promtool, dir string) map[string]bool {
	t.Helper()
	// The dump opens the directory as a data directory, which has a WAL.
	if err := os.MkdirAll(filepath.Join(dir, "wal"), 0o755); err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(filepath.Join(dir, "wal"))
	cmd := exec.Command(promtool, "tsdb", "dump", dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	dump, err := testutil.Output(cmd)
	if err != nil {
		t.Fatalf("promtool tsdb dump: %v\n%s", err, stderr.String())
	}
	out := map[string]bool{}
	order := []string{"job", "project", "window", "path", "traffic"}
	for _, line := range strings.Split(strings.TrimSpace(string(dump)), "\n") {
		set, sample, ok := strings.Cut(strings.TrimPrefix(line, "{"), "} ")
		value, ts, ok2 := strings.Cut(sample, " ")
		if !ok || !ok2 {
			t.Fatalf("promtool tsdb dump: unexpected line %q", line)
		}
		var name string
		var parts []string
		for _, m := range dumpLabel.FindAllStringSubmatch(set, -1) {
			if m[1] == model.MetricNameLabel {
				name, _ = strconv.Unquote(m[2])
				continue
			}
			parts = append(parts, m[1]+"="+m[2])
		}
		slices.SortFunc(parts, func(a, b string) int {
			return slices.Index(order, a[:strings.Index(a, "=")]) - slices.Index(order, b[:strings.Index(b, "=")])
		})
		out[fmt.Sprintf("%s{%s} %s @%s", name, strings.Join(parts, ","), value, ts)] = true
	}
	return out
}

// dumpLabel is one name="value" of promtool tsdb dump's label sets.
var dumpLabel = regexp.MustCompile(`(\w+)=("(?:[^"\\]|\\.)*")`)

// TestPromtoolNextStep runs the promtool command the OpenMetrics route's
// last line prints, as printed: it makes blocks of up to 20 days, as
// --output.format=blocks does (promtool's default makes one a day), that
// hold every sample of the file.
func TestPromtoolNextStep(t *testing.T) {
	t.Parallel()
	promtool := testutil.Promtool(t)
	file := filepath.Join(t.TempDir(), "history.om")
	cfg := Config{Projects: visitorsOnly(nil, nil, "docs"), TotalsOnly: true, From: day("2026-01-01"), To: day("2026-03-01"), Output: file}
	_, progress, err := newRig(t, fakeapi.Options{Paths: 3}, 10000, 0).run(t, context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	args := testutil.PromtoolStep(t, progress, file)
	step := strings.Join(args, " ")
	dir := filepath.Join(t.TempDir(), "blocks")
	args[0], args[len(args)-1] = promtool, dir
	if out, err := testutil.CombinedOutput(exec.Command(args[0], args[1:]...)); err != nil {
		t.Fatalf("%s: %v\n%s", step, err, out)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) < 3 || len(entries) > 5 {
		t.Errorf("%s: %d blocks for 60 days, want 3 to 5 of 20 days", step, len(entries))
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, s := range parse(t, string(data)) {
		want[fmt.Sprintf("%s{%s} %g @%d", s.name, s.labels, s.value, s.ts*1000)] = true
	}
	if got := readBlocks(t, promtool, dir); !maps.Equal(got, want) {
		t.Errorf("%s: %d samples in the blocks, %d in the file", step, len(got), len(want))
	}
}
