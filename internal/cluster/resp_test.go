package cluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// testPool is a pool to the Redis at addr with a generous timeout: the
// tests below end calls by their context or by the server, never by it.
func testPool(t *testing.T, addr string, edit ...func(*respPool)) *respPool {
	t.Helper()
	p := newRespPool(addr, "", func() (string, error) { return "", nil }, 0, nil, 30*time.Second, 4, 1<<20)
	for _, e := range edit {
		e(p)
	}
	t.Cleanup(func() { _ = p.close() })
	return p
}

// Every RESP2 reply type, from the real Redis: each comes back as the
// value the callers expect, a null as errNil, an error reply as
// redisError, and a connection survives an error reply.
func TestRespReplyTypes(t *testing.T) {
	t.Parallel()
	addr := testutil.StartRedis(t)
	p := testPool(t, addr)
	ctx := context.Background()
	testutil.RedisCLI(t, addr, nil, "SET", "s", "bulk\r\nwith CRLF")
	testutil.RedisCLI(t, addr, nil, "HSET", "h", "a", "1", "b", "")

	check := func(name string, got, want any, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else if !equal(got, want) {
			t.Errorf("%s = %#v, want %#v", name, got, want)
		}
	}
	v, err := p.do(ctx, "PING")
	check("simple string (PING)", v, "PONG", err)
	v, err = p.do(ctx, "HLEN", "h")
	check("integer (HLEN)", v, int64(2), err)
	v, err = p.do(ctx, "GET", "s")
	check("bulk (GET)", v, "bulk\r\nwith CRLF", err)
	v, err = p.do(ctx, "HGET", "h", "b")
	check("empty bulk (HGET)", v, "", err)
	v, err = p.do(ctx, "EVAL", "return {1, {'x', -2}, false, 'y'}", 0)
	check("nested array with a null (EVAL)", v, []any{int64(1), []any{"x", int64(-2)}, errNil, "y"}, err)
	v, err = p.do(ctx, "EVAL", "return {}", 0)
	check("empty array (EVAL)", v, []any{}, err)

	if v, err := p.do(ctx, "GET", "missing"); !errors.Is(err, errNil) || v != nil {
		t.Errorf("null bulk (GET of a missing key) = %#v, %v; want errNil", v, err)
	}
	if v, err := p.do(ctx, "BLPOP", "missing-list", "0.01"); !errors.Is(err, errNil) || v != nil {
		t.Errorf("null array (BLPOP that times out) = %#v, %v; want errNil", v, err)
	}
	var re redisError
	if _, err := p.do(ctx, "HGET", "s", "a"); !errors.As(err, &re) || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
		t.Errorf("error reply (HGET of a string) = %v, want WRONGTYPE as a redisError", err)
	}
	v, err = p.do(ctx, "PING")
	check("PING after an error reply", v, "PONG", err)
	if n := len(p.idle); n != 1 {
		t.Errorf("%d idle connections after sequential calls and error replies, want 1 (reused)", n)
	}
}

func equal(a, b any) bool {
	as, ok1 := a.([]any)
	bs, ok2 := b.([]any)
	if ok1 && ok2 {
		return slices.EqualFunc(as, bs, equal)
	}
	if ae, ok := a.(error); ok {
		be, ok := b.(error)
		return ok && errors.Is(ae, be)
	}
	return a == b
}

// A script runs by its SHA-1; Redis that does not know it (a new one, or
// after SCRIPT FLUSH) gets it once in full, then EVALSHA again.
func TestRespScriptNoScriptFallback(t *testing.T) {
	t.Parallel()
	addr := testutil.StartRedis(t)
	p := testPool(t, addr)
	ctx := context.Background()
	s := newScript("return {KEYS[1], ARGV[1], tonumber(ARGV[2]) + 1}")
	calls := func() (eval, evalsha int) {
		t.Helper()
		info := testutil.RedisCLI(t, addr, nil, "INFO", "commandstats")
		return statCalls(info, "eval"), statCalls(info, "evalsha")
	}
	for round := range 2 {
		for i := range 3 {
			v, err := asArray(s.run(ctx, p, []string{"k"}, []byte("a"), int64(41)))
			if err != nil || !equal(v, []any{"k", "a", int64(42)}) {
				t.Fatalf("round %d run %d: %#v, %v", round, i, v, err)
			}
		}
		if eval, evalsha := calls(); eval != round+1 || evalsha < 3*(round+1) {
			t.Errorf("after round %d: %d EVAL and %d EVALSHA calls, want %d EVAL (one per unknown script) and every run by EVALSHA",
				round, eval, evalsha, round+1)
		}
		testutil.RedisCLI(t, addr, nil, "SCRIPT", "FLUSH")
	}
	// A script's own error is an error reply, not a NOSCRIPT to retry.
	bad := newScript("return redis.call('HGET', KEYS[1], 'x')")
	testutil.RedisCLI(t, addr, nil, "SET", "str", "v")
	if _, err := bad.run(ctx, p, []string{"str"}); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Errorf("script failing on a string key: %v, want WRONGTYPE", err)
	}
}

