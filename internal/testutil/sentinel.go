package testutil

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// SentinelSetup is a Redis primary, one replica of it and three Redis
// Sentinels monitoring it under MasterName, all on loopback ports, with
// nothing persisted: what a Redis that fails over looks like, for tests.
// Every process is killed, by its PID, when the test ends.
type SentinelSetup struct {
	MasterName string
	Primary    *RedisServer
	Replica    *RedisServer
	// Sentinels are the sentinels' host:port.
	Sentinels []string
}

// NewSentinelSetup starts a primary, a replica (--replicaof) and three
// sentinels (quorum 2) that judge the primary down after downAfter and
// fail it over; it returns once the replica is in sync and every
// sentinel knows the replica and the two other sentinels (CKQUORUM), so
// that a failover can start at once. Outside CI a missing redis-server
// or redis-sentinel skips the test; under CI=true it fails.
func NewSentinelSetup(t testing.TB, masterName string, downAfter time.Duration) *SentinelSetup {
	t.Helper()
	bin := sentinelBin(t)
	// No delay before the first sync: a primary waits 5 s by default for
	// more replicas to sync them at once.
	s := &SentinelSetup{MasterName: masterName, Primary: NewRedis(t, "--repl-diskless-sync-delay", "0")}
	_, port, _ := net.SplitHostPort(s.Primary.Addr)
	s.Replica = NewRedis(t, "--replicaof", "127.0.0.1", port)
	for range 3 {
		s.Sentinels = append(s.Sentinels, startSentinel(t, bin, masterName, s.Primary.Addr, downAfter))
	}
	Eventually(t, 0, "the replica in sync, as the primary sees it", func() bool {
		return strings.Contains(mustCLI(s.Primary.Addr, "INFO", "replication"), ",state=online,")
	})
	for _, addr := range s.Sentinels {
		Eventually(t, 0, "sentinel "+addr+" knowing the replica and the other sentinels", func() bool {
			out, err := redisCLI(addr, "SENTINEL", "CKQUORUM", masterName)
			return err == nil && strings.HasPrefix(out, "OK 3 usable") &&
				strings.Contains(mustCLI(addr, "SENTINEL", "REPLICAS", masterName), s.Replica.Addr[strings.LastIndex(s.Replica.Addr, ":")+1:])
		})
	}
	return s
}

// StartSentinel starts one Redis Sentinel on a loopback port that monitors
// the Redis at masterAddr as masterName, with extra lines of
// configuration (such as "requirepass PW"), and returns its address. It
// does not wait for other sentinels or replicas (NewSentinelSetup does).
func StartSentinel(t testing.TB, masterName, masterAddr string, extra ...string) string {
	t.Helper()
	return startSentinel(t, sentinelBin(t), masterName, masterAddr, 30*time.Second, extra...)
}

// sentinelBin is redis-sentinel's path (tool: skipped outside CI when
// missing).
func sentinelBin(t testing.TB) string {
	t.Helper()
	return tool(t, "redis-sentinel", "redis-sentinel")
}

// startSentinel starts one sentinel on a free port and returns its
// address. A sentinel rewrites its configuration file, so each has its own.
func startSentinel(t testing.TB, bin, masterName, masterAddr string, downAfter time.Duration, extra ...string) string {
	t.Helper()
	host, port, _ := net.SplitHostPort(masterAddr)
	for try := 0; ; try++ {
		addr := FreeAddr(t)
		_, sport, _ := net.SplitHostPort(addr)
		dir := t.TempDir()
		conf := filepath.Join(dir, "sentinel.conf")
		failoverTimeout := max(3*downAfter, 3*time.Second)
		body := fmt.Sprintf("port %s\nbind 127.0.0.1\ndaemonize no\nlogfile \"\"\ndir %s\n"+
			"sentinel monitor %[3]s %[4]s %[5]s 2\nsentinel down-after-milliseconds %[3]s %[6]d\n"+
			"sentinel failover-timeout %[3]s %[7]d\nsentinel parallel-syncs %[3]s 1\n",
			sport, dir, masterName, host, port, downAfter.Milliseconds(), failoverTimeout.Milliseconds())
		for _, line := range extra {
			body += line + "\n"
		}
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, conf)
		out := &SyncBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := Start(cmd); err != nil {
			t.Fatalf("redis-sentinel: %v", err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		t.Cleanup(func() {
			_ = KillGroup(cmd)
			<-exited
		})
		// The PID tells this sentinel from another test's process that
		// took the port a moment earlier (this one then exits).
		started := WaitUntil(Slack(10*time.Second), func() bool {
			return isChannelClosed(exited) || answersAs(addr, cmd)
		}) && !isChannelClosed(exited)
		if started {
			return addr
		}
		if try == 4 {
			t.Fatalf("redis-sentinel did not start: %s", out.String())
		}
	}
}

// MasterAddr is the primary's address as the sentinel at addr names it.
func (s *SentinelSetup) MasterAddr(addr string) string {
	out, err := redisCLI(addr, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", s.MasterName)
	if err != nil {
		return ""
	}
	f := strings.Fields(out)
	if len(f) != 2 {
		return ""
	}
	return net.JoinHostPort(f[0], f[1])
}

// mustCLI is redisCLI's output ("" when the Redis at addr does not answer).
func mustCLI(addr string, args ...string) string {
	out, _ := redisCLI(addr, args...)
	return out
}

// redisCLI runs redis-cli and returns its output; an error when it fails.
func redisCLI(addr string, args ...string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	out, err := Output(exec.Command("redis-cli", append([]string{"-h", host, "-p", port}, args...)...))
	return strings.TrimSpace(string(out)), err
}
