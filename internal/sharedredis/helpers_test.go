package sharedredis_test

import (
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// replica is one exporter's connection to the shared Redis, with its own
// pool and metrics, as a separate process would have.
type replica = testutil.SharedRedis

// newReplica is a replica whose calls give up after 500 ms, for tests of
// a Redis that does not answer; edit changes its settings.
func newReplica(t *testing.T, addr string, edit ...func(*config.Cluster)) *replica {
	t.Helper()
	short := func(c *config.Cluster) { c.Timeout, c.HealthInterval = 500*time.Millisecond, 20*time.Millisecond }
	return testutil.NewSharedRedis(t, addr, append([]func(*config.Cluster){short}, edit...)...)
}
