// Package testutil holds helpers shared by tests that run the built binary
// or external tools: building the exporter once, free loopback ports,
// waiting for a URL, and finding promtool.
package testutil

import (
	"context"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// FreeAddr returns a loopback address with a port that was free a moment ago,
// for a process the test starts to listen on. The port is picked at random
// below the kernel's ephemeral range when there is room: a port from ":0"
// is one the kernel hands out again to the next outgoing connection or ":0"
// listener of any process, and with many tests running at once the child
// found it taken by the time it bound ("address already in use"). Below
// the range only this function hands ports out, at random.
func FreeAddr(t testing.TB) string {
	t.Helper()
	if lo := ephemeralLow(); lo >= minPickedPort+1000 {
		for range 50 {
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(minPickedPort+rand.IntN(lo-minPickedPort))))
			if err == nil {
				addr := ln.Addr().String()
				ln.Close()
				return addr
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// minPickedPort is the lowest port FreeAddr picks: above the well-known
// and most registered services' ports.
const minPickedPort = 10000

// ephemeralLow is the first port of the kernel's ephemeral range (Linux),
// 0 when unknown.
func ephemeralLow() int {
	lo, _ := strconv.Atoi(procField("/proc/sys/net/ipv4/ip_local_port_range"))
	return lo
}

// procField is the first field of a file of /proc ("" when unknown).
func procField(path string) string {
	b, err := os.ReadFile(path)
	f := strings.Fields(string(b))
	if err != nil || len(f) == 0 {
		return ""
	}
	return f[0]
}

// WaitHTTP polls url until it answers 200 or Slack(timeout) passes, and
// returns the last body. The timeout is a hang guard: an exporter's start
// that takes 1 s on a quiet machine took over 15 s beside two busy
// processes per core.
func WaitHTTP(t testing.TB, url string, timeout time.Duration, ok func(body string) bool) string {
	t.Helper()
	timeout = Slack(timeout)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last string
	for {
		if body, status, err := Get(ctx, url); err == nil && status == http.StatusOK {
			last = body
			if ok == nil || ok(body) {
				return body
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s did not become ready within %s; last body:\n%.2000s", url, timeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Get fetches url and returns its body and status.
func Get(ctx context.Context, url string) (string, int, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return "", 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), resp.StatusCode, err
}

// StatusAs sends method to url with body (JSON when not nil) as user
// (basic auth; none when user is "") and returns the status, failing t
// when the request cannot be sent.
func StatusAs(t testing.TB, method, url, user, pass string, body io.Reader) int {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// tool returns the path of the first of names found, a command of Debian's
// package pkg. Outside CI a missing one skips the test with a message;
// under CI=true it fails, so CI cannot pass silently.
func tool(t testing.TB, pkg string, names ...string) string {
	t.Helper()
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s not found; CI must install Debian's %s package (.ci/run does)", names[0], pkg)
	}
	t.Skipf("%s not found: install Debian's %s package to run this test (apt-get install %s)", names[0], pkg, pkg)
	return ""
}

// Promtool returns promtool's path (tool: skipped outside CI when missing).
func Promtool(t testing.TB) string {
	t.Helper()
	return tool(t, "prometheus", "promtool")
}

// PromtoolStep returns the promtool command a backfill's progress prints
// on its last line (`...; next: promtool ... FILE ./blocks, copy ...`),
// failing t unless it converts file into ./blocks.
func PromtoolStep(t testing.TB, progress, file string) []string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(progress), "\n")
	_, step, _ := strings.Cut(lines[len(lines)-1], "; next: ")
	step, _, _ = strings.Cut(step, ", copy ")
	args := strings.Fields(step)
	if len(args) < 6 || args[0] != "promtool" || args[len(args)-2] != file || args[len(args)-1] != "./blocks" {
		t.Fatalf("the backfill's last line names no promtool command of %s into ./blocks: %q", file, lines[len(lines)-1])
	}
	return args
}

// CheckMetrics pipes an exposition into promtool check metrics.
func CheckMetrics(t testing.TB, exposition string) {
	t.Helper()
	cmd := exec.Command(Promtool(t), "check", "metrics")
	cmd.Stdin = strings.NewReader(exposition)
	if out, err := CombinedOutput(cmd); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}
