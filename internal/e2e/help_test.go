package e2e

import (
	"net"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// TestTopLevelHelpIsShortAndShowsTheAddress: the top-level --help (158
// lines, without --web.listen-address) shows where the exporter listens,
// fits a screen or two, and says where every other flag is.
func TestTopLevelHelpIsShortAndShowsTheAddress(t *testing.T) {
	t.Parallel()
	out, err := testutil.CombinedOutput(exec.Command(exporterBin, "--help"))
	help := string(out)
	if err != nil {
		t.Fatalf("--help: %v\n%s", err, help)
	}
	for _, want := range []string{"--web.listen-address=:9871", "--config.file=", "--mintlify.project=", "mintlify.sandbox", "web.enable-agent-api", "web.enable-deployment-api", "serve --help", "\nCommands:\n"} {
		if !strings.Contains(help, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
	if n := strings.Count(help, "\n"); n > 90 { // 85 with the deployment routes
		t.Errorf("--help is %d lines, want at most 90:\n%s", n, help)
	}
}

// TestEveryFlagHasAShortPlaceholder: no flag of any command's --help
// shows kingpin's upper-cased name as its placeholder
// (--cluster.redis-username=CLUSTER.REDIS-USERNAME); the --visitors.*
// flags are left to their rename.
func TestEveryFlagHasAShortPlaceholder(t *testing.T) {
	t.Parallel()
	flag := regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z][a-z0-9.-]*)=([^\s]+)`)
	seen := 0
	for _, cmd := range [][]string{{"serve"}, {"backfill"}, {"config", "check"}} {
		out, err := testutil.CombinedOutput(exec.Command(exporterBin, append(cmd, "--help")...))
		if err != nil {
			t.Fatalf("%v --help: %v\n%s", cmd, err, out)
		}
		for _, m := range flag.FindAllStringSubmatch(string(out), -1) {
			name, ph := m[1], m[2]
			seen++
			if strings.HasPrefix(name, "visitors.") {
				continue
			}
			if ph == `""` || ph == strings.ToUpper(name) || strings.Contains(ph, ".") && ph == strings.ToUpper(ph) || len(ph) > 12 && ph == strings.ToUpper(ph) {
				t.Errorf("%v --help: --%s=%s: want a short placeholder (USER, FILE, DATE, ...)", cmd, name, ph)
			}
		}
	}
	if seen < 40 {
		t.Fatalf("read %d flags with a placeholder from --help; the pattern no longer matches", seen)
	}
}

// TestFlagAndStartErrorsHaveOneForm: a flag error and a start-up error
// (the port taken) are each one line of the same form, and a taken port
// logs no "serving metrics" URL before its bind error.
func TestFlagAndStartErrorsHaveOneForm(t *testing.T) {
	t.Parallel()
	form := regexp.MustCompile(`^mintlify_exporter: error: \S.*$`)
	out, err := testutil.CombinedOutput(exec.Command(exporterBin, "--mintlify.sandbox", "--log.level=loud"))
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err == nil || len(lines) != 1 || !form.MatchString(lines[0]) {
		t.Errorf("flag error: %v, want one line %s:\n%s", err, form, out)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cmd := exec.Command(exporterBin, "--mintlify.sandbox", "--web.listen-address="+l.Addr().String())
	cmd.Dir = t.TempDir()
	done := make(chan []byte, 1)
	go func() { out, _ := testutil.CombinedOutput(cmd); done <- out }()
	select {
	case out = <-done:
	case <-time.After(testutil.Slack(30 * time.Second)):
		_ = cmd.Process.Kill()
		t.Fatalf("the exporter did not exit within %s with its port taken:\n%s", testutil.Slack(30*time.Second), <-done)
	}
	if cmd.ProcessState.ExitCode() != 1 {
		t.Errorf("port taken: exit code %d, want 1", cmd.ProcessState.ExitCode())
	}
	lines = strings.Split(strings.TrimSpace(string(out)), "\n")
	last := lines[len(lines)-1]
	if !form.MatchString(last) || !strings.Contains(last, "address already in use") {
		t.Errorf("port taken: last line %q, want %s naming the bind error", last, form)
	}
	if strings.Contains(string(out), "serving metrics") {
		t.Errorf("port taken: a metrics URL was logged before the bind error:\n%s", out)
	}
}

// TestPortInUseNamesTheFlag: an address in use names --web.listen-address
// and make run's RUN_ADDR, not "address already in use" alone (issue 38,
// item 7).
func TestPortInUseNamesTheFlag(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	out, err := testutil.CombinedOutput(exec.Command(exporterBin, "--mintlify.sandbox", "--web.listen-address="+l.Addr().String()))
	if err == nil {
		t.Fatalf("started on an address in use:\n%s", out)
	}
	want := "error: --web.listen-address=" + l.Addr().String() + ": the address is in use by another process"
	if !strings.Contains(string(out), want) || !strings.Contains(string(out), "RUN_ADDR") {
		t.Errorf("output lacks %q and RUN_ADDR:\n%s", want, out)
	}
}
