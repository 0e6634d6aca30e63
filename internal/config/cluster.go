package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kingpin/v2"
)

// The cluster section: the settings of the Redis that replicas share, as
// plain values. internal/sharedredis connects with the validated Cluster; the
// rules live here so that the flag route and the file check them once and
// the configuration imports nothing that runs.

// Defaults of the settings a user may leave out.
const (
	DefaultClusterKeyPrefix = "mintlify_exporter:"
	// DefaultClusterTimeout bounds every call to Redis (and each dial): long
	// enough for a managed Redis across a zone, short enough that a
	// black-holed Redis holds no refresh or scrape for long.
	DefaultClusterTimeout = 2 * time.Second
	// DefaultClusterLeaseDuration is how long a lease lasts unless renewed; it is
	// renewed every third of it, so one failed renewal loses nothing.
	DefaultClusterLeaseDuration = 30 * time.Second
	// DefaultClusterHealthInterval is how often the health loop pings Redis.
	DefaultClusterHealthInterval = 5 * time.Second
	// DefaultClusterWaitTimeout bounds the WAIT for a replica's copy of an
	// agent job record before its acknowledgement.
	DefaultClusterWaitTimeout = time.Second
	maxClusterTimeout         = time.Minute
	maxClusterKeyPrefix       = 100
)

// Cluster is the connection to the Redis (or Valkey) that replicas share.
// An empty Address and no Sentinel mean no cluster: the process keeps its
// state in local files, as a single exporter does.
type Cluster struct {
	// Address is host:port of a Redis without Sentinel.
	Address string `yaml:"address"`
	// Sentinel names the Redis Sentinels that say which Redis is the
	// primary now, instead of Address: the exporters follow a failover.
	Sentinel ClusterSentinel `yaml:"sentinel"`
	// WaitReplicas is how many Redis replicas must hold an agent job or
	// deployment record before it is acknowledged (WAIT): -1, the
	// default, means 1 with Sentinel and none without.
	WaitReplicas int `yaml:"wait_replicas"`
	// WaitTimeout bounds that wait.
	WaitTimeout time.Duration `yaml:"wait_timeout"`
	// Username is the ACL user ("" = the default user).
	Username string `yaml:"username"`
	// PasswordFile holds the password (trailing newline ignored); it is
	// read again for every new connection, so a rotated password needs no
	// restart.
	PasswordFile string `yaml:"password_file"`
	// DB is the logical database number.
	DB int `yaml:"db"`
	// KeyPrefix starts every key, so that several exporters (or other
	// applications) can share one Redis.
	KeyPrefix string     `yaml:"key_prefix"`
	TLS       ClusterTLS `yaml:"tls"`
	// Timeout bounds each dial and each call.
	Timeout time.Duration `yaml:"timeout"`
	// LeaseDuration is how long a replica's claim on a walk, or on being
	// the primary, lasts without a renewal: how soon the others take over
	// from a replica that died.
	LeaseDuration time.Duration `yaml:"lease_duration"`
	// AdvertiseURL is the base URL (http://host:port) at which the other
	// replicas reach this one's /api/, to forward agent job requests to
	// the replica that runs the gateway ("" = this host's first
	// non-loopback address and the listen port, over http).
	AdvertiseURL string `yaml:"advertise_url"`
	// ForwardSecretFile holds the secret the replicas share outside Redis
	// (the same on every replica, at least 16 bytes): a replica forwards
	// agent job requests only to a holder that proves it knows it, and
	// signs them with it instead of passing the client's credentials on.
	// Required for the agent job gateway on replicas.
	ForwardSecretFile string `yaml:"forward_secret_file"`
	// HealthInterval is how often Run pings Redis (tests shorten it).
	HealthInterval time.Duration `yaml:"-"`
}

