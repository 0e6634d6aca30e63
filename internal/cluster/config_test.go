package cluster_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"go.yaml.in/yaml/v3"

	"github.com/mintlify-exporter/mintlify_exporter/internal/cluster"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/validate"
)

func parseFlags(t *testing.T, args ...string) *cluster.Flags {
	t.Helper()
	app := kingpin.New("test", "")
	f := cluster.RegisterFlags(app)
	if _, err := app.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	return f
}

func TestFlagsValidate(t *testing.T) {
	t.Parallel()
	if f := parseFlags(t); f.Validate() != nil || f.Config.Enabled() || f.Set() {
		t.Errorf("no flags: %v, enabled %v, set %v", f.Validate(), f.Config.Enabled(), f.Set())
	}
	f := parseFlags(t, "--cluster.redis-address=redis:6379", "--cluster.redis-tls", "--cluster.redis-db=2", "--cluster.advertise-url=http://10.0.0.5:9871")
	if err := f.Validate(); err != nil || !f.Set() || f.Config.KeyPrefix != cluster.DefaultKeyPrefix || f.Config.Timeout != cluster.DefaultTimeout || f.Config.DB != 2 ||
		f.Config.LeaseDuration != cluster.DefaultLeaseDuration || f.Config.AdvertiseURL != "http://10.0.0.5:9871" {
		t.Errorf("valid flags: %v %+v", err, f.Config)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--cluster.redis-password-file=/p"}, "--cluster.redis-address: required"},
		{[]string{"--cluster.redis-address=redis"}, "--cluster.redis-address: want host:port"},
		{[]string{"--cluster.redis-address=:6379"}, "--cluster.redis-address: want host:port"},
		{[]string{"--cluster.redis-address=redis:0"}, "--cluster.redis-address: want a port"},
		{[]string{"--cluster.redis-address=redis:6379", "--cluster.redis-db=-1"}, "--cluster.redis-db: must be between"},
		{[]string{"--cluster.redis-address=redis:6379", "--cluster.redis-key-prefix="}, "--cluster.redis-key-prefix: want 1 to 100"},
		{[]string{"--cluster.redis-address=redis:6379", "--cluster.redis-key-prefix={x}"}, "--cluster.redis-key-prefix: want 1 to 100"},
		{[]string{"--cluster.redis-address=redis:6379", "--cluster.redis-timeout=0s"}, "--cluster.redis-timeout: must be between"},
		{[]string{"--cluster.redis-address=redis:6379", "--cluster.redis-tls-ca-file=/ca"}, "--cluster.redis-tls-ca-file: needs TLS enabled"},
		{[]string{"--cluster.redis-address=redis:6379", "--cluster.redis-tls-insecure-skip-verify"}, "--cluster.redis-tls-insecure-skip-verify: needs TLS enabled"},
		{[]string{"--cluster.redis-address=redis:6379", "--cluster.redis-tls", "--cluster.redis-tls-cert-file=/c"}, "--cluster.redis-tls-key-file: a client certificate needs both"},
		// Renewed every third of it, each renewal bounded by the timeout.
		{[]string{"--cluster.redis-address=redis:6379", "--cluster.lease-duration=5s"}, "--cluster.lease-duration: must be between 6s"},
		{[]string{"--cluster.redis-address=redis:6379", "--cluster.lease-duration=11m"}, "--cluster.lease-duration: must be between"},
		{[]string{"--cluster.redis-address=redis:6379", "--cluster.advertise-url=10.0.0.5:9871"}, "--cluster.advertise-url: want http://host:port"},
		{[]string{"--cluster.redis-address=redis:6379", "--cluster.advertise-url=ftp://h:1"}, "--cluster.advertise-url: want http://host:port"},
		{[]string{"--cluster.redis-address=redis:6379", "--cluster.advertise-url=http://h:1/api"}, "--cluster.advertise-url: want http://host:port"},
	} {
		err := parseFlags(t, c.args...).Validate()
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: %v, want one line starting %q", c.args, err, c.want)
		}
	}
}

