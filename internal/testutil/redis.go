package testutil

import (
	"bufio"
	"bytes"
	"net"
	"os"
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

	mu  sync.Mutex
	cmd *exec.Cmd
}

// StartRedis starts a redis-server for the test and returns its address.
func StartRedis(t testing.TB) string {
	t.Helper()
	return NewRedis(t).Addr
}

// NewRedis starts a redis-server for the test with extra arguments (such as
// "--requirepass", "secret"). Outside CI a missing redis-server skips the
// test; under CI=true it fails, so CI cannot pass silently.
func NewRedis(t testing.TB, args ...string) *RedisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server not found; CI must install Debian's redis-server package (.ci/run does)")
		}
		t.Skip("redis-server not found: install Debian's redis-server package to run this test (apt-get install redis-server)")
	}
	r := &RedisServer{t: t, bin: bin, dir: t.TempDir(), args: args}
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
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		// The PID tells this server from another test's that got the
		// same port a moment earlier (this one then exits).
		if pid, ok := redisPID(r.Addr); ok && (pid == cmd.Process.Pid || pid == 0) {
			r.mu.Lock()
			r.cmd = cmd
			r.mu.Unlock()
			go func() { <-exited }() // reaped by Wait above
			return nil
		}
		select {
		case err := <-exited:
			return &redisExit{err: err, out: out.String()}
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			<-exited
			return &redisExit{out: "no PONG within 10s\n" + out.String()}
		}
	}
}

type redisExit struct {
	err error
	out string
}

func (e *redisExit) Error() string {
	return "redis-server did not start: " + strings.TrimSpace(e.out)
}

// Stop kills the server (by its PID) and waits until its port is closed.
func (r *RedisServer) Stop() {
	r.mu.Lock()
	cmd := r.cmd
	r.cmd = nil
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	for i := 0; i < 500; i++ {
		c, err := net.DialTimeout("tcp", r.Addr, 100*time.Millisecond)
		if err != nil {
			return
		}
		_ = c.Close()
		time.Sleep(10 * time.Millisecond)
	}
}

// redisPID asks the Redis at addr for its process id; 0 when it answers
// but will not say (a password-protected one answers NOAUTH).
func redisPID(addr string) (int, bool) {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return 0, false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
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
	out, err := cmd.Output()
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
