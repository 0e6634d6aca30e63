package testutil

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RedisServer is a redis-server the test started on a loopback port, with
// nothing persisted. Stop and Start take it away and bring it back on the
// same port, empty (as a Redis without persistence restarts), for outage
// tests. It is killed, by its PID, when the test ends.
type RedisServer struct {
	// Addr is host:port.
	Addr string

	t    testing.TB
	bin  string
	dir  string
	args []string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
}

// StartRedis starts a redis-server for the test and returns its address.
func StartRedis(t testing.TB) string {
	t.Helper()
	return NewRedis(t).Addr
}

// NewRedis starts a redis-server for the test with extra arguments (such as
// "--requirepass", "secret"). Outside CI a missing redis-server skips the
// test (tool); under CI=true it fails.
func NewRedis(t testing.TB, args ...string) *RedisServer {
	t.Helper()
	r := &RedisServer{t: t, bin: tool(t, "redis-server", "redis-server"), dir: t.TempDir(), args: args}
	// A port free a moment ago may be taken by another test before
	// redis-server binds it: try a few.
	for try := 0; ; try++ {
		r.Addr = FreeAddr(t)
		err := r.start()
		if err == nil {
			break
		}
		if try == 4 {
			t.Fatalf("redis-server: %v", err)
		}
	}
	t.Cleanup(r.Stop)
	return r
}

// Start starts the server again on its port after Stop.
func (r *RedisServer) Start() {
	r.t.Helper()
	if err := r.start(); err != nil {
		r.t.Fatalf("redis-server restart on %s: %v", r.Addr, err)
	}
}

func (r *RedisServer) start() error {
	_, port, _ := net.SplitHostPort(r.Addr)
	args := append([]string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", r.dir, "--daemonize", "no", "--logfile", ""}, r.args...)
	cmd := exec.Command(r.bin, args...)
	out := &SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := Start(cmd); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	// The PID tells this server from another test's that got the same port
	// a moment earlier (this one then exits).
	limit := Slack(10 * time.Second)
	if !WaitUntil(limit, func() bool { return isChannelClosed(exited) || answersAs(r.Addr, cmd) }) || isChannelClosed(exited) {
		_ = KillGroup(cmd)
		<-exited
		return &redisExit{out: fmt.Sprintf("no answer within %s\n%s", limit, out.String())}
	}
	r.mu.Lock()
	r.cmd, r.exited = cmd, exited
	r.mu.Unlock()
	return nil
}

// answersAs reports whether the Redis at addr is cmd's process (or will not
// say: a password-protected one answers NOAUTH).
func answersAs(addr string, cmd *exec.Cmd) bool {
	pid, ok := redisPID(addr)
	return ok && (pid == cmd.Process.Pid || pid == 0)
}

// isChannelClosed reports whether c is closed.
func isChannelClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

type redisExit struct{ out string }

func (e *redisExit) Error() string {
	return "redis-server did not start: " + strings.TrimSpace(e.out)
}

// Stop kills the server (its process group) and waits until it has exited,
// its port closed.
func (r *RedisServer) Stop() {
	r.mu.Lock()
	cmd, exited := r.cmd, r.exited
	r.cmd = nil
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = KillGroup(cmd)
	<-exited
}

// redisPID asks the Redis at addr for its process id; 0 when it answers
// but will not say (a password-protected one answers NOAUTH).
func redisPID(addr string) (int, bool) {
	c, err := net.DialTimeout("tcp", addr, Slack(time.Second))
	if err != nil {
		return 0, false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(Slack(time.Second)))
	if _, err := c.Write([]byte("INFO server\r\n")); err != nil {
		return 0, false
	}
	rd := bufio.NewReader(c)
	line, err := rd.ReadString('\n')
	switch {
	case err != nil:
		return 0, false
	case strings.HasPrefix(line, "-NOAUTH"):
		return 0, true
	case !strings.HasPrefix(line, "$"):
		return 0, false
	}
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			return 0, false
		}
		if v, ok := strings.CutPrefix(line, "process_id:"); ok {
			pid, err := strconv.Atoi(strings.TrimSpace(v))
			return pid, err == nil
		}
	}
}

// RedisCLI runs redis-cli against the Redis at addr (a test's own, set up
// or inspected from outside the client under test) and returns its raw
// output, without the final newline. With stdin, its bytes are the last
// argument (redis-cli -x), for values too large for a command line. An
// error reply fails the test.
func RedisCLI(t testing.TB, addr string, stdin []byte, args ...string) string {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("redis-cli: address %q: %v", addr, err)
	}
	cli := append([]string{"-h", host, "-p", port}, args...)
	if stdin != nil {
		cli = append([]string{"-x"}, cli...)
	}
	cmd := exec.Command("redis-cli", cli...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := Output(cmd)
	s := strings.TrimSuffix(string(out), "\n")
	if err != nil || strings.HasPrefix(s, "ERR") || strings.HasPrefix(s, "WRONGTYPE") || strings.HasPrefix(s, "(error)") {
		t.Fatalf("redis-cli %s: %v: %.200s", args[0], err, s)
	}
	return s
}

// Pause stops the server with SIGSTOP (kill -STOP): it keeps its
// connections and its data but answers nothing until Resume, as a Redis
// stalled by its host (a frozen VM, a long fork, swapping) does.
func (r *RedisServer) Pause() { r.signal(syscall.SIGSTOP) }

// Resume continues a server paused by Pause (SIGCONT).
func (r *RedisServer) Resume() { r.signal(syscall.SIGCONT) }

func (r *RedisServer) signal(sig syscall.Signal) {
	r.t.Helper()
	r.mu.Lock()
	cmd := r.cmd
	r.mu.Unlock()
	if cmd == nil {
		r.t.Fatal("redis-server is not running")
	}
	if err := cmd.Process.Signal(sig); err != nil {
		r.t.Fatalf("redis-server: %v: %v", sig, err)
	}
}
