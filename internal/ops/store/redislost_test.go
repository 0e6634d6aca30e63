package store_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

func flushAll(t *testing.T, addr string) {
	t.Helper()
	testutil.RedisCLI(t, addr, nil, "FLUSHALL")
}

// FLUSHALL under a running state: the holder's writes are refused (the
// marker it opened with is gone), a replica that knew the marker marks the
// state lost, and from then on every replica refuses it, even one that
// never saw the marker, until an operator accepts it; the replicas that
// knew the lost marker take the accepted state.
func TestLostStateIsNoticedAndRefusedUntilAccepted(t *testing.T) {
	t.Parallel()
	addr := testutil.StartRedis(t)
	ctx := context.Background()
	a, b, fresh := testutil.NewSharedRedis(t, addr), testutil.NewSharedRedis(t, addr), testutil.NewSharedRedis(t, addr)
	if m, err := store.CheckRedis(ctx, b.Client, ""); err != nil || m != "" {
		t.Fatalf("CheckState of a new Redis = %q, %v; want no marker", m, err)
	}
	sa, err := store.OpenRedis(ctx, a.Client, stateOpts)
	if err != nil {
		t.Fatal(err)
	}
	marker := sa.Marker()
	if err := sa.Apply(store.Op{Bucket: store.Jobs, Key: "j1", Value: []byte("acknowledged")}); err != nil {
		t.Fatal(err)
	}
	if m, err := store.CheckRedis(ctx, b.Client, ""); err != nil || m != marker {
		t.Fatalf("b's CheckState = %q, %v; want the marker %q", m, err, marker)
	}

	flushAll(t, addr)
	err = sa.Apply(store.Op{Bucket: store.Jobs, Key: "j2", Value: []byte("after the loss")})
	if !errors.Is(err, store.ErrStateLost) || !strings.Contains(err.Error(), "state accept-empty") {
		t.Fatalf("a write after FLUSHALL: %v, want a lost state naming what to do", err)
	}
	if _, err := store.CheckRedis(ctx, b.Client, marker); !errors.Is(err, store.ErrStateLost) {
		t.Fatalf("CheckState by a replica that knew the marker: %v, want ErrStateLost", err)
	}
	// Marked lost in Redis: a replica that never saw the marker refuses it
	// too, and cannot start a fresh state over it.
	if _, err := store.CheckRedis(ctx, fresh.Client, ""); !errors.Is(err, store.ErrStateLost) {
		t.Errorf("CheckState by a new replica: %v, want ErrStateLost", err)
	}
	if _, err := store.OpenRedis(ctx, fresh.Client, stateOpts); !errors.Is(err, store.ErrStateLost) {
		t.Errorf("OpenStateStore by a new replica: %v, want ErrStateLost", err)
	}

	if ok, err := store.AcceptLostState(ctx, fresh.Client); err != nil || !ok {
		t.Fatalf("AcceptLostState = %v, %v", ok, err)
	}
	if ok, err := store.AcceptLostState(ctx, fresh.Client); err != nil || ok {
		t.Errorf("AcceptLostState of a state not lost = %v, %v; want false", ok, err)
	}
	next, err := store.CheckRedis(ctx, b.Client, marker)
	if err != nil || next == "" || next == marker {
		t.Fatalf("CheckState after the accept = %q, %v; want a new marker", next, err)
	}
	sb, err := store.OpenRedis(ctx, b.Client, store.RedisOptions{Schema: stateOpts.Schema, Buckets: stateOpts.Buckets, Known: marker})
	if err != nil {
		t.Fatalf("OpenStateStore after the accept by a replica that knew the lost marker: %v", err)
	}
	if n, _ := sb.Len(); n != 0 || sb.Marker() != next {
		t.Errorf("accepted state: %d jobs, marker %q; want empty with %q", n, sb.Marker(), next)
	}
	if err := sb.Apply(store.Op{Bucket: store.Jobs, Key: "j3", Value: []byte("x")}); err != nil {
		t.Errorf("a write on the accepted state: %v", err)
	}
	if err := sa.Apply(store.Op{Bucket: store.Jobs, Key: "j4", Value: []byte("x")}); !errors.Is(err, store.ErrStateLost) {
		t.Errorf("a write through the store opened on the lost state: %v, want ErrStateLost", err)
	}
}

