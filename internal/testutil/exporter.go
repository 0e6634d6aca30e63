package testutil

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// Exporter is a running built exporter binary, killed by the test's cleanup
// if the test did not stop it.
type Exporter struct {
	Cmd *exec.Cmd
	// Base is its root URL, e.g. http://127.0.0.1:34567.
	Base   string
	Stderr *SyncBuffer
	done   chan struct{}
}

// StartExporter runs bin on a free loopback port with args, in an empty
// working directory, with only PATH, HOME and env in its environment.
func StartExporter(t *testing.T, bin string, env []string, args ...string) *Exporter {
	t.Helper()
	return StartExporterAt(t, bin, FreeAddr(t), env, args...)
}

// StartExporterAt is StartExporter on the loopback address addr, for a
// configuration that names it (a replica's cluster.advertise_url).
func StartExporterAt(t *testing.T, bin, addr string, env []string, args ...string) *Exporter {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--web.listen-address=" + addr}, args...)...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	cmd.Dir = t.TempDir()
	e := &Exporter{Cmd: cmd, Base: "http://" + addr, Stderr: &SyncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = e.Stderr
	if err := Start(cmd); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(e.done) }()
	t.Cleanup(func() {
		_ = KillGroup(cmd)
		<-e.done
		if t.Failed() {
			t.Logf("exporter %s stderr:\n%s", addr, e.Stderr.String())
		}
	})
	return e
}

// Kill sends SIGKILL and waits for the process to end.
func (e *Exporter) Kill(t *testing.T) {
	t.Helper()
	if err := e.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-e.done
}

// Stop sends SIGTERM and fails the test unless the exporter exits 0 within
// Slack(15 seconds).
func (e *Exporter) Stop(t *testing.T) {
	t.Helper()
	if err := e.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	e.WaitExit(t)
}

// WaitExit fails the test unless the exporter, already told to stop,
// exits 0 within Slack(15 seconds).
func (e *Exporter) WaitExit(t *testing.T) {
	t.Helper()
	limit := Slack(15 * time.Second)
	select {
	case <-e.done:
	case <-time.After(limit):
		t.Fatalf("exporter did not exit within %s of SIGTERM", limit)
	}
	if code := e.Cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d, want 0", code)
	}
}
