package sharedredis_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

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
