package testutil

import (
	"bytes"
	"errors"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// Start starts cmd so that it dies with the test process, also when that is
// killed (SIGKILL, go test's -timeout, Ctrl-C): every process a test starts
// (the exporter, redis-server, redis-sentinel, chromium, promtool,
// Prometheus, Alertmanager, the fake API) goes through it. cmd runs in a
// process group of its own (Setpgid: killing the group takes its helpers too,
// see KillGroup), and the kernel sends it SIGKILL when the thread that
// started it ends (Pdeathsig). That thread is the one of a goroutine that
// lives as long as the process and never lets go of it: started from a test's
// own goroutine, the child would be killed as soon as that goroutine's
// thread happened to exit, or outlive the test process if it never did.
// A context's cancel (exec.CommandContext) kills the whole group.
func Start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if cmd.Cancel != nil {
		cmd.Cancel = func() error { return KillGroup(cmd) }
	}
	done := make(chan error)
	starts() <- startRequest{cmd, done}
	return <-done
}

type startRequest struct {
	cmd  *exec.Cmd
	done chan<- error
}

// starts is the channel of the goroutine that starts every child from one
// locked OS thread, which lives as long as the test process.
var starts = sync.OnceValue(func() chan<- startRequest {
	ch := make(chan startRequest)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the process
		for r := range ch {
			r.done <- r.cmd.Start()
		}
	}()
	return ch
})

// KillGroup sends SIGKILL to the process group of cmd, started by Start:
// the process and whatever it started (a browser's helpers, a script's
// commands).
func KillGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return errors.New("not started")
	}
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}

// Run is cmd.Run through Start.
func Run(cmd *exec.Cmd) error {
	if err := Start(cmd); err != nil {
		return err
	}
	return cmd.Wait()
}

// Output is cmd.Output through Start: its standard output (and, as
// exec.Cmd.Output does, its standard error in an *exec.ExitError when it
// fails and cmd.Stderr is not set).
func Output(cmd *exec.Cmd) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	captured := cmd.Stderr == nil
	if captured {
		cmd.Stderr = &stderr
	}
	err := Run(cmd)
	var exit *exec.ExitError
	if captured && errors.As(err, &exit) {
		exit.Stderr = stderr.Bytes()
	}
	return stdout.Bytes(), err
}

// CombinedOutput is cmd.CombinedOutput through Start.
func CombinedOutput(cmd *exec.Cmd) ([]byte, error) {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := Run(cmd)
	return out.Bytes(), err
}
