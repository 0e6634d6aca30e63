package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sharedredis"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// stateStore is the engine's interface, which the Redis store implements.
type stateStore = engine.Store

var _ stateStore = (*store.RedisStore)(nil)

var stateOpts = store.RedisOptions{Schema: "1", Buckets: []string{"intents"}}

func openState(t *testing.T, addr string, opts store.RedisOptions) (stateStore, error) {
	t.Helper()
	return store.OpenRedis(context.Background(), testutil.NewSharedRedis(t, addr).Client, opts)
}

func readAll(t *testing.T, s stateStore, bucket string) (map[string]string, []string) {
	t.Helper()
	got := map[string]string{}
	var order []string
	if err := s.ForEachIn(bucket, func(k, v []byte) error {
		got[string(k)] = string(v)
		order = append(order, string(k))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got, order
}

func TestStateStoreRoundTrip(t *testing.T) {
	t.Parallel()
	addr := testutil.StartRedis(t)
	s, err := openState(t, addr, stateOpts)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			if err := s.Apply(store.Op{Bucket: store.Jobs, Key: fmt.Sprintf("k%02d", i), Value: []byte(fmt.Sprint(i))}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	// One Apply across buckets, with deletes (one of a missing key) and
	// binary bytes.
	if err := s.Apply(store.Op{Bucket: store.Jobs, Key: "k00"}, store.Op{Bucket: store.Jobs, Key: "k01"},
		store.Op{Bucket: store.Jobs, Key: "missing"}, store.Op{Bucket: "intents", Key: "i1", Value: []byte{0, 0xff, '\n'}},
		store.Op{Bucket: store.Jobs, Key: "empty", Value: []byte{}}); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()

	// Another replica reads the same state.
	s, err = openState(t, addr, stateOpts)
	if err != nil {
		t.Fatal(err)
	}
	got, order := readAll(t, s, store.Jobs)
	if n, _ := s.Len(); len(got) != 49 || n != 49 || got["k49"] != "49" || got["k00"] != "" || got["empty"] != "" || order[0] != "empty" || order[1] != "k02" || order[48] != "k49" {
		t.Errorf("after reopen: %d entries (Len %d), order %v", len(got), n, order)
	}
	if in, _ := readAll(t, s, "intents"); in["i1"] != "\x00\xff\n" {
		t.Errorf("intents: %q", in)
	}
	if !strings.HasPrefix(s.Path(), "redis://"+addr+"/0 ") {
		t.Errorf("Path: %q", s.Path())
	}
}

func TestStateStoreRefusesUnknownBucket(t *testing.T) {
	t.Parallel()
	addr := testutil.StartRedis(t)
	s, err := openState(t, addr, stateOpts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(store.Op{Bucket: store.Jobs, Key: "a", Value: []byte("1")}, store.Op{Bucket: "nope", Key: "b", Value: []byte("2")}); err == nil {
		t.Fatal("Apply to an unknown bucket succeeded")
	}
	if n, _ := s.Len(); n != 0 {
		t.Errorf("a refused Apply wrote %d entries", n)
	}
	if err := s.ForEachIn("nope", func(k, v []byte) error { return nil }); err == nil {
		t.Error("ForEachIn of an unknown bucket succeeded")
	}
}

func TestStateStoreSchema(t *testing.T) {
	t.Parallel()
	addr := testutil.StartRedis(t)
	if _, err := openState(t, addr, store.RedisOptions{Schema: "1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := openState(t, addr, store.RedisOptions{Schema: "2"}); err == nil || !strings.Contains(err.Error(), `schema version "1"`) {
		t.Errorf("Open as schema 2 of schema 1 state: %v", err)
	}
	// An upgrade re-stamps it; then schema 1 is refused.
	if _, err := openState(t, addr, store.RedisOptions{Schema: "2", Upgrades: []string{"1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := openState(t, addr, store.RedisOptions{Schema: "1"}); err == nil {
		t.Error("Open as schema 1 after the upgrade to 2 succeeded")
	}
	if _, err := openState(t, addr, store.RedisOptions{}); err == nil {
		t.Error("Open without a schema succeeded")
	}
}

// Without Redis the store fails, it does not panic or block, and it works
// again when Redis returns with its data (one that returns without it is
// TestLostStateIsImportedFromABackup's).
func TestStateStoreOutage(t *testing.T) {
	t.Parallel()
	srv := testutil.NewRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	s, err := openState(t, srv.Addr, stateOpts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(store.Op{Bucket: store.Jobs, Key: "before", Value: []byte("0")}); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	if err := s.Apply(store.Op{Bucket: store.Jobs, Key: "a", Value: []byte("1")}); err == nil {
		t.Error("Apply without Redis succeeded")
	}
	if _, err := s.Len(); err == nil {
		t.Error("Len without Redis succeeded")
	}
	srv.Start()
	if err := s.Apply(store.Op{Bucket: store.Jobs, Key: "a", Value: []byte("1")}); err != nil {
		t.Errorf("Apply after Redis returned: %v", err)
	}
}

// A store fenced by the agent lease writes (sets and deletes, binary
// values, several buckets at once) while its replica holds the lease, and
// refuses every write once another replica took it over: the deposed
// replica cannot write over its successor's state.
func TestFencedStateStoreRefusesADeposedWriter(t *testing.T) {
	t.Parallel()
	addr := testutil.StartRedis(t)
	ctx := context.Background()
	a, b := testutil.NewSharedRedis(t, addr), testutil.NewSharedRedis(t, addr)
	// A holds the lease for as long as any check of its writes may take on
	// a busy machine; then its last renewal is short (it stops renewing).
	const ttl = time.Minute
	la, ok, err := a.Leases().Acquire(ctx, store.AgentLease, "replica-a", ttl)
	if err != nil || !ok {
		t.Fatalf("Acquire: %v %v", ok, err)
	}
	opts := stateOpts
	opts.Fence = &la
	sa, err := store.OpenRedis(ctx, a.Client, opts)
	if err != nil {
		t.Fatal(err)
	}
	binary := string([]byte{0, 1, 2, 255, '\n', ' '})
	if err := sa.Apply(store.Op{Bucket: store.Jobs, Key: "j1", Value: []byte(binary)}, store.Op{Bucket: "intents", Key: "i1", Value: []byte("x")},
		store.Op{Bucket: store.Jobs, Key: "j2", Value: []byte("y")}); err != nil {
		t.Fatalf("fenced Apply by the holder: %v", err)
	}
	if err := sa.Apply(store.Op{Bucket: store.Jobs, Key: "j2"}); err != nil {
		t.Fatalf("fenced delete by the holder: %v", err)
	}
	if got, _ := readAll(t, sa, store.Jobs); len(got) != 1 || got["j1"] != binary {
		t.Errorf("jobs after the holder's writes: %q", got)
	}
	if got, _ := readAll(t, sa, "intents"); got["i1"] != "x" {
		t.Errorf("intents after the holder's writes: %q", got)
	}

	// A renews a last time for 300ms and stops; B takes the lease over
	// once Redis expired it, and writes.
	if la, err = a.Leases().Renew(ctx, la, 300*time.Millisecond); err != nil {
		t.Fatalf("last Renew: %v", err)
	}
	var lb sharedredis.Lease
	testutil.Eventually(t, 0, "B taking over the lease A stopped renewing", func() bool {
		if lb, ok, err = b.Leases().Acquire(ctx, store.AgentLease, "replica-b", ttl); err != nil {
			t.Fatal(err)
		}
		return ok
	})
	opts.Fence = &lb
	sb, err := store.OpenRedis(ctx, b.Client, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.Apply(store.Op{Bucket: store.Jobs, Key: "j1", Value: []byte("b's")}); err != nil {
		t.Fatalf("the new holder's write: %v", err)
	}
	err = sa.Apply(store.Op{Bucket: store.Jobs, Key: "j1", Value: []byte("a's, stale")})
	if !errors.Is(err, sharedredis.ErrLeaseLost) {
		t.Errorf("the deposed holder's write: %v, want ErrLeaseLost", err)
	}
	if got, _ := readAll(t, sb, store.Jobs); got["j1"] != "b's" {
		t.Errorf("j1 = %q after the deposed holder's write, want the new holder's", got["j1"])
	}
	if _, err := store.OpenRedis(ctx, a.Client, store.RedisOptions{Schema: "1", Fence: &sharedredis.Lease{Name: "primary"}}); err == nil {
		t.Error("a store fenced by another lease than the agent lease opened")
	}
}