// statCalls reads calls=N of cmdstat_<cmd> in INFO commandstats.
func statCalls(info, cmd string) int {
	for _, l := range strings.Fields(info) {
		if v, ok := strings.CutPrefix(l, "cmdstat_"+cmd+":calls="); ok {
			n, _ := strconv.Atoi(strings.Split(v, ",")[0])
			return n
		}
	}
	return 0
}

// countingProxy forwards one connection at a time to addr and records the
// direction of every chunk it forwards, to count round trips.
type countingProxy struct {
	ln   net.Listener
	mu   sync.Mutex
	dirs []byte // 'c' client to server, 's' server to client
}

func newCountingProxy(t *testing.T, addr string) *countingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	px := &countingProxy{ln: ln}
	var wg sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", addr)
			if err != nil {
				_ = c.Close()
				return
			}
			wg.Go(func() { px.copy(s, c, 'c') })
			wg.Go(func() { px.copy(c, s, 's') })
		}
	})
	return px
}

func (px *countingProxy) copy(dst, src net.Conn, dir byte) {
	defer dst.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			px.mu.Lock()
			px.dirs = append(px.dirs, dir)
			px.mu.Unlock()
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// roundTrips counts the client's turns: each run of client chunks after a
// server chunk (or at the start) is one.
func (px *countingProxy) roundTrips() int {
	px.mu.Lock()
	defer px.mu.Unlock()
	n := 0
	for i, d := range px.dirs {
		if d == 'c' && (i == 0 || px.dirs[i-1] == 's') {
			n++
		}
	}
	return n
}

// A pipeline is one round trip: every command is written before a reply
// is read, each reply is its own command's (an error reply or a null in
// the middle spoils nothing), in order.
func TestRespPipelineIsOneRoundTrip(t *testing.T) {
	t.Parallel()
	addr := testutil.StartRedis(t)
	px := newCountingProxy(t, addr)
	p := testPool(t, px.ln.Addr().String())
	ctx := context.Background()
	if _, err := p.do(ctx, "PING"); err != nil { // dial before counting
		t.Fatal(err)
	}
	before := px.roundTrips()
	testutil.RedisCLI(t, addr, nil, "SET", "str", "v")
	var cmds [][]any
	for i := range 20 {
		cmds = append(cmds, []any{"SET", "k" + strconv.Itoa(i), i})
	}
	cmds = append(cmds, []any{"HGET", "str", "x"}, []any{"GET", "missing"})
	for i := range 20 {
		cmds = append(cmds, []any{"GET", "k" + strconv.Itoa(i)})
	}
	out, err := p.pipeline(ctx, cmds)
	if err != nil {
		t.Fatal(err)
	}
	if got := px.roundTrips() - before; got != 1 {
		t.Errorf("a pipeline of %d commands took %d round trips, want 1", len(cmds), got)
	}
	if len(out) != len(cmds) {
		t.Fatalf("%d replies for %d commands", len(out), len(cmds))
	}
	for i := range 20 {
		if out[i].val != "OK" || out[i].err != nil {
			t.Errorf("SET %d: %#v", i, out[i])
		}
		if g := out[22+i]; g.val != strconv.Itoa(i) || g.err != nil {
			t.Errorf("GET k%d: %#v", i, g)
		}
	}
	var re redisError
	if !errors.As(out[20].err, &re) || !errors.Is(out[21].err, errNil) {
		t.Errorf("the error reply and the null in the middle: %#v %#v", out[20], out[21])
	}
}

// AUTH with a user and a password, SELECT of the database: done at each
// dial; a wrong password is an error naming WRONGPASS, never the password.
func TestRespAuthAndSelect(t *testing.T) {
	t.Parallel()
	srv := testutil.NewRedis(t, "--user", "default", "off", "--user", "alice", "on", ">alice-s3cret", "~*", "&*", "+@all")
	ctx := context.Background()
	auth := func(user, pw string, db int) func(*respPool) {
		return func(p *respPool) {
			p.username, p.db = user, db
			p.password = func() (string, error) { return pw, nil }
		}
	}
	p := testPool(t, srv.Addr, auth("alice", "alice-s3cret", 3))
	if _, err := p.do(ctx, "SET", "in-db-3", "yes"); err != nil {
		t.Fatalf("as alice: %v", err)
	}
	if got := testutil.RedisCLI(t, srv.Addr, nil, "--user", "alice", "--pass", "alice-s3cret", "--no-auth-warning", "-n", "3", "GET", "in-db-3"); got != "yes" {
		t.Errorf("the key in database 3 reads %q, want yes: SELECT was not sent", got)
	}
	for _, c := range []struct{ user, pw string }{{"alice", "wrong-pw-7"}, {"", "alice-s3cret"}, {"mallory", "alice-s3cret"}} {
		_, err := testPool(t, srv.Addr, auth(c.user, c.pw, 0)).do(ctx, "PING")
		if err == nil || !strings.Contains(err.Error(), "AUTH") || strings.Contains(err.Error(), c.pw) {
			t.Errorf("user %q with a wrong password: %v; want an AUTH error without the password", c.user, err)
		}
	}
	if _, err := testPool(t, srv.Addr).do(ctx, "PING"); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("without a password: %v, want NOAUTH", err)
	}
}