// A Redis without persistence restarts: the same as FLUSHALL. A backup
// made with ExportState is imported back, and the replica that knew the
// lost marker takes it with its jobs.
func TestLostStateIsImportedFromABackup(t *testing.T) {
	t.Parallel()
	srv := testutil.NewRedis(t)
	ctx := context.Background()
	a := testutil.NewSharedRedis(t, srv.Addr, func(c *config.Cluster) { c.Timeout = 2 * time.Second })
	opts := store.Options{Schema: stateOpts.Schema, Buckets: stateOpts.Buckets, LockTimeout: time.Second}
	sa, err := store.OpenRedis(ctx, a.Client, stateOpts)
	if err != nil {
		t.Fatal(err)
	}
	marker := sa.Marker()
	if err := sa.Apply(store.Op{Bucket: store.Jobs, Key: "j1", Value: []byte("job one")}, store.Op{Bucket: "intents", Key: "i1", Value: []byte{0, 1}}); err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(t.TempDir(), "backup.db")
	if counts, err := store.ExportState(ctx, a.Client, backup, opts); err != nil || counts[store.Jobs] != 1 || counts["intents"] != 1 {
		t.Fatalf("ExportState = %v, %v", counts, err)
	}
	if _, err := store.ExportState(ctx, a.Client, backup, opts); err == nil {
		t.Error("ExportState over an existing file succeeded")
	}
	if _, err := store.ImportState(ctx, a.Client, backup, opts); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("ImportState into a state in use: %v, want a refusal", err)
	}

	srv.Stop()
	srv.Start()
	testutil.Eventually(t, 0, "CheckState after Redis restarted empty answers ErrStateLost", func() bool {
		_, err = store.CheckRedis(ctx, a.Client, marker)
		return errors.Is(err, store.ErrStateLost)
	}, func() string { return fmt.Sprint(err) })
	counts, err := store.ImportState(ctx, a.Client, backup, opts)
	if err != nil || counts[store.Jobs] != 1 || counts["intents"] != 1 {
		t.Fatalf("ImportState = %v, %v", counts, err)
	}
	s, err := store.OpenRedis(ctx, a.Client, store.RedisOptions{Schema: stateOpts.Schema, Buckets: stateOpts.Buckets, Known: marker})
	if err != nil {
		t.Fatalf("OpenStateStore after the import: %v", err)
	}
	if got, _ := readAll(t, s, store.Jobs); got["j1"] != "job one" {
		t.Errorf("jobs after the import: %q", got)
	}
	if got, _ := readAll(t, s, "intents"); got["i1"] != "\x00\x01" {
		t.Errorf("intents after the import: %q", got)
	}
}

// A replica that stamped its own marker on the emptied Redis before
// another replica noticed the loss (it never learned the old marker: its
// first check timed out on a loaded machine) takes the accepted state
// like the others: it remembers the marker the state was lost from, the
// one the accept supersedes. It once marked the accepted state lost again,
// and its gateway never ran (leader's TestLostStateStopsTheGatewayUntilAccepted
// under -race and load).
func TestLostStateAcceptedByAReplicaThatStampedItsOwnMarker(t *testing.T) {
	t.Parallel()
	addr := testutil.StartRedis(t)
	ctx := context.Background()
	a, b, c := testutil.NewSharedRedis(t, addr), testutil.NewSharedRedis(t, addr), testutil.NewSharedRedis(t, addr)
	sa, err := store.OpenRedis(ctx, a.Client, stateOpts)
	if err != nil {
		t.Fatal(err)
	}
	flushAll(t, addr)
	sc, err := store.OpenRedis(ctx, c.Client, stateOpts) // knows no marker: stamps a new one
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.CheckRedis(ctx, b.Client, sa.Marker()); !errors.Is(err, store.ErrStateLost) {
		t.Fatalf("CheckState by a replica that knew the first marker: %v, want ErrStateLost", err)
	}
	known, err := store.CheckRedis(ctx, c.Client, sc.Marker())
	if !errors.Is(err, store.ErrStateLost) || known != sa.Marker() {
		t.Fatalf("CheckState by the replica that stamped its own marker = %q, %v; want ErrStateLost and the lost marker %q", known, err, sa.Marker())
	}
	if ok, err := store.AcceptLostState(ctx, a.Client); err != nil || !ok {
		t.Fatalf("AcceptLostState = %v, %v", ok, err)
	}
	for name, k := range map[string]string{"the stamping replica": known, "a replica that knew the first marker": sa.Marker()} {
		if m, err := store.CheckRedis(ctx, c.Client, k); err != nil || m == "" || m == k {
			t.Errorf("CheckState by %s after the accept = %q, %v; want the accepted state's new marker", name, m, err)
		}
	}
}
