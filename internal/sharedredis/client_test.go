package sharedredis_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sharedredis"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// The behaviours our own RESP client was fixed for, kept through go-redis:
// LOADING waited out, connections Redis killed replaced, every call
// bounded by its deadline, scripts sent again to a Redis that forgot
// them, AUTH as an ACL user and SELECT of the database.

// fakeRedis answers RESP commands with answer(name), "" closing the
// connection; it counts the commands by name.
type fakeRedis struct {
	addr   string
	mu     sync.Mutex
	counts map[string]int
}

func newFakeRedis(t *testing.T, answer func(name string, n int) string) *fakeRedis {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeRedis{addr: ln.Addr().String(), counts: map[string]int{}}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer conn.Close()
				stop := context.AfterFunc(t.Context(), func() { _ = conn.Close() })
				defer stop()
				rd := bufio.NewReader(conn)
				for {
					args, err := readCommand(rd)
					if err != nil {
						return
					}
					name := strings.ToUpper(args[0])
					f.mu.Lock()
					f.counts[name]++
					n := f.counts[name]
					f.mu.Unlock()
					a := answer(name, n)
					if a == "" {
						return
					}
					if _, err := io.WriteString(conn, a); err != nil {
						return
					}
				}
			})
		}
	})
	return f
}

func (f *fakeRedis) count(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.counts[name]
}

// readCommand reads one command: an array of bulk strings.
func readCommand(rd *bufio.Reader) ([]string, error) {
	line, err := rd.ReadString('\n')
	if err != nil {
		return nil, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "*")))
	if err != nil || n < 1 {
		return nil, fmt.Errorf("not a command: %q", line)
	}
	args := make([]string, n)
	for i := range args {
		h, err := rd.ReadString('\n')
		if err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(h, "$")))
		if err != nil {
			return nil, fmt.Errorf("not a bulk string: %q", h)
		}
		b := make([]byte, size+2)
		if _, err := io.ReadFull(rd, b); err != nil {
			return nil, err
		}
		args[i] = string(b[:size])
	}
	return args, nil
}

// A Redis that restarted answers LOADING while it reads its data from
// disk: the call is sent again until Redis runs it, and gives up with the
// caller's deadline, naming the loading.
func TestWaitsOutLoading(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	loadingFor := 5
	f := newFakeRedis(t, func(name string, n int) string {
		if name != "PING" {
			return "-ERR unknown command\r\n" // HELLO: go-redis goes on in RESP2
		}
		mu.Lock()
		defer mu.Unlock()
		if n <= loadingFor {
			return "-LOADING Redis is loading the dataset in memory\r\n"
		}
		return "+PONG\r\n"
	})
	r := newReplica(t, f.addr, func(c *config.Cluster) { c.Timeout, c.LeaseDuration = 20*time.Second, time.Minute })
	if err := r.Ping(t.Context()); err != nil {
		t.Fatalf("PING while Redis loads, then once it has: %v", err)
	}
	if n := f.count("PING"); n != 6 {
		t.Errorf("%d PINGs reached Redis, want 6: every LOADING answer, then the one it ran", n)
	}
	mu.Lock()
	loadingFor = 1 << 30 // loads for ever
	mu.Unlock()
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	if err := r.Ping(ctx); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "loading") {
		t.Errorf("PING while Redis loads past the caller's deadline: %v, want the deadline, naming the loading", err)
	}
}

// A Redis that accepts and never answers (black-holed, stopped with
// SIGSTOP): every call ends by the client's timeout, and says so.
func TestCallsEndByTheirDeadline(t *testing.T) {
	t.Parallel()
	f := newFakeRedis(t, func(string, int) string {
		<-t.Context().Done() // never answers while the test runs
		return ""
	})
	r := newReplica(t, f.addr, func(c *config.Cluster) { c.Timeout = 300 * time.Millisecond })
	start := time.Now()
	err := r.Ping(t.Context())
	if err == nil {
		t.Fatal("PING to a Redis that never answers succeeded")
	}
	// A hang guard, not a measure: the timeout is 0.3 s, a retry at most
	// doubles it.
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("PING to a silent Redis took %s with a 300ms timeout", d)
	}
	if r.Up() {
		t.Error("Up after a call that timed out")
	}
}

