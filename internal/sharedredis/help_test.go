package sharedredis_test

import (
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sharedredis"
	tu "github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// Every HELP is one short sentence; the detail is in docs/. The client
// connects lazily, so no Redis is needed to describe its metrics.
func TestHelpTexts(t *testing.T) {
	cfg := config.ClusterDefaults()
	cfg.Address = "127.0.0.1:1"
	var reg tu.Registered
	c, err := sharedredis.New(cfg, &reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tu.CheckHelp(t, reg.Collectors...)
}
