package testutil

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// childrenEnv makes TestChildrenDieWithTheTestProcess's own binary, run
// again, the test process that is killed.
const childrenEnv = "TESTUTIL_CHILDREN_OF_A_KILLED_TEST"

// TestChildrenDieWithTheTestProcess runs this test binary again as a test
// that starts an exporter (StartExporter), a redis-server (NewRedis) and a
// sleep (Start, from a goroutine whose OS thread then exits), then kills
// it with SIGKILL, as go test's -timeout or an impatient Ctrl-C does: every
// one of them must end with it. A sleep started with plain exec.Cmd.Start
// beside them is the control: it outlives the killed process (this test
// kills it), so the test would fail on processes started as they were.
func TestChildrenDieWithTheTestProcess(t *testing.T) {
	if os.Getenv(childrenEnv) != "" {
		startChildrenAndWait(t)
		return
	}
	if _, err := exec.LookPath("redis-server"); err != nil && os.Getenv("CI") != "true" {
		t.Skip("redis-server not found: install Debian's redis-server package to run this test")
	}
	bin, err := ExporterBinary() // built here: the killed process must not spend its life building
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildrenDieWithTheTestProcess$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), childrenEnv+"=1", BinEnv+"="+bin)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr SyncBuffer
	cmd.Stderr = &stderr
	if err := Start(cmd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pids := map[string]int{}
	lines := bufio.NewScanner(stdout)
	for len(pids) < 4 && lines.Scan() {
		var name string
		var pid int
		if n, _ := fmt.Sscanf(lines.Text(), "child %s %d", &name, &pid); n == 2 {
			pids[name] = pid
		}
	}
	if len(pids) < 4 {
		t.Fatalf("the test to kill started %v; its stderr:\n%s", pids, stderr.String())
	}
	t.Cleanup(func() { _ = syscall.Kill(pids["control"], syscall.SIGKILL) })
	for name, pid := range pids {
		if !alive(pid) {
			t.Fatalf("%s (pid %d) ended before the test process was killed", name, pid)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	for name, pid := range pids {
		if name == "control" {
			continue
		}
		Eventually(t, 0, fmt.Sprintf("the %s (pid %d) to end with the killed test process", name, pid), func() bool { return !alive(pid) })
	}
	if !alive(pids["control"]) {
		t.Errorf("the control, started with exec.Cmd.Start, ended with the killed test process: the test shows nothing")
	}
}

// startChildrenAndWait is the test process that is killed: it prints the
// pid of each process it starts and waits.
func startChildrenAndWait(t *testing.T) {
	bin, err := ExporterBinary()
	if err != nil {
		t.Fatal(err)
	}
	x := StartExporter(t, bin, nil, "--mintlify.sandbox")
	fmt.Printf("child exporter %d\n", x.Cmd.Process.Pid)
	r := NewRedis(t)
	r.mu.Lock()
	fmt.Printf("child redis-server %d\n", r.cmd.Process.Pid)
	r.mu.Unlock()
	// From a goroutine whose thread ends with it: the sleep must not die
	// then (Pdeathsig is bound to the thread that started the process).
	started := make(chan *exec.Cmd)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with the goroutine
		sleep := exec.Command("sleep", "600")
		if err := Start(sleep); err != nil {
			t.Error(err)
		}
		started <- sleep
	}()
	sleep := <-started
	time.Sleep(100 * time.Millisecond) // real time: for the goroutine's thread to have exited
	fmt.Printf("child sleep %d\n", sleep.Process.Pid)
	control := exec.Command("sleep", "600")
	if err := control.Start(); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("child control %d\n", control.Process.Pid)
	time.Sleep(time.Hour) // real time: killed long before
}

// alive reports whether process pid runs (a zombie, killed and not yet
// reaped by whoever inherited it, does not).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) STATE ...: comm may hold spaces and parentheses.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && fields[0] != "Z" && fields[0] != "X"
}
