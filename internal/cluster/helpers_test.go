package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/internal/cluster"
	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
)

// replica is one exporter's connection to the shared Redis, with its own
// pool and metrics, as a separate process would have.
type replica struct {
	*cluster.Client
	reg *prometheus.Registry
}

func newReplica(t *testing.T, addr string, edit ...func(*config.Cluster)) *replica {
	t.Helper()
	cfg := config.ClusterDefaults()
	cfg.Address = addr
	cfg.Timeout = 500 * time.Millisecond
	cfg.HealthInterval = 20 * time.Millisecond
	for _, e := range edit {
		e(&cfg)
	}
	reg := prometheus.NewRegistry()
	c, err := cluster.New(cfg, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &replica{Client: c, reg: reg}
}

// metric reads one sample of the replica's registry ("" labels for the gauge).
func (r *replica) metric(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := r.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					found = found || (lp.GetName() == labels[i] && lp.GetValue() == labels[i+1])
				}
				if !found {
					continue metrics
				}
			}
			if m.Gauge != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("no %s%v in the registry", name, labels)
	return 0
}

// waitUp pings until mintlify_exporter_cluster_up reads want.
func (r *replica) waitUp(t *testing.T, want float64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		_ = r.Ping(ctx)
		if r.metric(t, "mintlify_exporter_cluster_up") == want {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("mintlify_exporter_cluster_up did not become %v", want)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
