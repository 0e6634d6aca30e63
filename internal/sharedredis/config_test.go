package sharedredis_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sharedredis"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

func TestNewReadsSecretsAtOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, 5000), 0o600); err != nil {
		t.Fatal(err)
	}
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		edit func(*config.Cluster)
		want string
	}{
		{"missing password file", func(c *config.Cluster) { c.PasswordFile = filepath.Join(dir, "missing") }, "password file"},
		{"password file too large", func(c *config.Cluster) { c.PasswordFile = big }, "longer than 4096 bytes"},
		{"CA file without PEM", func(c *config.Cluster) { c.TLS = config.ClusterTLS{Enabled: true, CAFile: notPEM} }, "holds no PEM certificate"},
		{"missing client certificate", func(c *config.Cluster) {
			c.TLS = config.ClusterTLS{Enabled: true, CertFile: filepath.Join(dir, "c"), KeyFile: filepath.Join(dir, "k")}
		}, "TLS client certificate"},
		// An endless file is refused after 1 MiB, not read until memory
		// runs out.
		{"endless CA file", func(c *config.Cluster) { c.TLS = config.ClusterTLS{Enabled: true, CAFile: "/dev/zero"} }, "/dev/zero is a character device, not a regular file"},
		{"endless client key", func(c *config.Cluster) {
			c.TLS = config.ClusterTLS{Enabled: true, CertFile: notPEM, KeyFile: "/dev/zero"}
		}, "/dev/zero is a character device, not a regular file"},
		{"endless client certificate", func(c *config.Cluster) {
			c.TLS = config.ClusterTLS{Enabled: true, CertFile: "/dev/zero", KeyFile: notPEM}
		}, "/dev/zero is a character device, not a regular file"},
		{"invalid", func(c *config.Cluster) { c.DB = -1 }, "DB: must be"},
		{"no address", func(c *config.Cluster) { c.Address = "" }, "no Redis address"},
	} {
		cfg := config.ClusterDefaults()
		cfg.Address = "127.0.0.1:1"
		c.edit(&cfg)
		if _, err := sharedredis.New(cfg, nil, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// A password-protected Redis: the password comes from the file, read again
// for each new connection (a rotation needs no restart), and never shows
// in an error.
func TestPasswordFile(t *testing.T) {
	t.Parallel()
	srv := testutil.NewRedis(t, "--requirepass", "s3cret-one")
	pw := filepath.Join(t.TempDir(), "redis-password")
	if err := os.WriteFile(pw, []byte("s3cret-one\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := newReplica(t, srv.Addr, func(c *config.Cluster) { c.PasswordFile = pw })
	ctx := context.Background()
	if err := r.Ping(ctx); err != nil {
		t.Fatalf("with the password: %v", err)
	}
	if err := os.WriteFile(pw, []byte("wrong-two\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fresh := newReplica(t, srv.Addr, func(c *config.Cluster) { c.PasswordFile = pw })
	err := fresh.Ping(ctx)
	if err == nil || strings.Contains(err.Error(), "wrong-two") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("with a wrong password: %v", err)
	}
	fresh.WaitUp(t, false)
}