// The yaml tags are the file's cluster section; Validate's errors name its
// keys through FileKeys.
func TestFileSection(t *testing.T) {
	t.Parallel()
	var file struct {
		Cluster cluster.Config `yaml:"cluster"`
	}
	file.Cluster = cluster.Defaults()
	src := `
cluster:
  address: redis.example:6380
  password_file: /run/secrets/redis
  db: 3
  timeout: 3s
  tls:
    enabled: true
    ca_file: /etc/ca.pem
    server_name: redis.internal
`
	dec := yaml.NewDecoder(strings.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&file); err != nil {
		t.Fatal(err)
	}
	c := file.Cluster
	if c.Address != "redis.example:6380" || c.DB != 3 || c.Timeout != 3*time.Second || !c.TLS.Enabled || c.TLS.ServerName != "redis.internal" || c.KeyPrefix != cluster.DefaultKeyPrefix {
		t.Errorf("decoded: %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
	c.TLS.Enabled = false
	if err := validate.Rename(c.Validate(), cluster.FileKeys); err == nil || !strings.HasPrefix(err.Error(), "cluster.tls.ca_file: needs TLS enabled") {
		t.Errorf("file key error: %v", err)
	}
	for field := range cluster.FlagNames {
		if cluster.FileKeys[field] == "" {
			t.Errorf("%s has a flag but no file key", field)
		}
	}
}

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
		edit func(*cluster.Config)
		want string
	}{
		{"missing password file", func(c *cluster.Config) { c.PasswordFile = filepath.Join(dir, "missing") }, "password file"},
		{"password file too large", func(c *cluster.Config) { c.PasswordFile = big }, "longer than 4096 bytes"},
		{"CA file without PEM", func(c *cluster.Config) { c.TLS = cluster.TLSConfig{Enabled: true, CAFile: notPEM} }, "holds no PEM certificate"},
		{"missing client certificate", func(c *cluster.Config) {
			c.TLS = cluster.TLSConfig{Enabled: true, CertFile: filepath.Join(dir, "c"), KeyFile: filepath.Join(dir, "k")}
		}, "TLS client certificate"},
		// An endless file is refused after 1 MiB, not read until memory
		// runs out.
		{"endless CA file", func(c *cluster.Config) { c.TLS = cluster.TLSConfig{Enabled: true, CAFile: "/dev/zero"} }, "/dev/zero is a character device, not a regular file"},
		{"endless client key", func(c *cluster.Config) {
			c.TLS = cluster.TLSConfig{Enabled: true, CertFile: notPEM, KeyFile: "/dev/zero"}
		}, "/dev/zero is a character device, not a regular file"},
		{"endless client certificate", func(c *cluster.Config) {
			c.TLS = cluster.TLSConfig{Enabled: true, CertFile: "/dev/zero", KeyFile: notPEM}
		}, "/dev/zero is a character device, not a regular file"},
		{"invalid", func(c *cluster.Config) { c.DB = -1 }, "DB: must be"},
		{"no address", func(c *cluster.Config) { c.Address = "" }, "no Redis address"},
	} {
		cfg := cluster.Defaults()
		cfg.Address = "127.0.0.1:1"
		c.edit(&cfg)
		if _, err := cluster.New(cfg, nil, nil); err == nil || !strings.Contains(err.Error(), c.want) {
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
	r := newReplica(t, srv.Addr, func(c *cluster.Config) { c.PasswordFile = pw })
	ctx := context.Background()
	if err := r.Ping(ctx); err != nil {
		t.Fatalf("with the password: %v", err)
	}
	if err := os.WriteFile(pw, []byte("wrong-two\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fresh := newReplica(t, srv.Addr, func(c *cluster.Config) { c.PasswordFile = pw })
	err := fresh.Ping(ctx)
	if err == nil || strings.Contains(err.Error(), "wrong-two") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("with a wrong password: %v", err)
	}
	fresh.waitUp(t, 0)
}
