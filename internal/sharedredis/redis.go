package sharedredis

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
)

// The connection to Redis goes through go-redis, a kept client (its own
// pool, RESP, AUTH, TLS, EVALSHA with EVAL fallback, Sentinel), configured
// here from the cluster settings; this file keeps only what this package
// asks of it on top: LOADING waited out until the caller's deadline, and
// replies in the few shapes the callers read.

// libLogger takes go-redis's own log lines (failed dials, a sentinel
// switching the primary), which would otherwise go to stderr in another
// format: at debug level, since Client.call already logs each change of
// reachability once, and the sentinels' dialer each change of the primary
// it follows. go-redis has one logger per process, so the last Client
// made names it.
type libLogger struct{ l atomic.Pointer[log.Logger] }

var redisLog = func() *libLogger {
	l := &libLogger{}
	nop := log.NewNopLogger()
	l.l.Store(&nop)
	redis.SetLogger(l)
	return l
}()

func (l *libLogger) Printf(_ context.Context, format string, v ...any) {
	level.Debug(*l.l.Load()).Log("msg", "go-redis", "detail", fmt.Sprintf(format, v...))
}

// Nil is the null reply (a missing key or field, a script's false): not
// a failure, callers test it with errors.Is.
var Nil = redis.Nil

// redisConn is the client of one Redis: a plain one at cluster.address, or
// one that follows the primary that Redis Sentinel names.
type redisConn struct {
	rdb *redis.Client
	// sentinels, with Sentinel, is the dialer that checks the primary
	// they name.
	sentinels *sentinels
}

// Bounds of the retries go-redis makes on its own. One retry sends a
// command again on a new connection after an idle one turned out dead (a
// restarted Redis closed it), as our client did; more would only stretch
// a call against a Redis that is away, which callers already handle by
// trying again at their own pace. go-redis also retries a command whose
// connection broke after it was written (EOF), which our client did not:
// each of our scripts is safe to run twice (a ledger take paid twice
// spends one request more, never one too many; an Apply writes the same
// values; a lease acquired twice reads as held by its own owner and
// expires), so the retry's availability is worth it.
const (
	maxRetries      = 1
	minRetryBackoff = 8 * time.Millisecond
	maxRetryBackoff = 100 * time.Millisecond
)

