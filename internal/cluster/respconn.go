package cluster

import (
	"bufio"
	"context"
	"crypto/sha1" //nolint:gosec // Redis names scripts by their SHA-1
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"
)

// respPool is a small pool of connections to one Redis. A connection is
// dialled, encrypted (TLS), authenticated and switched to its database
// when the pool has none idle; one that failed in any way (I/O, a reply
// out of protocol or over a bound, a cancelled context) is closed, never
// reused, so a reply can never be read as another command's.
type respPool struct {
	addr     string
	username string
	// password is read at every dial, so a rotated password file applies
	// to the next connection without a restart.
	password func() (string, error)
	db       int
	tls      *tls.Config
	timeout  time.Duration
	maxBulk  int64

	// slots bounds the connections open at once (idle and in use).
	slots  chan struct{}
	mu     sync.Mutex
	idle   []*respConn
	closed bool
}

// respConn is one connection.
type respConn struct {
	nc net.Conn
	w  *bufio.Writer
	r  respReader
}

func newRespPool(addr, username string, password func() (string, error), db int, tc *tls.Config, timeout time.Duration, size int, maxBulk int64) *respPool {
	return &respPool{addr: addr, username: username, password: password, db: db, tls: tc, timeout: timeout,
		maxBulk: maxBulk, slots: make(chan struct{}, size)}
}

// errPoolClosed is a call after Close.
var errPoolClosed = errors.New("redis client closed")

// reply is one command's answer in a pipeline: its value, or errNil, or a
// redisError.
type reply struct {
	val any
	err error
}

// do sends one command and reads its reply.
func (p *respPool) do(ctx context.Context, args ...any) (any, error) {
	r, err := p.pipeline(ctx, [][]any{args})
	if err != nil {
		return nil, err
	}
	return r[0].val, r[0].err
}

// pipeline writes cmds in one go and then reads their replies: one round
// trip. The error is the connection's (the replies are then unknown); each
// command's own error (errNil, a redisError) is in its reply. A connection
// taken from the idle pool that turns out dead before any reply arrived (a
// restarted Redis closed it) is replaced once by a newly dialled one.
func (p *respPool) pipeline(ctx context.Context, cmds [][]any) ([]reply, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for a connection: %w", ctx.Err())
	}
	defer func() { <-p.slots }()
	wasLoading := false // Redis answered LOADING: the error says so
	for try := 0; ; try++ {
		c, reused, err := p.get(ctx, try > 0)
		if err != nil {
			return nil, err
		}
		out, unsent, reusable, err := c.exchange(ctx, p.timeout, cmds)
		if reusable {
			p.put(c)
		} else {
			_ = c.nc.Close()
		}
		if err == nil && loading(out) {
			// Redis restarted and is reading its data from disk: it ran
			// none of the commands, so they are sent again shortly, as
			// go-redis did, until the caller's context ends.
			if err := pause(ctx, loadingPause); err != nil {
				return nil, fmt.Errorf("redis is loading its dataset: %w", err)
			}
			try, wasLoading = -1, true // a fresh round: the connection was fine
			continue
		}
		if err == nil {
			return out, nil
		}
		if d, ok := ctx.Deadline(); ctx.Err() != nil || ok && !time.Now().Before(d) {
			// The context ended it (its deadline was the connection's):
			// the caller's error, once the context says so too.
			<-ctx.Done()
			if wasLoading { // the deadline ended an exchange sent again
				return nil, fmt.Errorf("redis is loading its dataset: %w (%v)", ctx.Err(), err)
			}
			return nil, fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		if !reused || !unsent || try > 0 {
			return nil, err
		}
	}
}

// loadingPause is how long a command that found Redis loading its dataset
// waits before it is sent again.
const loadingPause = 50 * time.Millisecond

// loading reports whether every reply is Redis's LOADING error: Redis ran
// none of the commands.
func loading(out []reply) bool {
	for _, r := range out {
		var re redisError
		if !errors.As(r.err, &re) || !strings.HasPrefix(string(re), "LOADING ") {
			return false
		}
	}
	return len(out) > 0
}

// pause waits d, or until ctx ends (its error then).
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// get takes an idle connection, or dials one when there is none or when
// fresh; reused says which.
func (p *respPool) get(ctx context.Context, fresh bool) (c *respConn, reused bool, err error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, false, errPoolClosed
	}
	if n := len(p.idle); n > 0 && !fresh {
		c = p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return c, true, nil
	}
	p.mu.Unlock()
	c, err = p.dial(ctx)
	return c, false, err
}

func (p *respPool) put(c *respConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.nc.Close()
		return
	}
	p.idle = append(p.idle, c)
}

// close closes the idle connections; those in use are closed when they
// come back.
func (p *respPool) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, c := range p.idle {
		_ = c.nc.Close()
	}
	p.idle = nil
	return nil
}

