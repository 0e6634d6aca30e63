package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"go.yaml.in/yaml/v3"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
)

func parseFlags(t *testing.T, args ...string) *config.ClusterFlags {
	t.Helper()
	app := kingpin.New("test", "")
	f := config.RegisterClusterFlags(app)
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
	if err := f.Validate(); err != nil || !f.Set() || f.Config.KeyPrefix != config.DefaultClusterKeyPrefix || f.Config.Timeout != config.DefaultClusterTimeout || f.Config.DB != 2 ||
		f.Config.LeaseDuration != config.DefaultClusterLeaseDuration || f.Config.AdvertiseURL != "http://10.0.0.5:9871" {
		t.Errorf("valid flags: %v %+v", err, f.Config)
	}
	f = parseFlags(t, "--cluster.redis-sentinel-master-name=mintlify", "--cluster.redis-sentinel-address=s1:26379", "--cluster.redis-sentinel-address=s2:26379")
	if err := f.Validate(); err != nil || !f.Config.Enabled() || f.Config.Replicas() != 1 || len(f.Config.Sentinel.Addresses) != 2 {
		t.Errorf("Sentinel flags: %v %+v, replicas %d", err, f.Config, f.Config.Replicas())
	}
	if f := parseFlags(t, "--cluster.redis-address=redis:6379"); f.Config.Replicas() != 0 || f.Config.WaitTimeout != config.DefaultClusterWaitTimeout {
		t.Errorf("without Sentinel: %d replicas to wait for, timeout %s; want 0, the default", f.Config.Replicas(), f.Config.WaitTimeout)
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
		{[]string{"--cluster.redis-sentinel-address=s:26379"}, "--cluster.redis-address: required (or a Sentinel master name)"},
		{[]string{"--cluster.redis-sentinel-master-name=m"}, "--cluster.redis-sentinel-address: at least one sentinel"},
		{[]string{"--cluster.redis-sentinel-master-name=m", "--cluster.redis-sentinel-address=s"}, "--cluster.redis-sentinel-address: want host:port"},
		{[]string{"--cluster.redis-sentinel-master-name=m", "--cluster.redis-sentinel-address=s:1", "--cluster.redis-address=redis:6379"}, "--cluster.redis-address: give either an address or a Sentinel master name"},
		{[]string{"--cluster.redis-address=redis:6379", "--cluster.redis-wait-replicas=-2"}, "--cluster.redis-wait-replicas: must be between"},
		{[]string{"--cluster.redis-address=redis:6379", "--cluster.redis-wait-timeout=0s"}, "--cluster.redis-wait-timeout: must be between"},
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
		Cluster config.Cluster `yaml:"cluster"`
	}
	file.Cluster = config.ClusterDefaults()
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
	if c.Address != "redis.example:6380" || c.DB != 3 || c.Timeout != 3*time.Second || !c.TLS.Enabled || c.TLS.ServerName != "redis.internal" || c.KeyPrefix != config.DefaultClusterKeyPrefix {
		t.Errorf("decoded: %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Error(err)
	}
	c.TLS.Enabled = false
	if err := config.Rename(c.Validate(), config.ClusterFileKeys); err == nil || !strings.HasPrefix(err.Error(), "cluster.tls.ca_file: needs TLS enabled") {
		t.Errorf("file key error: %v", err)
	}
	for field := range config.ClusterFlagNames {
		if config.ClusterFileKeys[field] == "" {
			t.Errorf("%s has a flag but no file key", field)
		}
	}
}
