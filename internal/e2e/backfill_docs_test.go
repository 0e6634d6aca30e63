package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// TestFirstBackfillExampleOnSandbox runs the first example of
// docs/history.md as a reader would: its shell block, verbatim, in bash,
// with the built binary as ./mintlify_exporter and promtool on PATH. It
// must finish (the deadline is generous, not a measure: on the sandbox it
// takes seconds), within the backfill's budget without ever waiting for
// it, and leave eight of the project's days as OpenMetrics and as the
// blocks promtool made of them.
func TestFirstBackfillExampleOnSandbox(t *testing.T) {
	t.Parallel()
	promtool := testutil.Promtool(t)
	example := firstShellBlock(t, readDoc(t, "docs/history.md"))
	if !strings.Contains(example, "--mintlify.sandbox") || !strings.Contains(example, "backfill") {
		t.Fatalf("the first example of docs/history.md is not a backfill of the sandbox:\n%s", example)
	}
	dir := t.TempDir()
	if err := os.Symlink(exporterBin, filepath.Join(dir, "mintlify_exporter")); err != nil {
		t.Fatal(err)
	}
	today := time.Now().UTC().Truncate(24 * time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), testutil.Slack(3*time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", example)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + filepath.Dir(promtool) + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + dir}
	out, err := testutil.CombinedOutput(cmd)
	if err != nil {
		t.Fatalf("the first example of docs/history.md: %v (deadline: %v)\n%s\n%s", err, ctx.Err(), example, out)
	}
	progress := string(out)
	if !strings.Contains(progress, "backfill: done: ") {
		t.Errorf("the example's backfill did not say it was done:\n%s", progress)
	}
	if strings.Contains(progress, "waiting for the analytics budget") || strings.Contains(progress, "next request") {
		t.Errorf("the first example waits for the budget:\n%s", progress)
	}

	data, err := os.ReadFile(filepath.Join(dir, "history.om"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if !strings.HasSuffix(text, "# EOF\n") {
		t.Fatalf("history.om does not end with # EOF")
	}
	// One human visitors sample per day, stamped at the (UTC) midnight
	// that ends it: the eight days before today, what the week-over-week
	// panel needs.
	human := regexp.MustCompile(`(?m)^mintlify_site_unique_visitors\{project="acme-docs",window="yesterday",traffic="human"\} \S+ (\d+)$`)
	var got, want []int64
	for _, m := range human.FindAllStringSubmatch(text, -1) {
		ts, _ := strconv.ParseInt(m[1], 10, 64)
		got = append(got, ts)
	}
	for d := 7; d >= 0; d-- {
		want = append(want, today.AddDate(0, 0, -d).Unix())
	}
	if !slices.Equal(got, want) {
		t.Errorf("days of human visitors in history.om: %v, want the midnights ending the last 8 days %v", got, want)
	}
	for _, family := range []string{"mintlify_site_page_views_combined", "mintlify_searches"} {
		if !strings.Contains(text, "\n# TYPE "+family+" gauge\n") {
			t.Errorf("history.om has no %s", family)
		}
	}

	blocks, err := os.ReadDir(filepath.Join(dir, "blocks"))
	if err != nil || len(blocks) == 0 {
		t.Fatalf("promtool made no blocks: %v", err)
	}
	for _, b := range blocks {
		if _, err := os.Stat(filepath.Join(dir, "blocks", b.Name(), "meta.json")); err != nil {
			t.Errorf("block %s: %v", b.Name(), err)
		}
	}
}

// firstShellBlock returns the first ```sh block of a Markdown page.
func firstShellBlock(t *testing.T, md string) string {
	t.Helper()
	_, rest, ok := strings.Cut(md, "\n```sh\n")
	if !ok {
		t.Fatal("no ```sh block")
	}
	block, _, ok := strings.Cut(rest, "\n```\n")
	if !ok {
		t.Fatal("unclosed ```sh block")
	}
	return block
}
