package sharedredis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Lease is the right to do one piece of work (a refresh, a job's polls)
// until Deadline, held by Owner. Token is its fencing token: it grows with
// every acquisition of the name, so that whatever the holder writes can be
// refused once a later holder has written.
type Lease struct {
	Name  string
	Owner string
	Token int64
	// Deadline is when the holder must have stopped acting, on the
	// holder's clock: the lease's TTL counted from before the call was
	// sent, so never later than Redis's own expiry.
	Deadline time.Time
}

// ErrLeaseLost means the lease expired or another owner holds it now: the
// caller must stop acting on it.
var ErrLeaseLost = errors.New("lease lost")

// Leases are named leases in Redis. A lease is a key set with NX and an
// expiry (there is no lease without one, so a dead holder's lease frees
// itself), whose value is "token owner"; a renewal or release is a Lua
// compare of that value, so only the current holder, with its current
// token, can extend or drop it. The fencing counter of each name is the one
// key kept without an expiry: a token must never go back.
type Leases struct {
	c *Client
	// now is the clock of Deadline (tests may set it).
	now func() time.Time
}

// Leases returns the client's leases.
func (c *Client) Leases() *Leases { return &Leases{c: c, now: time.Now} }

func (l *Leases) keys(name string) []string {
	tag := "lease:{" + name + "}"
	return []string{l.c.Key(tag), l.c.Key(tag, "token")}
}

// acquireScript: when nobody holds KEYS[1], the next token and a lease of
// ARGV[2] ms for owner ARGV[1]; else the holder's value and TTL.
//
// A token is at least Redis's clock in milliseconds: a Redis restarted
// without its data starts the counter again, and tokens counted from 1
// would repeat ones that replicas still hold (as the versions of their
// snapshots); the clock keeps them growing across such a loss.
var acquireScript = NewScript(`
local v = redis.call('GET', KEYS[1])
if v then return {0, v, redis.call('PTTL', KEYS[1])} end
local tok = redis.call('INCR', KEYS[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if tok < now then
  tok = now
  redis.call('SET', KEYS[2], tok)
end
v = string.format('%d %s', tok, ARGV[1])
redis.call('SET', KEYS[1], v, 'PX', ARGV[2])
return {1, v, tonumber(ARGV[2])}
`)

// renewScript extends KEYS[1] to ARGV[2] ms if it still holds ARGV[1].
var renewScript = NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
`)

// releaseScript deletes KEYS[1] if it still holds ARGV[1].
var releaseScript = NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)

func checkLease(name, owner string, ttl time.Duration) error {
	switch {
	case name == "" || strings.ContainsAny(name, "{}"):
		return fmt.Errorf("lease name %q: want a non-empty name without braces", name)
	case owner == "" || strings.ContainsAny(owner, " \r\n"):
		return fmt.Errorf("lease owner %q: want a non-empty id without spaces", owner)
	case ttl < time.Millisecond:
		return fmt.Errorf("lease %s: a lease needs an expiry of at least 1ms, got %s", name, ttl)
	}
	return nil
}

// Acquire takes the lease name for owner for ttl if nobody holds it. When
// someone does, ok is false and lease is the holder's (its Deadline an
// estimate from the remaining TTL).
func (l *Leases) Acquire(ctx context.Context, name, owner string, ttl time.Duration) (lease Lease, ok bool, err error) {
	if err := checkLease(name, owner, ttl); err != nil {
		return Lease{}, false, err
	}
	start := l.now()
	err = l.c.Call(ctx, opLeaseAcquire, func(ctx context.Context) (bool, error) {
		v, err := AsArray(acquireScript.Run(ctx, l.c, l.keys(name), owner, ttl.Milliseconds()))
		if err != nil {
			return false, err
		}
		if len(v) != 3 {
			return false, fmt.Errorf("acquire script answered %d values, want 3", len(v))
		}
		got, _ := v[0].(int64)
		val, _ := v[1].(string)
		pttl, _ := v[2].(int64)
		lease, err = parseLease(name, val)
		if err != nil {
			return false, err
		}
		ok = got == 1
		lease.Deadline = start.Add(time.Duration(pttl) * time.Millisecond)
		return !ok, nil
	})
	return lease, ok, err
}

// Renew extends lease for ttl from now. It fails with ErrLeaseLost when the
// lease expired or passed to another holder (or to a later acquisition by
// the same owner): the caller must stop acting on it.
func (l *Leases) Renew(ctx context.Context, lease Lease, ttl time.Duration) (Lease, error) {
	if err := checkLease(lease.Name, lease.Owner, ttl); err != nil {
		return lease, err
	}
	start := l.now()
	var held bool
	err := l.c.Call(ctx, opLeaseRenew, func(ctx context.Context) (bool, error) {
		n, err := AsInt(renewScript.Run(ctx, l.c, l.keys(lease.Name)[:1], lease.value(), ttl.Milliseconds()))
		held = n == 1
		return !held, err
	})
	switch {
	case err != nil:
		return lease, err
	case !held:
		return lease, fmt.Errorf("lease %s (token %d): %w", lease.Name, lease.Token, ErrLeaseLost)
	}
	lease.Deadline = start.Add(ttl)
	return lease, nil
}

// Release gives lease up before its expiry, so that another replica may
// take it at once. It fails with ErrLeaseLost when the lease was no longer
// the caller's (nothing is released then).
func (l *Leases) Release(ctx context.Context, lease Lease) error {
	var held bool
	err := l.c.Call(ctx, opLeaseRelease, func(ctx context.Context) (bool, error) {
		n, err := AsInt(releaseScript.Run(ctx, l.c, l.keys(lease.Name)[:1], lease.value()))
		held = n == 1
		return !held, err
	})
	switch {
	case err != nil:
		return err
	case !held:
		return fmt.Errorf("lease %s (token %d): %w", lease.Name, lease.Token, ErrLeaseLost)
	}
	return nil
}

// Holder is the lease name's current holder, for a metric or a status
// page; ok is false when nobody holds it.
func (l *Leases) Holder(ctx context.Context, name string) (lease Lease, ok bool, err error) {
	start := l.now()
	err = l.c.Call(ctx, opLeaseHolder, func(ctx context.Context) (bool, error) {
		key := l.keys(name)[0]
		r, err := l.c.Pipeline(ctx, [][]any{{"GET", key}, {"PTTL", key}})
		if err != nil {
			return false, err
		}
		v, err := AsString(r[0].Val, r[0].Err)
		if errors.Is(err, Nil) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("GET: %w", err)
		}
		pttl, err := AsInt(r[1].Val, r[1].Err)
		if err != nil {
			return false, fmt.Errorf("PTTL: %w", err)
		}
		lease, err = parseLease(name, v)
		if err != nil {
			return false, err
		}
		ok = true
		lease.Deadline = start.Add(max(0, time.Duration(pttl)*time.Millisecond))
		return false, nil
	})
	return lease, ok, err
}

// Hold acquires the lease name for owner for the client's lease duration
// and keeps it renewed, every third of it, until release: a holder that
// dies frees it within one lease duration of its last renewal, and one
// failed renewal loses nothing. The returned context ends when a renewal
// finds the lease lost, or when its deadline passes without a renewal
// (Redis away): the holder must stop then, since another replica may take
// it. When someone else holds it, ok is false and lease is the holder's.
// mintlify_exporter_cluster_walk_leases_held counts the leases held so
// (the analytics walks take theirs here).
func (l *Leases) Hold(ctx context.Context, name, owner string) (held context.Context, lease Lease, release func(), ok bool, err error) {
	ttl := l.c.lease
	lease, ok, err = l.Acquire(ctx, name, owner, ttl)
	if err != nil || !ok {
		return nil, lease, nil, false, err
	}
	l.c.held.Add(1)
	held, cancel := context.WithCancelCause(ctx)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // owned by the hold: release stops and waits for it
		deadline := time.NewTimer(time.Until(lease.Deadline))
		defer deadline.Stop()
		renew := time.NewTicker(ttl / 3)
		defer renew.Stop()
		current := lease
		for {
			select {
			case <-stop:
				return
			case <-deadline.C:
				cancel(fmt.Errorf("lease %s expired without a renewal: another replica may take it", name))
				return
			case <-renew.C:
				next, err := l.Renew(held, current, ttl)
				if errors.Is(err, ErrLeaseLost) {
					cancel(err)
					return
				}
				if err == nil {
					current = next
					deadline.Reset(time.Until(current.Deadline))
				}
			}
		}
	})
	var once sync.Once
	release = func() {
		once.Do(func() {
			close(stop)
			wg.Wait()
			cancel(nil)
			l.c.held.Add(-1)
			// Released at once so that the next holder need not wait for
			// the expiry; a failure only means it expires by itself.
			rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), l.c.timeout)
			defer rcancel()
			_ = l.Release(rctx, lease)
		})
	}
	return held, lease, release, true, nil
}

// Fence is what a write fenced by lease checks, in the same atomic step:
// that the key holds the value (see Lease.Token).
func (l *Leases) Fence(lease Lease) (key, value string) { return l.keys(lease.Name)[0], lease.value() }

func (lease Lease) value() string { return strconv.FormatInt(lease.Token, 10) + " " + lease.Owner }

func parseLease(name, v string) (Lease, error) {
	tok, owner, ok := strings.Cut(v, " ")
	n, err := strconv.ParseInt(tok, 10, 64)
	if !ok || err != nil {
		return Lease{}, fmt.Errorf("lease %s: unreadable value in Redis", name)
	}
	return Lease{Name: name, Owner: owner, Token: n}, nil
}
