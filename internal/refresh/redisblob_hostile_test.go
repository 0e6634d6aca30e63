package refresh

import (
	"context"
	"errors"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// netOut is the bytes Redis has sent to its clients.
func netOut(t *testing.T, addr string) int64 {
	t.Helper()
	info := testutil.RedisCLI(t, addr, nil, "INFO", "stats")
	for _, l := range strings.Fields(info) {
		if v, ok := strings.CutPrefix(l, "total_net_output_bytes:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Fatal("no total_net_output_bytes in INFO stats")
	return 0
}

// Blobs that are not ours: one larger than MaxRedisBlobBytes is not read
// (Redis sends a few bytes, not the blob), a version that overflows int64 is
// reported as what it is, neither counts as Redis unreachable, and the
// overflowing version does not block the next publish.
func TestHostileBlobs(t *testing.T) {
	t.Parallel()
	addr := testutil.StartRedis(t)
	ctx := context.Background()
	r := testutil.NewSharedRedis(t, addr)
	bl := newRedisBlobs(r.Client)
	big := strings.Repeat("x", MaxRedisBlobBytes+1)
	testutil.RedisCLI(t, addr, []byte(big), "HSET", "mintlify_exporter:blob:big", "v", "00000000000000000007", "d")
	testutil.RedisCLI(t, addr, nil, "HSET", "mintlify_exporter:blob:over", "v", "99999999999999999999", "d", "x")
	r.WaitUp(t, true)

	before := netOut(t, addr)
	for range 3 {
		_, v, ok, err := bl.Get(ctx, "big")
		if !errors.Is(err, ErrUnreadableSnapshot) || ok || v != 7 || !strings.Contains(err.Error(), "more than") {
			t.Fatalf("Get of a blob over the bound: v %d ok %v err %v; want version 7 and an error saying it is too large", v, ok, err)
		}
	}
	if sent := netOut(t, addr) - before; sent > 64<<10 {
		t.Errorf("Redis sent %d bytes for three Gets of a blob over the bound, want a few (it must not be read)", sent)
	}
	if _, err := bl.Put(ctx, "mine", 1, []byte(big), time.Minute); err == nil {
		t.Error("Put of a blob over the bound succeeded")
	}

	_, _, _, err := bl.Get(ctx, "over")
	if !errors.Is(err, ErrUnreadableSnapshot) || !strings.Contains(err.Error(), `"99999999999999999999"`) {
		t.Errorf("Get of an overflowing version: %v, want an error naming the version", err)
	}
	vs, err := bl.Versions(ctx, []string{"over", "big"})
	if err != nil || vs[0] != 0 || vs[1] != 7 {
		t.Errorf("Versions = %v, %v; want [0 7]: an overflowing version reads as none", vs, err)
	}
	if !r.Up() {
		t.Error("mintlify_exporter_cluster_up 0 after blobs that are not ours: Redis answered, want 1")
	}
	if written, err := bl.Put(ctx, "over", 5, []byte("ours"), time.Minute); err != nil || !written {
		t.Errorf("Put over an overflowing version: %v %v, want written", written, err)
	}
	if d, v, ok, err := bl.Get(ctx, "over"); err != nil || !ok || v != 5 || string(d) != "ours" {
		t.Errorf("after the Put: %q %d %v %v", d, v, ok, err)
	}
}

// A shared snapshot that does not decode is fetched once, not at every
// sync: the replica remembers the version, and takes the next one.
func TestUnreadableSnapshotIsNotFetchedAgain(t *testing.T) {
	t.Parallel()
	addr := testutil.StartRedis(t)
	clk := &clock{}
	clk.ns.Store(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC).UnixNano())
	srv := httptest.NewServer(fakeapi.New(fakeapi.Options{APIKey: walksKey, Paths: 30, Now: clk.now}))
	defer srv.Close()
	a := newPlanReplica(t, addr, "replica-a", srv.URL, clk)
	ctx := context.Background()
	a.sched.RefreshDue(ctx)

	// Every published snapshot replaced by a newer version that is garbage.
	keys := strings.Fields(testutil.RedisCLI(t, addr, nil, "KEYS", "mintlify_exporter:blob:*"))
	if len(keys) == 0 {
		t.Fatal("no published blobs")
	}
	for _, k := range keys {
		v := testutil.RedisCLI(t, addr, nil, "HGET", k, "v")
		n, _ := strconv.ParseInt(v, 10, 64)
		testutil.RedisCLI(t, addr, nil, "HSET", k, "v", strconv.FormatInt(n+1000, 10), "d", `{"snapshot":"bm90IGEgc25hcHNob3Q="}`)
	}
	b := newPlanReplica(t, addr, "replica-b", srv.URL, clk)
	gets := func() float64 {
		return b.Calls("blob_get", "ok")
	}
	b.sched.Sync(ctx)
	first := gets()
	for range 3 {
		b.sched.Sync(ctx)
	}
	// Each later sync reads the versions (one call), and fetches nothing.
	if got := gets() - first; got != 3 {
		t.Errorf("three syncs after the unreadable snapshots made %v blob reads, want 3 (the versions only)", got)
	}
	if first < float64(len(keys)) {
		t.Errorf("the first sync made %v blob reads for %d unreadable snapshots: it did not look at them", first, len(keys))
	}
}
