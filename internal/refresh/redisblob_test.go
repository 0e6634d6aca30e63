package refresh

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

func TestBlobsOnlyNewerVersions(t *testing.T) {
	t.Parallel()
	addr := testutil.StartRedis(t)
	ctx := context.Background()
	a, b := newRedisBlobs(testutil.NewSharedRedis(t, addr).Client), newRedisBlobs(testutil.NewSharedRedis(t, addr).Client)
	if _, _, ok, err := a.Get(ctx, "snap"); ok || err != nil {
		t.Fatalf("Get of nothing: %v %v", ok, err)
	}
	// Nanosecond timestamps one apart: a double would round them equal.
	const v = int64(1_763_000_000_000_000_001)
	data := []byte{0, 1, 2, 0xff, '\n', ' '}
	for _, c := range []struct {
		version int64
		data    []byte
		written bool
	}{
		{v, data, true},
		{v - 1, []byte("older"), false},
		{v, []byte("same version"), false},
		{0, []byte("zero"), false},
	} {
		written, err := b.Put(ctx, "snap", c.version, c.data, time.Minute)
		if err != nil || written != c.written {
			t.Fatalf("Put version %d: written %v, %v; want %v", c.version, written, err, c.written)
		}
	}
	got, ver, ok, err := a.Get(ctx, "snap")
	if err != nil || !ok || ver != v || !bytes.Equal(got, data) {
		t.Fatalf("Get: %q %d %v %v", got, ver, ok, err)
	}
	if written, err := a.Put(ctx, "snap", v+1, []byte("newer"), time.Minute); err != nil || !written {
		t.Fatalf("Put of a newer version: %v %v", written, err)
	}
	if got, ver, _, _ := b.Get(ctx, "snap"); ver != v+1 || string(got) != "newer" {
		t.Errorf("after the newer Put: %q %d", got, ver)
	}
}

func TestBlobsExpire(t *testing.T) {
	t.Parallel()
	addr := testutil.StartRedis(t)
	ctx := context.Background()
	bl := newRedisBlobs(testutil.NewSharedRedis(t, addr).Client)
	if _, err := bl.Put(ctx, "short", 1, []byte("x"), 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 0, "the blob to expire", func() bool {
		_, _, ok, err := bl.Get(ctx, "short")
		if err != nil {
			t.Fatal(err)
		}
		return !ok
	})
	// An expired blob takes any version again.
	if written, err := bl.Put(ctx, "short", 0, []byte("y"), time.Minute); err != nil || !written {
		t.Errorf("Put after expiry: %v %v", written, err)
	}
	for _, c := range []struct {
		key     string
		version int64
		ttl     time.Duration
	}{{"", 1, time.Minute}, {"k", -1, time.Minute}, {"k", 1, 0}} {
		if _, err := bl.Put(ctx, c.key, c.version, nil, c.ttl); err == nil {
			t.Errorf("Put(%q, %d, ttl %s) succeeded", c.key, c.version, c.ttl)
		}
	}
}
