package cluster_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// A record is acknowledged once a replica holds it (WAIT on the write's
// connection); with the replica away, after the wait timeout, with the
// refusal counted (the write stands: it is in the primary).
func TestRecordsWaitForAReplica(t *testing.T) {
	t.Parallel()
	primary := testutil.NewRedis(t, "--repl-diskless-sync-delay", "0")
	_, port, _ := net.SplitHostPort(primary.Addr)
	replica := testutil.NewRedis(t, "--replicaof", "127.0.0.1", port)
	testutil.Eventually(t, 0, "the replica in sync, as the primary sees it", func() bool {
		return strings.Contains(testutil.RedisCLI(t, primary.Addr, nil, "INFO", "replication"), ",state=online,") &&
			strings.Contains(testutil.RedisCLI(t, replica.Addr, nil, "INFO", "replication"), "master_link_status:up")
	})
	r := newReplica(t, primary.Addr, func(c *config.Cluster) { c.WaitReplicas, c.WaitTimeout = 1, time.Second })
	s, err := r.OpenStateStore(context.Background(), stateOpts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(store.Op{Bucket: store.Jobs, Key: "j1", Value: []byte("acknowledged")}); err != nil {
		t.Fatal(err)
	}
	if got := testutil.RedisCLI(t, replica.Addr, nil, "HGET", "mintlify_exporter:state:{agent}:bucket:jobs", "j1"); got != "acknowledged" {
		t.Errorf("the replica holds %q once the write is acknowledged, want the record", got)
	}
	if n := r.metric(t, "mintlify_exporter_cluster_operations_total", "operation", "store_wait", "result", "ok"); n != 1 {
		t.Errorf("store_wait ok = %v, want 1", n)
	}

	replica.Stop()
	start := time.Now()
	if err := s.Apply(store.Op{Bucket: store.Jobs, Key: "j2", Value: []byte("x")}); err != nil {
		t.Errorf("Apply without a replica: %v, want it acknowledged after the wait, with a warning", err)
	}
	if d := time.Since(start); d < time.Second {
		t.Errorf("Apply without a replica returned after %s, before the wait timeout of 1s", d)
	}
	if n := r.metric(t, "mintlify_exporter_cluster_operations_total", "operation", "store_wait", "result", "refused"); n != 1 {
		t.Errorf("store_wait refused = %v, want 1", n)
	}
}

// Through Sentinel: the client asks the sentinels for the primary, and
// after a failover writes to the promoted replica, where the records
// written before it are (WAIT made sure of it).
func TestSentinelFailoverIsFollowed(t *testing.T) {
	t.Parallel()
	setup := testutil.NewSentinelSetup(t, "mintlify", 5*time.Second)
	r := newReplica(t, "", func(c *config.Cluster) {
		c.Address = ""
		c.Sentinel = config.ClusterSentinel{MasterName: "mintlify", Addresses: setup.Sentinels}
		c.WaitTimeout = 2 * time.Second
	})
	ctx := context.Background()
	s, err := r.OpenStateStore(ctx, stateOpts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(store.Op{Bucket: store.Jobs, Key: "before", Value: []byte("1")}); err != nil {
		t.Fatal(err)
	}
	if n := r.metric(t, "mintlify_exporter_cluster_operations_total", "operation", "store_wait", "result", "ok"); n != 1 {
		t.Errorf("store_wait ok = %v, want 1 (one replica by default with Sentinel)", n)
	}
	// A failover the sentinels start at once (no down-after wait).
	testutil.RedisCLI(t, setup.Sentinels[0], nil, "SENTINEL", "FAILOVER", "mintlify")
	testutil.Eventually(t, 0, "the sentinels naming the replica as primary", func() bool {
		return setup.MasterAddr(setup.Sentinels[1]) == setup.Replica.Addr
	})
	testutil.Eventually(t, 0, "a write through the promoted replica", func() bool {
		return s.Apply(store.Op{Bucket: store.Jobs, Key: "after", Value: []byte("2")}) == nil
	})
	if !strings.Contains(testutil.RedisCLI(t, setup.Replica.Addr, nil, "INFO", "replication"), "role:master") {
		t.Fatal("the former replica is not the primary")
	}
	for _, k := range []string{"before", "after"} {
		if got := testutil.RedisCLI(t, setup.Replica.Addr, nil, "HEXISTS", "mintlify_exporter:state:{agent}:bucket:jobs", k); got != "1" {
			t.Errorf("record %s missing on the promoted replica", k)
		}
	}
	// The leases and the marker came along: the state is not taken as lost.
	if _, err := r.CheckState(ctx, s.Marker()); err != nil {
		t.Errorf("CheckState after the failover: %v", err)
	}
}

// The sentinels' password comes from its file; a wrong one is refused
// without showing in the error.
func TestSentinelPasswordFile(t *testing.T) {
	t.Parallel()
	primary := testutil.NewRedis(t)
	sentinel := testutil.StartSentinel(t, "mintlify", primary.Addr, "requirepass sentinel-s3cret")
	dir := t.TempDir()
	for _, c := range []struct {
		pw string
		ok bool
	}{{"sentinel-s3cret", true}, {"wrong-pw-9", false}} {
		file := filepath.Join(dir, c.pw)
		if err := os.WriteFile(file, []byte(c.pw+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		r := newReplica(t, "", func(cfg *config.Cluster) {
			cfg.Sentinel = config.ClusterSentinel{MasterName: "mintlify", Addresses: []string{sentinel}, PasswordFile: file}
		})
		err := r.Ping(context.Background())
		switch {
		case c.ok && err != nil:
			t.Errorf("with the sentinels' password: %v", err)
		case !c.ok && (err == nil || strings.Contains(err.Error(), c.pw) || strings.Contains(err.Error(), "sentinel-s3cret")):
			t.Errorf("with a wrong sentinel password: %v; want an error without the password", err)
		}
	}
}
