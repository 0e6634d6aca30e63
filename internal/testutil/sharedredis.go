package testutil

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sharedredis"
)

// SharedRedis is one replica's client of the Redis at an address, with its
// own pool and metrics as a separate process has them; it is closed when
// the test ends.
type SharedRedis struct {
	*sharedredis.Client
	reg Registered
}

// NewSharedRedis is a client of the Redis at addr with the default cluster
// settings, as edit changes them. It dials at its first call.
func NewSharedRedis(t testing.TB, addr string, edit ...func(*config.Cluster)) *SharedRedis {
	t.Helper()
	cfg := config.ClusterDefaults()
	cfg.Address = addr
	for _, e := range edit {
		e(&cfg)
	}
	r := &SharedRedis{}
	var err error
	if r.Client, err = sharedredis.New(cfg, &r.reg, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// Calls reads mintlify_exporter_cluster_operations_total{operation=op,result=result}.
func (r *SharedRedis) Calls(op, result string) float64 {
	for _, c := range r.reg.Collectors {
		if v, ok := c.(*prometheus.CounterVec); ok {
			return promtest.ToFloat64(v.WithLabelValues(op, result))
		}
	}
	return -1
}

// WaitUp pings until the client finds Redis reachable (up) or not, as
// mintlify_exporter_cluster_up says, within Patience.
func (r *SharedRedis) WaitUp(t testing.TB, up bool) {
	t.Helper()
	Eventually(t, 0, "the shared Redis reachable or not as wanted", func() bool {
		_ = r.Ping(context.Background())
		return r.Up() == up
	})
}