// newRedisConn configures go-redis. Every call has a deadline (Client.call
// adds the client's timeout to the caller's context), which go-redis turns
// into the connection's (ContextTimeoutEnabled); the dial, read and write
// timeouts are the same setting, for calls whose context has none.
// RESP2 keeps the replies in the shapes the scripts answer (integers,
// strings, arrays). The password file is read at every dial, so that a
// rotated password applies to the next connection without a restart.
func newRedisConn(cfg *config.Cluster, tc *tls.Config, sentinelPassword string, logger log.Logger) *redisConn {
	o := &redis.UniversalOptions{
		Addrs: []string{cfg.Address},
		CredentialsProviderContext: func(context.Context) (string, string, error) {
			pw, err := password(cfg)
			return cfg.Username, pw, err
		},
		DB:                    cfg.DB,
		Protocol:              2,
		MaxRetries:            maxRetries,
		MinRetryBackoff:       minRetryBackoff,
		MaxRetryBackoff:       maxRetryBackoff,
		DialTimeout:           cfg.Timeout,
		ReadTimeout:           cfg.Timeout,
		WriteTimeout:          cfg.Timeout,
		ContextTimeoutEnabled: true,
		PoolSize:              poolSize,
		PoolTimeout:           cfg.Timeout,
		TLSConfig:             tc,
		// No CLIENT SETINFO and no maintenance notifications: a Redis or
		// Valkey without them would answer each dial with an error.
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
	if !cfg.Sentinel.Enabled() {
		return &redisConn{rdb: redis.NewClient(o.Simple())}
	}
	o.Addrs = cfg.Sentinel.Addresses
	o.MasterName = cfg.Sentinel.MasterName
	o.SentinelUsername, o.SentinelPassword = cfg.Sentinel.Username, sentinelPassword
	s := newSentinels(o, logger)
	fo := o.Failover()
	fo.Dialer = s.dial
	return &redisConn{rdb: redis.NewFailoverClient(fo), sentinels: s}
}

func (p *redisConn) close() error {
	if p.sentinels != nil {
		p.sentinels.close()
	}
	return p.rdb.Close()
}

// Do sends one command and returns its reply: Nil for a null. Callers
// send it within Call, which bounds and counts it.
func (c *Client) Do(ctx context.Context, args ...any) (any, error) {
	return waitLoading(ctx, func() (any, error) { return c.pool.rdb.Do(ctx, args...).Result() })
}

// Reply is one command's answer in a pipeline: its value, or Nil, or
// Redis's error.
type Reply struct {
	Val any
	Err error
}

// Pipeline sends cmds in one round trip. The error is the connection's;
// each command's own (Nil, an error reply) is in its Reply.
func (c *Client) Pipeline(ctx context.Context, cmds [][]any) ([]Reply, error) {
	return waitLoading(ctx, func() ([]Reply, error) {
		pipe := c.pool.rdb.Pipeline()
		out := make([]*redis.Cmd, len(cmds))
		for i, c := range cmds {
			out[i] = pipe.Do(ctx, c...)
		}
		_, err := pipe.Exec(ctx)
		if err != nil && !isReplyError(err) {
			return nil, err
		}
		r := make([]Reply, len(out))
		loadingAll := len(out) > 0
		for i, c := range out {
			r[i].Val, r[i].Err = c.Result()
			loadingAll = loadingAll && isLoading(r[i].Err)
		}
		if loadingAll {
			return nil, r[0].Err
		}
		return r, nil
	})
}

// isReplyError says whether err is Redis's answer to one command (or the
// null), not a failure of the connection.
func isReplyError(err error) bool {
	var re redis.Error
	return errors.Is(err, redis.Nil) || errors.As(err, &re)
}

// isLoading is Redis's LOADING answer: it restarted and reads its data
// from disk, and ran nothing.
func isLoading(err error) bool { return err != nil && strings.HasPrefix(err.Error(), "LOADING ") }

// loadingPause is how long a command that found Redis loading its dataset
// waits before it is sent again.
const loadingPause = 50 * time.Millisecond

// waitLoading runs fn again while Redis answers LOADING, until ctx ends:
// go-redis retries it only MaxRetries times, and a Redis reading a large
// file takes longer; a Redis that ran nothing can be asked again safely.
func waitLoading[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	wasLoading := false
	for {
		v, err := fn()
		if !isLoading(err) {
			if d, ok := ctx.Deadline(); err != nil && wasLoading && (ctx.Err() != nil || ok && !time.Now().Before(d)) {
				// The deadline ended a command sent again (as the
				// connection's, a moment before the context's own): the
				// error names why it was sent again.
				<-ctx.Done()
				return v, fmt.Errorf("redis is loading its dataset: %w (%v)", ctx.Err(), err)
			}
			return v, err
		}
		wasLoading = true
		t := time.NewTimer(loadingPause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return v, fmt.Errorf("redis is loading its dataset: %w", ctx.Err())
		}
	}
}

// Script is a Lua script, run by its SHA-1 (EVALSHA) and sent in full
// (EVAL) only when Redis does not know it yet (NOSCRIPT: a new or
// restarted Redis, a promoted replica, SCRIPT FLUSH). It is go-redis's
// Script with our methods only: a wrapper holding a *redis.Script linked
// every method of it into the binary (4 KB).
type Script redis.Script

// NewScript is the script of source src.
func NewScript(src string) *Script { return (*Script)(redis.NewScript(src)) }

// Run runs s on c with keys and args, within Call.
func (s *Script) Run(ctx context.Context, c *Client, keys []string, args ...any) (any, error) {
	return waitLoading(ctx, func() (any, error) { return (*redis.Script)(s).Run(ctx, c.pool.rdb, keys, args...).Result() })
}

// The shapes of replies the callers expect; another shape is an error
// that names what came.

// AsInt is an integer reply.
func AsInt(v any, err error) (int64, error) { return as[int64](v, err, "an integer") }

// AsString is a string reply.
func AsString(v any, err error) (string, error) { return as[string](v, err, "a string") }

// AsArray is an array reply.
func AsArray(v any, err error) ([]any, error) { return as[[]any](v, err, "an array") }

// as is a reply of type T; shape names it in the error for another.
func as[T any](v any, err error, shape string) (T, error) {
	t, ok := v.(T)
	if err == nil && !ok {
		err = fmt.Errorf("want %s reply, got %T", shape, v)
	}
	if err != nil {
		var zero T
		return zero, err
	}
	return t, nil
}

// AsInts is an array reply of integers.
func AsInts(v any, err error) ([]int64, error) { return asEach(v, err, AsInt) }

// AsStrings is an array reply of strings.
func AsStrings(v any, err error) ([]string, error) { return asEach(v, err, AsString) }

// asEach is an array reply whose elements are each of one shape.
func asEach[T any](v any, err error, as func(any, error) (T, error)) ([]T, error) {
	a, err := AsArray(v, err)
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

// runThenWait runs s and, when wait says its reply calls for it, WAIT
// replicas timeout on the same connection: WAIT counts the replicas that
// hold the writes of the connection it is sent on, so it cannot go
// through the pool on its own. It answers the script's reply and the
// replicas that acknowledged: -1 when it did not wait, or when WAIT
// failed (the script's write stands: its error is not the call's).
func (s *Script) runThenWait(ctx context.Context, p *redisConn, replicas int, timeout time.Duration, wait func(any) bool,
	keys []string, args ...any) (v any, acked int64, err error) {
	conn := p.rdb.Conn()
	defer conn.Close()
	v, err = waitLoading(ctx, func() (any, error) { return (*redis.Script)(s).Run(ctx, conn, keys, args...).Result() })
	if err != nil || !wait(v) {
		return v, -1, err
	}
	acked, err = conn.Wait(ctx, replicas, timeout).Result()
	if err != nil {
		return v, -1, nil
	}
	return v, acked, nil
}
