package leader_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/leader"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sharedredis"
	tu "github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// Every HELP is one short sentence; the detail is in docs/.
func TestHelpTexts(t *testing.T) {
	cfg := config.ClusterDefaults()
	cfg.Address = "127.0.0.1:1" // never dialled: nothing here runs
	c, err := sharedredis.New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var reg tu.Registered
	start := func(context.Context, engine.Store, prometheus.Registerer) (*leader.Term, error) {
		return nil, nil
	}
	if _, err := leader.New(leader.Options{Cluster: c, Owner: "a", Advertise: "http://127.0.0.1:1", LeaseDuration: cfg.LeaseDuration,
		Start: start, ForwardSecret: make([]byte, leader.MinSecretBytes), Registerer: &reg}); err != nil {
		t.Fatal(err)
	}
	tu.CheckHelp(t, reg.Collectors...)
}
