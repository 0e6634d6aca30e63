package testutil

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// Chromium finds Debian's chromium (tool: skipped outside CI when missing).
func Chromium(t testing.TB) string {
	t.Helper()
	return tool(t, "chromium", "chromium", "chromium-browser")
}

// RunChromium runs headless chromium bin with args and returns its stdout.
// The browser and its helpers are one process group, killed if it hangs
// for Slack(30 s): a browser's start takes 3-4 s of two busy cores' time,
// and several of them start at once in make test.
func RunChromium(t testing.TB, bin string, args ...string) string {
	t.Helper()
	limit := Slack(30 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	// Without the background-networking flags chromium tries Google's hosts
	// at every start, which a machine without a network refuses.
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--no-default-browser-check", "--hide-scrollbars", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := Run(cmd); err != nil {
		t.Fatalf("chromium %v: %v (hang guard %s)\n%s", args, err, limit, stderr.String())
	}
	return stdout.String()
}

// Screenshot runs scripts/status-screenshot.sh (script: its path from the
// test's directory) with chromium bin, and returns the picture it wrote to
// out, which must be a PNG of width × height.
func Screenshot(t testing.TB, script, bin, url, out string, width, height int) image.Image {
	t.Helper()
	cmd := exec.Command(script, url, out, strconv.Itoa(width)+"x"+strconv.Itoa(height))
	cmd.Env = append(os.Environ(), "CHROMIUM="+bin, "CHROMIUM_TIMEOUT="+strconv.Itoa(int(Slack(60*time.Second).Seconds())))
	if msg, err := CombinedOutput(cmd); err != nil {
		t.Fatalf("status-screenshot.sh: %v\n%s", err, msg)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	if b := img.Bounds(); b.Dx() != width || b.Dy() != height {
		t.Errorf("%s is %dx%d, want %dx%d", out, b.Dx(), b.Dy(), width, height)
	}
	return img
}