// dial connects, and authenticates and selects the database in one round
// trip. Errors never hold the password: AUTH's arguments are not in them,
// and Redis's answer (WRONGPASS) names none.
func (p *respPool) dial(ctx context.Context) (*respConn, error) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	nc, err := (&net.Dialer{Timeout: p.timeout}).DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	if p.tls != nil {
		tc := tls.Client(nc, p.tls)
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = nc.Close()
			return nil, fmt.Errorf("TLS handshake: %w", err)
		}
		nc = tc
	}
	c := &respConn{nc: nc, w: bufio.NewWriter(nc), r: respReader{r: bufio.NewReader(nc), maxBulk: p.maxBulk}}
	var setup [][]any
	var names []string
	pw, err := p.password()
	if err != nil {
		_ = nc.Close()
		return nil, err
	}
	if pw != "" || p.username != "" {
		auth := []any{"AUTH", pw}
		if p.username != "" {
			auth = []any{"AUTH", p.username, pw}
		}
		setup, names = append(setup, auth), append(names, "AUTH")
	}
	if p.db != 0 {
		setup, names = append(setup, []any{"SELECT", p.db}), append(names, "SELECT")
	}
	if len(setup) == 0 {
		return c, nil
	}
	out, _, reusable, err := c.exchange(ctx, p.timeout, setup)
	if err == nil && !reusable {
		err = ctx.Err()
	}
	if err == nil {
		for i, r := range out {
			if r.err != nil {
				err = fmt.Errorf("%s: %w", names[i], r.err)
				break
			}
		}
	}
	if err != nil {
		_ = nc.Close()
		return nil, err
	}
	return c, nil
}

// exchange writes cmds and reads as many replies, within timeout and ctx:
// a cancelled context ends it at once (the connection's deadline is moved
// to the past). unsent says the failure came before any reply, from a
// connection the server had closed: no command ran, so sending them again
// on another is safe. reusable says the connection is in step and nothing
// will move its deadline any more: it may serve another call; the caller
// closes it otherwise.
func (c *respConn) exchange(ctx context.Context, timeout time.Duration, cmds [][]any) (out []reply, unsent, reusable bool, err error) {
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := c.nc.SetDeadline(deadline); err != nil {
		return nil, false, false, err
	}
	stop := context.AfterFunc(ctx, func() { _ = c.nc.SetDeadline(time.Unix(1, 0)) })
	defer func() {
		// A context that ended just after the last reply may still move
		// the deadline (its function started), spoiling the next call's.
		reusable = stop() && err == nil
	}()
	for _, cmd := range cmds {
		if err := writeCommand(c.w, cmd); err != nil {
			return nil, false, false, err
		}
	}
	if err := c.w.Flush(); err != nil {
		return nil, closedByServer(err), false, fmt.Errorf("writing %d command(s): %w", len(cmds), err)
	}
	out = make([]reply, len(cmds))
	for i := range cmds {
		v, err := c.r.read()
		var re redisError
		switch {
		case err == nil, errors.Is(err, errNil), errors.As(err, &re):
			out[i] = reply{val: v, err: err}
		default:
			// A clean EOF only before the first byte of a reply (the
			// reader turns one within a reply into ErrUnexpectedEOF).
			return nil, i == 0 && closedByServer(err), false, fmt.Errorf("reading reply %d of %d: %w", i+1, len(cmds), err)
		}
	}
	return out, false, true, nil
}

// closedByServer says whether err is what a connection the server closed
// gives (a restarted Redis, an idle timeout, CLIENT KILL).
func closedByServer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// script is a Lua script, run by its SHA-1 (EVALSHA) and sent in full
// (EVAL) only when Redis does not know it yet (NOSCRIPT: a new or
// restarted Redis, SCRIPT FLUSH).
type script struct{ src, sha string }

func newScript(src string) *script {
	sum := sha1.Sum([]byte(src)) //nolint:gosec // Redis names scripts by their SHA-1
	return &script{src: src, sha: hex.EncodeToString(sum[:])}
}

// run runs s with keys and args.
func (s *script) run(ctx context.Context, p *respPool, keys []string, args ...any) (any, error) {
	cmd := make([]any, 0, 3+len(keys)+len(args))
	cmd = append(cmd, "EVALSHA", s.sha, len(keys))
	for _, k := range keys {
		cmd = append(cmd, k)
	}
	cmd = append(cmd, args...)
	v, err := p.do(ctx, cmd...)
	var re redisError
	if errors.As(err, &re) && strings.HasPrefix(string(re), "NOSCRIPT") {
		cmd[0], cmd[1] = "EVAL", s.src
		v, err = p.do(ctx, cmd...)
	}
	return v, err
}

// The shapes of replies the callers expect; another shape is an error
// that names what came.

func asInt(v any, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	n, ok := v.(int64)
	if !ok {
		return 0, fmt.Errorf("want an integer reply, got %T", v)
	}
	return n, nil
}

func asString(v any, err error) (string, error) {
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("want a string reply, got %T", v)
	}
	return s, nil
}

func asArray(v any, err error) ([]any, error) {
	if err != nil {
		return nil, err
	}
	a, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("want an array reply, got %T", v)
	}
	return a, nil
}

func asInts(v any, err error) ([]int64, error) { return asEach(v, err, asInt) }

func asStrings(v any, err error) ([]string, error) { return asEach(v, err, asString) }

// asEach is an array reply whose elements are each of one shape.
func asEach[T any](v any, err error, as func(any, error) (T, error)) ([]T, error) {
	a, err := asArray(v, err)
	if err != nil {
		return nil, err
	}
	out := make([]T, len(a))
	for i, e := range a {
		if out[i], err = as(e, nil); err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
	}
	return out, nil
}