// ClusterTLS is how the connection to Redis is encrypted.
type ClusterTLS struct {
	Enabled bool `yaml:"enabled"`
	// CAFile verifies the server (system roots when empty).
	CAFile string `yaml:"ca_file"`
	// CertFile and KeyFile are a client certificate, both or neither.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// ServerName is the name the server's certificate must hold (the
	// address's host when empty).
	ServerName         string `yaml:"server_name"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
}

// ClusterSentinel is the Redis Sentinel setup of a replicated Redis.
type ClusterSentinel struct {
	// MasterName is the name the sentinels monitor the primary under.
	MasterName string `yaml:"master_name"`
	// Addresses are host:port of the sentinels (any one that answers
	// will do; give them all).
	Addresses []string `yaml:"addresses"`
	// Username is the sentinels' ACL user ("" = the default user).
	Username string `yaml:"username"`
	// PasswordFile holds the sentinels' password (requirepass of
	// sentinel.conf), read when the client is made.
	PasswordFile string `yaml:"password_file"`
}

// Enabled says whether Sentinel is configured.
func (s *ClusterSentinel) Enabled() bool { return s.MasterName != "" }

// MinSentinels is the fewest sentinels a configuration names without a
// warning: the exporter follows a primary only when a majority of them
// name it, and one or two sentinels cannot outvote one that is wrong.
const MinSentinels = 3

// Notice is the one-line warning of a configuration that names fewer
// sentinels than a quorum ("" for none).
func (s *ClusterSentinel) Notice() string {
	if !s.Enabled() || len(s.Addresses) >= MinSentinels {
		return ""
	}
	return fmt.Sprintf("cluster.sentinel.addresses (--cluster.redis-sentinel-address) names %d Redis Sentinel(s), fewer than a quorum of %d: "+
		"a sentinel that names a wrong primary is not outvoted; give every sentinel", len(s.Addresses), MinSentinels)
}

// ClusterDefaults is the cluster section flags and files start from.
func ClusterDefaults() Cluster {
	return Cluster{KeyPrefix: DefaultClusterKeyPrefix, Timeout: DefaultClusterTimeout, HealthInterval: DefaultClusterHealthInterval,
		LeaseDuration: DefaultClusterLeaseDuration, WaitReplicas: -1, WaitTimeout: DefaultClusterWaitTimeout}
}

// Equal says whether c and o are the same settings (a reload may not
// change them).
func (c Cluster) Equal(o Cluster) bool {
	return reflect.DeepEqual(c, o)
}

// Enabled says whether a Redis is configured.
func (c *Cluster) Enabled() bool { return c.Address != "" || c.Sentinel.Enabled() }

// Replicas is how many Redis replicas must acknowledge a record (WAIT):
// WaitReplicas, or for -1 one with Sentinel and none without.
func (c *Cluster) Replicas() int {
	if c.WaitReplicas >= 0 {
		return c.WaitReplicas
	}
	if c.Sentinel.Enabled() {
		return 1
	}
	return 0
}

// Where names the Redis for logs and errors: its address, or the master
// name and the sentinels. Never a secret.
func (c *Cluster) Where() string {
	if c.Sentinel.Enabled() {
		return "sentinel master " + c.Sentinel.MasterName + " (" + strings.Join(c.Sentinel.Addresses, ",") + ")"
	}
	return c.Address
}

// ClusterFlagNames names the flag of each Cluster field.
var ClusterFlagNames = map[string]string{
	"Address":                "--cluster.redis-address",
	"Sentinel.MasterName":    "--cluster.redis-sentinel-master-name",
	"Sentinel.Addresses":     "--cluster.redis-sentinel-address",
	"Sentinel.Username":      "--cluster.redis-sentinel-username",
	"Sentinel.PasswordFile":  "--cluster.redis-sentinel-password-file",
	"WaitReplicas":           "--cluster.redis-wait-replicas",
	"WaitTimeout":            "--cluster.redis-wait-timeout",
	"Username":               "--cluster.redis-username",
	"PasswordFile":           "--cluster.redis-password-file",
	"DB":                     "--cluster.redis-db",
	"KeyPrefix":              "--cluster.redis-key-prefix",
	"Timeout":                "--cluster.redis-timeout",
	"LeaseDuration":          "--cluster.lease-duration",
	"AdvertiseURL":           "--cluster.advertise-url",
	"ForwardSecretFile":      "--cluster.forward-secret-file",
	"TLS.Enabled":            "--cluster.redis-tls",
	"TLS.CAFile":             "--cluster.redis-tls-ca-file",
	"TLS.CertFile":           "--cluster.redis-tls-cert-file",
	"TLS.KeyFile":            "--cluster.redis-tls-key-file",
	"TLS.ServerName":         "--cluster.redis-tls-server-name",
	"TLS.InsecureSkipVerify": "--cluster.redis-tls-insecure-skip-verify",
}

// ClusterFileKeys names the configuration file key of each Cluster field,
// from the fields' yaml tags.
var ClusterFileKeys = func() map[string]string {
	keys := map[string]string{}
	for field := range ClusterFlagNames {
		t, key := reflect.TypeFor[Cluster](), "cluster"
		for name := range strings.SplitSeq(field, ".") {
			f, _ := t.FieldByName(name)
			t, key = f.Type, key+"."+f.Tag.Get("yaml")
		}
		keys[field] = key
	}
	return keys
}()

// Validate reports the first invalid field as a *FieldError
// (Rename with ClusterFlagNames or ClusterFileKeys names it for
// the user). It reads no file: sharedredis.New does, so that a check of the
// configuration works where the secrets are not.
func (c *Cluster) Validate() error {
	s := c.Sentinel
	if !c.Enabled() {
		if c.PasswordFile != "" || c.Username != "" || c.ForwardSecretFile != "" || c.TLS != (ClusterTLS{}) ||
			len(s.Addresses) > 0 || s.Username != "" || s.PasswordFile != "" {
			return Field("Address", errors.New("required (or a Sentinel master name) when other cluster settings are given"))
		}
		return nil
	}
	t := c.TLS
	return First(
		Field("Address", checkAddressOrSentinel(c.Address, s.Enabled())),
		Field("Sentinel.Addresses", checkSentinels(s)),
		Field("WaitReplicas", InRange(c.WaitReplicas, -1, 100)),
		Field("WaitTimeout", InRange(c.WaitTimeout, time.Millisecond, maxClusterTimeout)),
		Field("DB", InRange(c.DB, 0, 1<<20)),
		Field("KeyPrefix", checkKeyPrefix(c.KeyPrefix)),
		Field("Timeout", InRange(c.Timeout, time.Millisecond, maxClusterTimeout)),
		// Renewed every third of it, each renewal bounded by Timeout.
		Field("LeaseDuration", InRange(c.LeaseDuration, max(time.Second, 3*c.Timeout), 10*time.Minute)),
		Field("AdvertiseURL", checkAdvertiseURL(c.AdvertiseURL)),
		Field("TLS.CAFile", needsTLS(t.Enabled, t.CAFile != "")),
		Field("TLS.CertFile", needsTLS(t.Enabled, t.CertFile != "")),
		Field("TLS.KeyFile", needsTLS(t.Enabled, t.KeyFile != "")),
		Field("TLS.ServerName", needsTLS(t.Enabled, t.ServerName != "")),
		Field("TLS.InsecureSkipVerify", needsTLS(t.Enabled, t.InsecureSkipVerify)),
		Field("TLS.KeyFile", bothOrNeither(t.CertFile, t.KeyFile)),
	)
}

// checkAddressOrSentinel wants one of the two: with Sentinel, the
// sentinels say where the primary is, and an address beside them would be
// a second, contradicting answer.
func checkAddressOrSentinel(addr string, sentinel bool) error {
	if sentinel {
		if addr != "" {
			return errors.New("give either an address or a Sentinel master name, not both: with Sentinel the sentinels name the primary")
		}
		return nil
	}
	return checkAddress(addr)
}

func checkSentinels(s ClusterSentinel) error {
	if !s.Enabled() {
		if len(s.Addresses) > 0 || s.Username != "" || s.PasswordFile != "" {
			return errors.New("needs the Sentinel master name")
		}
		return nil
	}
	if strings.ContainsAny(s.MasterName, " \t\r\n") {
		return fmt.Errorf("master name %q: want a name without spaces", s.MasterName)
	}
	if len(s.Addresses) == 0 {
		return errors.New("at least one sentinel (host:port) is required with a master name; give every sentinel")
	}
	for _, a := range s.Addresses {
		if err := checkAddress(a); err != nil {
			return err
		}
	}
	return nil
}

func checkAddress(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return fmt.Errorf("want host:port, got %q", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("want a port between 1 and 65535, got %q", port)
	}
	return nil
}

func checkAdvertiseURL(s string) error {
	if s == "" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.User != nil || u.RawQuery != "" {
		return fmt.Errorf("want http://host:port or https://host:port, got %q", s)
	}
	return nil
}

func checkKeyPrefix(p string) error {
	if p == "" || len(p) > maxClusterKeyPrefix || strings.ContainsAny(p, " \t\r\n{}") {
		return fmt.Errorf("want 1 to %d characters without spaces or braces, got %q", maxClusterKeyPrefix, p)
	}
	return nil
}

// needsTLS refuses a TLS setting given without TLS enabled: it would be
// ignored, and a user who gave a CA file expects an encrypted connection.
func needsTLS(enabled, given bool) error {
	if given && !enabled {
		return errors.New("needs TLS enabled")
	}
	return nil
}

func bothOrNeither(cert, key string) error {
	if (cert == "") != (key == "") {
		return errors.New("a client certificate needs both its cert file and its key file")
	}
	return nil
}

// ClusterFlags are the cluster settings from the command line.
type ClusterFlags struct {
	Config Cluster
	// set records whether the user gave any cluster flag, to refuse them
	// beside a configuration file's cluster section.
	set bool
}

// RegisterClusterFlags adds the --cluster.* flags to app, defaulting to
// ClusterDefaults().
func RegisterClusterFlags(app Flagger) *ClusterFlags {
	f := &ClusterFlags{Config: ClusterDefaults()}
	c := &f.Config
	mark := func(cl *kingpin.FlagClause) *kingpin.FlagClause {
		return cl.Action(func(*kingpin.ParseContext) error { f.set = true; return nil })
	}
	mark(app.Flag("cluster.redis-address", "host:port of the Redis (or Valkey) that replicas of the exporter share: one analytics budget per organization, one refresh per interval, the same data on every replica. Empty: a single process with local files.")).
		PlaceHolder("HOST:PORT").StringVar(&c.Address)
	mark(app.Flag("cluster.redis-sentinel-master-name", "Name under which Redis Sentinel monitors the shared Redis: the exporters ask the sentinels for its primary and follow a failover (instead of --cluster.redis-address).")).
		PlaceHolder("NAME").StringVar(&c.Sentinel.MasterName)
	mark(app.Flag("cluster.redis-sentinel-address", "host:port of a Redis Sentinel (repeatable: give every sentinel).")).PlaceHolder("HOST:PORT").StringsVar(&c.Sentinel.Addresses)
	mark(app.Flag("cluster.redis-sentinel-username", "ACL user of the sentinels (empty: the default user).")).StringVar(&c.Sentinel.Username)
	mark(app.Flag("cluster.redis-sentinel-password-file", "File holding the sentinels' password.")).PlaceHolder("PATH").StringVar(&c.Sentinel.PasswordFile)
	mark(app.Flag("cluster.redis-wait-replicas", "Redis replicas that must hold an agent job or deployment record before it is acknowledged (WAIT), so that it survives a failover; -1: 1 with Sentinel, none without.")).
		Default("-1").IntVar(&c.WaitReplicas)
	DurationVar(app, "cluster.redis-wait-timeout", "How long a record's acknowledgement waits for the Redis replicas (then it is acknowledged with a warning).", &c.WaitTimeout)
	mark(app.Flag("cluster.redis-username", "Redis ACL user (empty: the default user).")).StringVar(&c.Username)
	mark(app.Flag("cluster.redis-password-file", "File holding the Redis password, read again for every new connection.")).PlaceHolder("PATH").StringVar(&c.PasswordFile)
	mark(app.Flag("cluster.redis-db", "Redis logical database number.")).Default("0").IntVar(&c.DB)
	mark(app.Flag("cluster.redis-key-prefix", "Prefix of every Redis key the exporter writes.")).Default(c.KeyPrefix).StringVar(&c.KeyPrefix)
	DurationVar(app, "cluster.redis-timeout", "Timeout of each dial and each call to Redis.", &c.Timeout)
	mark(app.Flag("cluster.advertise-url", "Base URL (http://host:port) at which the other replicas reach this one, to forward agent job requests to the replica that runs the gateway (default: this host's first non-loopback address and the listen port).")).
		PlaceHolder("URL").StringVar(&c.AdvertiseURL)
	DurationVar(app, "cluster.lease-duration", "How long a replica's claim on a walk, or on being the primary, lasts without a renewal (renewed every third of it): how soon the other replicas take over from one that died.", &c.LeaseDuration)
	mark(app.Flag("cluster.forward-secret-file", "File holding a secret shared by every replica (at least 16 bytes; not in Redis): replicas forward agent job requests only to a replica that proves it knows it, and sign them with it instead of passing the client's credentials on. Required with the agent job gateway on replicas.")).
		PlaceHolder("PATH").StringVar(&c.ForwardSecretFile)
	mark(app.Flag("cluster.redis-tls", "Connect to Redis over TLS.")).BoolVar(&c.TLS.Enabled)
	mark(app.Flag("cluster.redis-tls-ca-file", "CA certificates (PEM) that verify the Redis server (default: the system's).")).PlaceHolder("PATH").StringVar(&c.TLS.CAFile)
	mark(app.Flag("cluster.redis-tls-cert-file", "Client certificate (PEM) for Redis.")).PlaceHolder("PATH").StringVar(&c.TLS.CertFile)
	mark(app.Flag("cluster.redis-tls-key-file", "Key (PEM) of the client certificate for Redis.")).PlaceHolder("PATH").StringVar(&c.TLS.KeyFile)
	mark(app.Flag("cluster.redis-tls-server-name", "Name the Redis server's certificate must hold (default: the address's host).")).StringVar(&c.TLS.ServerName)
	mark(app.Flag("cluster.redis-tls-insecure-skip-verify", "Do not verify the Redis server's certificate.")).BoolVar(&c.TLS.InsecureSkipVerify)
	return f
}

// Set says whether any cluster flag was given on the command line.
func (f *ClusterFlags) Set() bool { return f.set }

// Validate is Cluster.Validate with the error naming its flag.
func (f *ClusterFlags) Validate() error {
	return Rename(f.Config.Validate(), ClusterFlagNames)
}
