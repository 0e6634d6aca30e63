package store_test

import (
	"context"
	"net"
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
	r := testutil.NewSharedRedis(t, primary.Addr, func(c *config.Cluster) { c.WaitReplicas, c.WaitTimeout = 1, time.Second })
	s, err := store.OpenRedis(context.Background(), r.Client, stateOpts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(store.Op{Bucket: store.Jobs, Key: "j1", Value: []byte("acknowledged")}); err != nil {
		t.Fatal(err)
	}
	if got := testutil.RedisCLI(t, replica.Addr, nil, "HGET", "mintlify_exporter:state:{agent}:bucket:jobs", "j1"); got != "acknowledged" {
		t.Errorf("the replica holds %q once the write is acknowledged, want the record", got)
	}
	if n := r.Calls("store_wait", "ok"); n != 1 {
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
	if n := r.Calls("store_wait", "refused"); n != 1 {
		t.Errorf("store_wait refused = %v, want 1", n)
	}
}

// Through Sentinel: the client asks the sentinels for the primary, and
// after a failover writes to the promoted replica, where the records
// written before it are (WAIT made sure of it).
func TestSentinelFailoverIsFollowed(t *testing.T) {
	t.Parallel()
	setup := testutil.NewSentinelSetup(t, "mintlify", 5*time.Second)
	r := testutil.NewSharedRedis(t, "", func(c *config.Cluster) {
		c.Address = ""
		c.Sentinel = config.ClusterSentinel{MasterName: "mintlify", Addresses: setup.Sentinels}
		c.WaitTimeout = 2 * time.Second
	})
	ctx := context.Background()
	s, err := store.OpenRedis(ctx, r.Client, stateOpts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(store.Op{Bucket: store.Jobs, Key: "before", Value: []byte("1")}); err != nil {
		t.Fatal(err)
	}
	if n := r.Calls("store_wait", "ok"); n != 1 {
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
	if _, err := store.CheckRedis(ctx, r.Client, s.Marker()); err != nil {
		t.Errorf("CheckState after the failover: %v", err)
	}
}
