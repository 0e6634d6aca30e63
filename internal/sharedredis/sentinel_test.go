package sharedredis_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sharedredis"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// viaSentinels is a client of the primary that the sentinels at addrs
// name "mintlify", and what it logs.
func viaSentinels(t *testing.T, addrs ...string) (*sharedredis.Client, *testutil.SyncBuffer) {
	t.Helper()
	cfg := config.ClusterDefaults()
	cfg.Sentinel = config.ClusterSentinel{MasterName: "mintlify", Addresses: addrs}
	logs := &testutil.SyncBuffer{}
	c, err := sharedredis.New(cfg, nil, log.NewLogfmtLogger(logs))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, logs
}

// acquire takes a lease through c: a write.
func acquire(c *sharedredis.Client) error {
	_, _, err := c.Leases().Acquire(context.Background(), "gateway", "test-owner", time.Minute)
	return err
}

// One sentinel is not trusted alone (issue 45): a configuration of one is
// warned about at once, and the Redis it names is followed only when it
// says it is the primary. A sentinel naming a writable replica, or a Redis
// that does not answer ROLE, gets every write refused, with the reason,
// and nothing is written there.
func TestOneSentinelNamingNoPrimaryIsNotFollowed(t *testing.T) {
	t.Parallel()
	primary := testutil.NewRedis(t)
	_, port, _ := net.SplitHostPort(primary.Addr)
	for _, c := range []struct {
		name, says string
		rogue      *testutil.RedisServer
	}{
		{"a writable replica", "ROLE answers [slave", testutil.NewRedis(t, "--replicaof", "127.0.0.1", port, "--replica-read-only", "no")},
		{"a Redis without ROLE", "unknown command 'ROLE'", testutil.NewRedis(t, "--rename-command", "ROLE", "")},
	} {
		r, logs := viaSentinels(t, testutil.StartSentinel(t, "mintlify", c.rogue.Addr))
		if !strings.Contains(logs.String(), `level=warn msg="cluster.sentinel.addresses (--cluster.redis-sentinel-address) names 1 Redis Sentinel(s), fewer than a quorum of 3`) {
			t.Errorf("%s: no warning at the start about a single sentinel:\n%s", c.name, logs.String())
		}
		for range 3 {
			if err := acquire(r); err == nil || !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), "not followed") {
				t.Errorf("%s: a write through the sentinel: %v; want it refused, saying %q", c.name, err, c.says)
			}
		}
		if n := testutil.RedisCLI(t, c.rogue.Addr, nil, "DBSIZE"); n != "0" {
			t.Errorf("%s: %s keys written there, want none", c.name, n)
		}
	}
}

// With several sentinels a majority must name the primary: two of three
// are followed; three that each name another Redis are not, and nothing is
// written to any of them; once two agree again, the replica follows them
// there, and says so at warn. A quorum the sentinels report larger than
// the sentinels configured is warned about.
func TestSentinelsMustAgreeOnThePrimary(t *testing.T) {
	t.Parallel()
	a, b, c := testutil.NewRedis(t), testutil.NewRedis(t), testutil.NewRedis(t)
	s := []string{testutil.StartSentinel(t, "mintlify", a.Addr), testutil.StartSentinel(t, "mintlify", a.Addr), testutil.StartSentinel(t, "mintlify", b.Addr)}
	for _, addr := range s {
		testutil.RedisCLI(t, addr, nil, "SENTINEL", "SET", "mintlify", "quorum", "4")
	}
	monitor := func(sentinel string, r *testutil.RedisServer) {
		host, port, _ := net.SplitHostPort(r.Addr)
		testutil.RedisCLI(t, sentinel, nil, "SENTINEL", "REMOVE", "mintlify")
		testutil.RedisCLI(t, sentinel, nil, "SENTINEL", "MONITOR", "mintlify", host, port, "2")
	}
	dbsize := func(r *testutil.RedisServer) string { return testutil.RedisCLI(t, r.Addr, nil, "DBSIZE") }
	r, logs := viaSentinels(t, s...)
	if err := acquire(r); err != nil {
		t.Fatalf("two of three sentinels name a: %v", err)
	}
	if dbsize(a) == "0" || dbsize(b) != "0" {
		t.Errorf("keys in a: %s, in b: %s; want the write in a, the primary two sentinels name", dbsize(a), dbsize(b))
	}
	if out := logs.String(); !strings.Contains(out, "fewer than the quorum of 4 they report") || !strings.Contains(out, `level=info msg="the shared Redis's primary is now`) {
		t.Errorf("no warning about the quorum of 4, or no line about the primary followed:\n%s", out)
	}

	// a goes away, and the sentinels name a, b and c: no majority.
	monitor(s[1], c)
	a.Stop()
	for range 3 {
		if err := acquire(r); err == nil || !strings.Contains(err.Error(), "no 2 of the 3 sentinels name the same primary") {
			t.Errorf("a write while the sentinels disagree: %v; want it refused", err)
		}
	}
	if dbsize(b) != "0" || dbsize(c) != "0" {
		t.Errorf("keys in b: %s, in c: %s; want none while the sentinels disagree", dbsize(b), dbsize(c))
	}

	monitor(s[0], c)
	testutil.Eventually(t, 0, "a write to c, which two sentinels name now", func() bool { return acquire(r) == nil })
	if dbsize(c) == "0" || dbsize(b) != "0" {
		t.Errorf("keys in c: %s, in b: %s; want the write in c", dbsize(c), dbsize(b))
	}
	if !strings.Contains(logs.String(), `level=warn msg="the shared Redis's primary is now the one a majority of the sentinels name" master=mintlify primary=`+c.Addr+" previous="+a.Addr) {
		t.Errorf("the move from a to c is not logged at warn:\n%s", logs.String())
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
