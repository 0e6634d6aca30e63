package testutil

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Chromium finds Debian's chromium. Outside CI a missing browser skips the
// test; under CI=true it fails, so CI cannot pass without the test.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not found; CI must install Debian's chromium package (.ci/run does)")
	}
	t.Skip("chromium not found: install Debian's chromium package to run this test (apt-get install chromium)")
	return ""
}

// RunChromium runs headless chromium bin with args and returns its stdout.
// The browser and its helpers are one process group, killed if it hangs.
func RunChromium(t testing.TB, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--no-default-browser-check", "--hide-scrollbars", "--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.String()
}

// Screenshot runs scripts/status-screenshot.sh (script: its path from the
// test's directory) with chromium bin, and returns the picture it wrote to
// out, which must be a PNG of width × height.
func Screenshot(t testing.TB, script, bin, url, out string, width, height int) image.Image {
	t.Helper()
	cmd := exec.Command(script, url, out, strconv.Itoa(width)+"x"+strconv.Itoa(height))
	cmd.Env = append(os.Environ(), "CHROMIUM="+bin)
	if msg, err := cmd.CombinedOutput(); err != nil {
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
