package sharedredis_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/sharedredis"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

func TestLeaseExpiryTakeoverAndFencing(t *testing.T) {
	t.Parallel()
	addr := testutil.StartRedis(t)
	ctx := context.Background()
	a, b := newReplica(t, addr).Leases(), newReplica(t, addr).Leases()
	// Leases held across a check get a TTL no descheduled test process
	// outlasts; only the lease of a replica that stopped renewing is short.
	const ttl, dying = 3 * time.Second, 300 * time.Millisecond

	la, ok, err := a.Acquire(ctx, "refresh/p1/visitors/7d", "replica-a", time.Minute)
	if err != nil || !ok || la.Owner != "replica-a" || la.Token < 1 {
		t.Fatalf("first Acquire: %+v %v %v", la, ok, err)
	}
	if time.Until(la.Deadline) > time.Minute {
		t.Errorf("deadline %s away, more than the TTL", time.Until(la.Deadline))
	}
	held, ok, err := b.Acquire(ctx, "refresh/p1/visitors/7d", "replica-b", ttl)
	if err != nil || ok || held.Owner != "replica-a" || held.Token != la.Token {
		t.Fatalf("Acquire of a held lease: %+v %v %v; want refused, naming replica-a", held, ok, err)
	}
	if h, ok, err := b.Holder(ctx, "refresh/p1/visitors/7d"); err != nil || !ok || h.Owner != "replica-a" || h.Token != la.Token {
		t.Errorf("Holder: %+v %v %v", h, ok, err)
	}

	// Replica A renews a last time and stops (dies): B takes over once that
	// renewal's TTL has passed, on Redis' clock.
	if la, err = a.Renew(ctx, la, dying); err != nil {
		t.Fatalf("last Renew: %v", err)
	}
	var lb sharedredis.Lease
	testutil.Eventually(t, 0, "B taking over the lease A stopped renewing", func() bool {
		if lb, ok, err = b.Acquire(ctx, "refresh/p1/visitors/7d", "replica-b", ttl); err != nil {
			t.Fatal(err)
		}
		return ok
	})
	if lb.Token <= la.Token {
		t.Errorf("fencing token went from %d to %d, want it to grow", la.Token, lb.Token)
	}

	// A comes back: it can neither renew nor release what it lost.
	if _, err := a.Renew(ctx, la, ttl); !errors.Is(err, sharedredis.ErrLeaseLost) {
		t.Errorf("stale Renew: %v, want ErrLeaseLost", err)
	}
	if err := a.Release(ctx, la); !errors.Is(err, sharedredis.ErrLeaseLost) {
		t.Errorf("stale Release: %v, want ErrLeaseLost", err)
	}
	if h, ok, _ := a.Holder(ctx, "refresh/p1/visitors/7d"); !ok || h.Owner != "replica-b" || h.Token != lb.Token {
		t.Errorf("after the stale calls the holder is %+v, want replica-b's lease", h)
	}

	// The holder renews past its first TTL and keeps it. Real time: the
	// TTL runs on Redis' clock; a renewal every third of it leaves the
	// test process two thirds (2s) to be descheduled.
	for range 4 {
		time.Sleep(ttl / 3)
		if lb, err = b.Renew(ctx, lb, ttl); err != nil {
			t.Fatalf("Renew by the holder: %v", err)
		}
	}
	if _, ok, _ := a.Acquire(ctx, "refresh/p1/visitors/7d", "replica-a", ttl); ok {
		t.Fatal("a renewed lease was taken")
	}
	// A release frees it at once; tokens keep growing.
	if err := b.Release(ctx, lb); err != nil {
		t.Fatal(err)
	}
	la2, ok, err := a.Acquire(ctx, "refresh/p1/visitors/7d", "replica-a", ttl)
	if err != nil || !ok || la2.Token <= lb.Token {
		t.Fatalf("Acquire after Release: %+v %v %v", la2, ok, err)
	}
	// The same owner's older lease is not its newer one.
	if _, err := a.Renew(ctx, la, ttl); !errors.Is(err, sharedredis.ErrLeaseLost) {
		t.Errorf("Renew of the owner's older lease: %v, want ErrLeaseLost", err)
	}
	if _, ok, _ := a.Holder(ctx, "another"); ok {
		t.Error("Holder of a lease never taken")
	}
}

func TestLeaseOneWinner(t *testing.T) {
	t.Parallel()
	addr := testutil.StartRedis(t)
	var mu sync.Mutex
	winners := 0
	var wg sync.WaitGroup
	for i := range 12 {
		l := newReplica(t, addr).Leases()
		wg.Go(func() {
			_, ok, err := l.Acquire(context.Background(), "job/j1", "r"+string(rune('a'+i)), time.Minute)
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				winners++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if winners != 1 {
		t.Errorf("%d replicas acquired the lease, want 1", winners)
	}
}

func TestLeaseRefusesNoExpiry(t *testing.T) {
	t.Parallel()
	l := newReplica(t, "127.0.0.1:1").Leases() // never dialled
	ctx := context.Background()
	for _, c := range []struct {
		name, owner string
		ttl         time.Duration
	}{{"x", "a", 0}, {"x", "a", -time.Second}, {"", "a", time.Second}, {"x", "", time.Second}, {"x", "a b", time.Second}, {"{x}", "a", time.Second}} {
		if _, _, err := l.Acquire(ctx, c.name, c.owner, c.ttl); err == nil {
			t.Errorf("Acquire(%q, %q, %s) succeeded", c.name, c.owner, c.ttl)
		}
	}
	if _, err := l.Renew(ctx, sharedredis.Lease{Name: "x", Owner: "a", Token: 1}, 0); err == nil {
		t.Error("Renew without an expiry succeeded")
	}
}

// A Redis restarted without its data starts its counters again: tokens
// still grow, so that a replica holding a snapshot of an older token never
// takes a new one for the same.
func TestLeaseTokensGrowAcrossRedisDataLoss(t *testing.T) {
	t.Parallel()
	r := testutil.NewRedis(t)
	ctx := context.Background()
	a := newReplica(t, r.Addr).Leases()
	var last int64
	for range 3 {
		l, ok, err := a.Acquire(ctx, "walk:acme:docs", "replica-a", time.Minute)
		if err != nil || !ok {
			t.Fatalf("Acquire: %v %v", ok, err)
		}
		if l.Token <= last {
			t.Fatalf("token %d after %d: want it to grow", l.Token, last)
		}
		last = l.Token
		if err := a.Release(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	r.Stop()
	r.Start() // no persistence: every key is gone
	var l sharedredis.Lease
	var err error
	testutil.Eventually(t, 0, "a lease after Redis came back", func() bool {
		var ok bool
		l, ok, err = a.Acquire(ctx, "walk:acme:docs", "replica-a", time.Minute)
		return err == nil && ok
	}, func() string { return fmt.Sprint("last error: ", err) })
	if l.Token <= last {
		t.Errorf("token %d after Redis lost its data, want above %d", l.Token, last)
	}
}