// A connection Redis kills: when idle, the next call takes a new one and
// succeeds (a restarted Redis, an idle timeout); in the middle of a
// pipeline, the call fails (some commands ran: it is not sent again) and
// the next call succeeds on a new connection.
func TestRespKilledConnection(t *testing.T) {
	t.Parallel()
	addr := testutil.StartRedis(t)
	p := testPool(t, addr)
	ctx := context.Background()
	if _, err := p.do(ctx, "SET", "n", 0); err != nil {
		t.Fatal(err)
	}
	// Two idle connections, both killed (as a restart of Redis does): the
	// one retry is on a new connection, not on the other dead one.
	c1, _, err := p.get(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	c2, _, err := p.get(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	p.put(c1)
	p.put(c2)
	testutil.RedisCLI(t, addr, nil, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
	if v, err := p.do(ctx, "INCR", "n"); err != nil || v != int64(1) {
		t.Fatalf("INCR after the idle connections were killed: %v, %v; want 1", v, err)
	}

	_, err = p.pipeline(ctx, [][]any{{"INCR", "n"}, {"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "no"}, {"INCR", "n"}})
	if err == nil {
		t.Fatal("a pipeline whose connection was killed in its middle succeeded")
	}
	if v, err := p.do(ctx, "GET", "n"); err != nil || v != "2" {
		t.Errorf("after the killed pipeline: n = %v, %v; want 2 (the first INCR ran once, the pipeline was not sent again)", v, err)
	}
	if n := len(p.idle); n != 1 {
		t.Errorf("%d idle connections, want 1 (the killed ones dropped)", n)
	}
}

// A cancelled context ends a call Redis has not answered, and the
// connection is dropped: its late reply is never read as another
// command's.
func TestRespContextCancellation(t *testing.T) {
	t.Parallel()
	addr := testutil.StartRedis(t)
	p := testPool(t, addr)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := p.do(ctx, "BLPOP", "list", "25")
		done <- err
	}()
	// Cancel once Redis holds the BLPOP.
	for !strings.Contains(testutil.RedisCLI(t, addr, nil, "INFO", "clients"), "blocked_clients:1") {
		select {
		case err := <-done:
			t.Fatalf("BLPOP ended before it was cancelled: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled BLPOP: %v, want context.Canceled (a timeout or nil would mean it waited for Redis)", err)
	}
	testutil.RedisCLI(t, addr, nil, "RPUSH", "list", "late")
	if v, err := p.do(context.Background(), "LPOP", "list"); err != nil || v != "late" {
		t.Errorf("LPOP after the cancelled BLPOP: %v, %v; want late (the cancelled call took nothing)", v, err)
	}
	_, err := p.do(ctx, "PING")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("a call with a cancelled context: %v", err)
	}
}

// A bulk reply over the bound is refused from its header, before its
// bytes are read; the connection is dropped, and the next call works.
func TestRespBulkOverBound(t *testing.T) {
	t.Parallel()
	addr := testutil.StartRedis(t)
	p := testPool(t, addr, func(p *respPool) { p.maxBulk = 1000 })
	ctx := context.Background()
	testutil.RedisCLI(t, addr, nil, "SET", "fits", strings.Repeat("x", 1000))
	testutil.RedisCLI(t, addr, nil, "SET", "big", strings.Repeat("x", 1001))
	if v, err := asString(p.do(ctx, "GET", "fits")); err != nil || len(v) != 1000 {
		t.Errorf("GET of 1000 bytes: %d bytes, %v", len(v), err)
	}
	var pe *protocolError
	if _, err := p.do(ctx, "GET", "big"); !errors.As(err, &pe) || !strings.Contains(err.Error(), "1001") {
		t.Errorf("GET of 1001 bytes with a bound of 1000: %v, want a refusal naming the size", err)
	}
	if v, err := p.do(ctx, "PING"); err != nil || v != "PONG" {
		t.Errorf("PING after the refused reply: %v, %v", v, err)
	}
}

// The reader on hostile input: it never panics, never returns a bulk
// string over its bound, and what it accepts is what was sent.
func FuzzRespReader(f *testing.F) {
	for _, s := range []string{
		"+OK\r\n", "-ERR x\r\n", ":-12\r\n", "$3\r\nabc\r\n", "$-1\r\n", "*-1\r\n", "*0\r\n",
		"*3\r\n:1\r\n$-1\r\n*1\r\n+x\r\n", "$5\r\nab\r\n", "$99999999999\r\n", "*9999999999\r\n",
		"$2\r\nabXY", "+no crlf\n", ":x\r\n", "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rr := respReader{r: bufio.NewReaderSize(bytes.NewReader(data), 16), maxBulk: 64}
		for range 4 {
			v, err := rr.read()
			if err != nil {
				var re redisError
				if !errors.Is(err, errNil) && !errors.As(err, &re) {
					return // out of step: the connection would be dropped
				}
				continue
			}
			checkValue(t, v, 0)
		}
	})
}

func checkValue(t *testing.T, v any, depth int) {
	switch v := v.(type) {
	case string:
		if len(v) > maxLine+64 {
			t.Fatalf("a string of %d bytes", len(v))
		}
	case int64, redisError:
	case []any:
		if depth >= maxDepth {
			t.Fatalf("an array nested %d deep", depth+1)
		}
		for _, e := range v {
			if e != errNil {
				checkValue(t, e, depth+1)
			}
		}
	default:
		t.Fatalf("a value of type %T", v)
	}
}

// The reader's answers for well-formed replies, and its refusals.
func TestRespReaderParses(t *testing.T) {
	t.Parallel()
	read := func(s string) (any, error) {
		rr := respReader{r: bufio.NewReader(strings.NewReader(s)), maxBulk: 8}
		return rr.read()
	}
	for in, want := range map[string]any{
		"+OK\r\n": "OK", ":-7\r\n": int64(-7), "$0\r\n\r\n": "", "$8\r\n12345678\r\n": "12345678",
		"*2\r\n$1\r\na\r\n-ERR in array\r\n": []any{"a", redisError("ERR in array")},
	} {
		if got, err := read(in); err != nil || !equal(got, want) {
			t.Errorf("%q: %#v, %v; want %#v", in, got, err, want)
		}
	}
	for in, want := range map[string]error{"$-1\r\n": errNil, "*-1\r\n": errNil, "-ERR x\r\n": redisError("ERR x")} {
		if _, err := read(in); !errors.Is(err, want) {
			t.Errorf("%q: %v, want %v", in, err, want)
		}
	}
	for _, in := range []string{"$9\r\n123456789\r\n", "$3\r\nab", "*2\r\n:1\r\n", "?\r\n", ":1\n", "$-2\r\n", "+" + strings.Repeat("x", maxLine+1) + "\r\n"} {
		_, err := read(in)
		var pe *protocolError
		if err == nil || !(errors.As(err, &pe) || errors.Is(err, io.ErrUnexpectedEOF)) {
			t.Errorf("%.30q: %v, want a protocol error or an unexpected EOF", in, err)
		}
	}
}

// A Redis that restarted answers LOADING while it reads its data from disk
// (TestStateStoreOutage met it): the client sends the command again until
// Redis runs it, and gives up with the caller's context.
func TestRespWaitsOutLoading(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	var mu sync.Mutex
	loadingFor, commands := 3, 0
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				rr := respReader{r: bufio.NewReader(conn), maxBulk: 1 << 20}
				for {
					if _, err := rr.read(); err != nil {
						return
					}
					mu.Lock()
					commands++
					answer := "+PONG\r\n"
					if commands <= loadingFor {
						answer = "-LOADING Redis is loading the dataset in memory\r\n"
					}
					mu.Unlock()
					if _, err := io.WriteString(conn, answer); err != nil {
						return
					}
				}
			}()
		}
	}()
	p := testPool(t, ln.Addr().String())
	if v, err := p.do(t.Context(), "PING"); err != nil || v != "PONG" {
		t.Fatalf("PING while Redis loads, then once it has: %v, %v; want PONG", v, err)
	}
	mu.Lock()
	if commands != loadingFor+1 {
		t.Errorf("%d commands reached Redis, want %d: every LOADING answer, then the one it ran", commands, loadingFor+1)
	}
	loadingFor = 1 << 30 // loads for ever
	mu.Unlock()
	// Long enough that the first LOADING answer arrives before the
	// deadline on a busy machine. The deadline may then end a pause or an
	// exchange sent again: either way the error names the loading (it
	// once ended an exchange, and the error named only an i/o timeout).
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	if _, err := p.do(ctx, "PING"); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "loading") {
		t.Errorf("PING while Redis loads past the caller's deadline: %v, want the deadline, naming the loading", err)
	}
}