// Connections Redis killed (a restart, an idle timeout, CLIENT KILL) are
// replaced: the next call succeeds.
func TestKilledConnectionsAreReplaced(t *testing.T) {
	t.Parallel()
	addr := testutil.StartRedis(t)
	r := newReplica(t, addr)
	ctx := context.Background()
	for range 3 {
		if err := r.Ping(ctx); err != nil {
			t.Fatal(err)
		}
	}
	testutil.RedisCLI(t, addr, nil, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
	if err := r.Ping(ctx); err != nil {
		t.Errorf("PING after the idle connections were killed: %v", err)
	}
}

// Scripts run by their SHA-1 are sent in full again to a Redis that
// forgot them (SCRIPT FLUSH; a restarted Redis, a promoted replica).
func TestScriptsSurviveScriptFlush(t *testing.T) {
	t.Parallel()
	addr := testutil.StartRedis(t)
	r := newReplica(t, addr)
	ctx := context.Background()
	lease, ok, err := r.Leases().Acquire(ctx, "flush", "owner-a", time.Minute)
	if err != nil || !ok {
		t.Fatalf("Acquire: %v %v", ok, err)
	}
	testutil.RedisCLI(t, addr, nil, "SCRIPT", "FLUSH")
	if _, err := r.Leases().Renew(ctx, lease, time.Minute); err != nil {
		t.Errorf("Renew after SCRIPT FLUSH: %v", err)
	}
}

// An ACL user's password from the file, and the database selected; a wrong
// user or password is refused without the password in the error.
func TestAuthAndSelect(t *testing.T) {
	t.Parallel()
	srv := testutil.NewRedis(t, "--user", "default", "off", "--user", "alice", "on", ">alice-s3cret", "~*", "&*", "+@all")
	dir := t.TempDir()
	pwFile := func(pw string) string {
		p := filepath.Join(dir, pw)
		if err := os.WriteFile(p, []byte(pw+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ctx := context.Background()
	r := newReplica(t, srv.Addr, func(c *config.Cluster) { c.Username, c.PasswordFile, c.DB = "alice", pwFile("alice-s3cret"), 3 })
	if _, ok, err := r.Leases().Acquire(ctx, "in-db-3", "alice-owner", time.Minute); err != nil || !ok {
		t.Fatalf("as alice: %v %v", ok, err)
	}
	if got := testutil.RedisCLI(t, srv.Addr, nil, "--user", "alice", "--pass", "alice-s3cret", "--no-auth-warning", "-n", "3", "GET", "mintlify_exporter:lease:{in-db-3}"); !strings.HasSuffix(got, " alice-owner") {
		t.Errorf("the lease in database 3 reads %q, want alice-owner's: SELECT was not sent", got)
	}
	for _, c := range []struct{ user, pw string }{{"alice", "wrong-pw-7"}, {"", "alice-s3cret"}, {"mallory", "alice-s3cret"}} {
		bad := newReplica(t, srv.Addr, func(cfg *config.Cluster) { cfg.Username, cfg.PasswordFile = c.user, pwFile(c.pw) })
		err := bad.Ping(ctx)
		if err == nil || strings.Contains(err.Error(), c.pw) {
			t.Errorf("user %q with a wrong password: %v; want an error without the password", c.user, err)
		}
	}
}

// go-redis's own log lines go to the client's logger, at debug: its
// sentinel's pick of a primary too, which the dialer checks, and which
// logs the primary it follows itself.
func TestLibraryLogLines(t *testing.T) {
	var buf testutil.SyncBuffer
	logger := log.NewLogfmtLogger(&buf)
	cfg := config.ClusterDefaults()
	cfg.Address = "127.0.0.1:1"
	c, err := sharedredis.New(cfg, nil, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sharedredis.LibraryLog(`sentinel: new master=%q addr=%q`, "mintlify", "127.0.0.1:6380")
	sharedredis.LibraryLog("redis: connection pool: failed to dial after %d attempts", 5)
	out := buf.String()
	if !strings.Contains(out, `level=debug msg=go-redis detail="sentinel: new master=`) || !strings.Contains(out, `level=debug msg=go-redis detail="redis: connection pool: failed to dial after 5 attempts"`) {
		t.Errorf("go-redis's lines logged as:\n%s", out)
	}
}
