package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/exporter-toolkit/web"
	"go.yaml.in/yaml/v2"
	"golang.org/x/crypto/bcrypt"
)

// Refusal reasons (mintlify_web_auth_refused_total).
const (
	reasonMissing     = "missing"        // 401: no credentials
	reasonInvalid     = "invalid"        // 401: unknown user or wrong password
	reasonClientLimit = "client_limited" // 429: too many failures from the client's address
	reasonOverloaded  = "overloaded"     // 503: no password check slot free in time
)

// dummyHash is checked for an unknown user, so that a reply takes as long
// whether the user exists or not (as exporter-toolkit does; its value is
// the bcrypt hash of "fakepassword" at cost 10).
const dummyHash = "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi"

// AuthOptions configure an AuthFront. Zero values take the defaults named.
type AuthOptions struct {
	// ConfigFile is --web.config.file; empty: no front, every request
	// passes.
	ConfigFile string
	Logger     log.Logger
	// Registerer, when set, gets the front's metrics.
	Registerer prometheus.Registerer
	// MaxConcurrentChecks bounds the bcrypt comparisons run at once
	// (default: half the CPUs, at least 1), so that failed logins cannot
	// take every CPU from scrapes.
	MaxConcurrentChecks int
	// MaxWaitingChecks bounds the requests waiting for a check slot
	// (default 4 per slot); beyond it, 503 at once.
	MaxWaitingChecks int
	// CheckWait is the longest wait for a check slot (default 1s), then 503.
	CheckWait time.Duration
	// FailureBurst and FailureInterval limit unverified attempts per
	// client address: a bucket of FailureBurst (default 10) attempts,
	// refilled by one every FailureInterval (default 1s). A failed or
	// overloaded attempt keeps its token, a successful one gives it back;
	// an empty bucket answers 429 without a password check.
	FailureBurst    int
	FailureInterval time.Duration
	// FailureDelay holds each refused login (wrong password, limited
	// client) this long before it is answered (default 500ms): a client
	// looping on wrong passwords then sends a few a second instead of
	// thousands, and its cheap refusals cannot eat the CPUs either.
	FailureDelay time.Duration
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

func (o *AuthOptions) defaults() {
	if o.Logger == nil {
		o.Logger = log.NewNopLogger()
	}
	if o.MaxConcurrentChecks <= 0 {
		o.MaxConcurrentChecks = max(1, runtime.GOMAXPROCS(0)/2)
	}
	if o.MaxWaitingChecks <= 0 {
		o.MaxWaitingChecks = 4 * o.MaxConcurrentChecks
	}
	if o.CheckWait <= 0 {
		o.CheckWait = time.Second
	}
	if o.FailureBurst <= 0 {
		o.FailureBurst = 10
	}
	if o.FailureInterval <= 0 {
		o.FailureInterval = time.Second
	}
	if o.FailureDelay <= 0 {
		o.FailureDelay = 500 * time.Millisecond
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// AuthFront checks the basic auth of --web.config.file for every request,
// ahead of exporter-toolkit, which is given the same file without its
// users (TLS, headers and its rate limit stay the toolkit's). It exists
// for two reasons:
//
//   - Fail closed. The toolkit re-reads the file on each request and
//     serves everyone while it names no user, as a non-atomic rewrite
//     does for a moment. Once the front has seen users, a version of the
//     file that is unreadable, invalid or without users is refused: the
//     last good users stay in force, the refusal is logged and
//     mintlify_web_config_last_reload_successful turns 0.
//   - Scrapes are not starved by wrong passwords. The toolkit checks one
//     bcrypt hash at a time (~50-100 ms each at cost 10) and its cache of
//     100 results is flushed by random passwords, so a known client
//     queues behind every attacker. The front remembers the credentials
//     it verified (per user, while the user's hash is unchanged) and
//     serves them without bcrypt; only unverified attempts are checked,
//     at most MaxConcurrentChecks at once, limited per client address,
//     and refused quickly (503) rather than queued without bound.
type AuthFront struct {
	opts    AuthOptions
	derived string // the toolkit's config file; "" without a front
	dir     string

	cfg      atomic.Pointer[webConfig]
	reloadMu sync.Mutex
	hadUsers atomic.Bool
	// refusal is the last refused version (content and error), logged
	// once; refusedAt is when it was checked.
	refusal    string
	refusedRaw string
	refusedAt  time.Time

	salt     [32]byte
	verified sync.Map // user -> verifiedCred
	bad      *badCache
	clients  *clientLimiter
	slots    chan struct{}
	waiting  atomic.Int64

	reloadOK prometheus.Gauge
	reloadTS prometheus.Gauge
	refused  *prometheus.CounterVec
}

// verifiedCred is a credential whose bcrypt check passed against hash.
type verifiedCred struct {
	hash   string
	digest [32]byte
}

// NewAuthFront reads the web config (its errors name --web.config.file) and
// registers the metrics. Close it to remove the toolkit's copy.
func NewAuthFront(o AuthOptions) (*AuthFront, error) {
	o.defaults()
	f := &AuthFront{
		opts:    o,
		bad:     newBadCache(4096),
		clients: newClientLimiter(o.FailureBurst, o.FailureInterval, 10000),
		slots:   make(chan struct{}, o.MaxConcurrentChecks),
		reloadOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mintlify_web_config_last_reload_successful",
			Help: "Whether the last change of --web.config.file was applied (0: refused, the last good version is in force).",
		}),
		reloadTS: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mintlify_web_config_last_reload_success_timestamp_seconds",
			Help: "When a version of --web.config.file was last applied.",
		}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mintlify_web_auth_refused_total",
			Help: "Requests refused by basic auth, by reason: missing, invalid, client_limited, overloaded.",
		}, []string{"reason"}),
	}
	for _, r := range []string{reasonMissing, reasonInvalid, reasonClientLimit, reasonOverloaded} {
		f.refused.WithLabelValues(r)
	}
	if _, err := rand.Read(f.salt[:]); err != nil {
		return nil, fmt.Errorf("basic auth: %w", err)
	}
	if o.ConfigFile != "" {
		dir, err := os.MkdirTemp("", "mintlify_exporter-web-")
		if err != nil {
			return nil, fmt.Errorf("--web.config.file: a directory for the toolkit's copy: %w", err)
		}
		f.dir, f.derived = dir, filepath.Join(dir, "web-config.yml")
		raw, err := readConfig(o.ConfigFile)
		if err == nil {
			var c *webConfig
			if c, err = parseConfig(o.ConfigFile, raw, f.derived); err == nil {
				f.apply(c)
			}
		}
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("--web.config.file: %w", err)
		}
	} else {
		f.cfg.Store(&webConfig{})
		f.reloadOK.Set(1)
	}
	if o.Registerer != nil {
		for _, c := range []prometheus.Collector{f.reloadOK, f.reloadTS, f.refused} {
			if err := o.Registerer.Register(c); err != nil {
				f.Close()
				return nil, fmt.Errorf("basic auth: registering metrics: %w", err)
			}
		}
	}
	return f, nil
}

// Close removes the toolkit's copy of the web config.
func (f *AuthFront) Close() error {
	if f.dir == "" {
		return nil
	}
	return os.RemoveAll(f.dir)
}

// Protected reports whether basic auth is in force.
func (f *AuthFront) Protected() bool { return len(f.cfg.Load().users) > 0 }

// ListenAndServe is exporter-toolkit's web.ListenAndServe, given the
// front's copy of the web config (without its users).
func (f *AuthFront) ListenAndServe(srv *http.Server, flags *web.FlagConfig, logger *slog.Logger) error {
	return web.ListenAndServe(srv, f.toolkitFlags(flags), logger)
}

func (f *AuthFront) toolkitFlags(flags *web.FlagConfig) *web.FlagConfig {
	fc := *flags
	path := f.derived
	fc.WebConfigFile = &path
	return &fc
}

// apply puts c in force.
func (f *AuthFront) apply(c *webConfig) {
	f.cfg.Store(c)
	if len(c.users) > 0 {
		f.hadUsers.Store(true)
	}
	f.refusal = ""
	f.reloadOK.Set(1)
	f.reloadTS.Set(float64(f.opts.Now().UnixNano()) / 1e9)
}

// current returns the web config in force, re-reading the file first (as
// the toolkit does on every request) and applying a changed version when
// it is good.
func (f *AuthFront) current() *webConfig {
	cur := f.cfg.Load()
	if f.derived == "" {
		return cur
	}
	raw, err := readConfig(f.opts.ConfigFile)
	if err == nil && string(raw) == string(cur.raw) {
		return cur
	}
	f.reloadMu.Lock()
	defer f.reloadMu.Unlock()
	cur = f.cfg.Load()
	if err == nil && string(raw) == string(cur.raw) {
		return cur
	}
	now := f.opts.Now()
	if f.refusal != "" && string(raw) == f.refusedRaw && now.Sub(f.refusedAt) < recheckRefused {
		return cur // refused a moment ago, and logged
	}
	var next *webConfig
	if err == nil {
		next, err = f.check(raw)
	}
	if err != nil {
		f.reloadOK.Set(0)
		f.refusedAt, f.refusedRaw = now, string(raw)
		if refusal := string(raw) + "\x00" + err.Error(); refusal != f.refusal {
			f.refusal = refusal
			level.Error(f.opts.Logger).Log("msg", "--web.config.file changed but is not applied; the last good version stays in force",
				"file", f.opts.ConfigFile, "basic_auth_users", len(cur.users), "err", err)
		}
		return cur
	}
	f.apply(next)
	level.Info(f.opts.Logger).Log("msg", "--web.config.file reloaded", "file", f.opts.ConfigFile, "basic_auth_users", len(next.users))
	return next
}

// recheckRefused is how long a refused version of the web config is not
// checked again (it may refer to a certificate that appears later).
const recheckRefused = time.Second

// errUsersLost refuses a web config without users once there were some.
var errUsersLost = errors.New("basic_auth_users is empty or missing while the exporter serves behind basic auth: " +
	"refusing to serve without it (restart the exporter to drop basic auth)")

// check parses a changed version and refuses one that would open the
// exporter. The toolkit's copy is only replaced by a good version.
func (f *AuthFront) check(raw []byte) (*webConfig, error) {
	var users struct {
		Users map[string]string `yaml:"basic_auth_users"`
	}
	if err := yaml.Unmarshal(raw, &users); err == nil && len(users.Users) == 0 && f.hadUsers.Load() {
		return nil, errUsersLost
	}
	return parseConfig(f.opts.ConfigFile, raw, f.derived)
}

// Wrap returns next behind the front.
func (f *AuthFront) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f.authorize(w, r) {
			next.ServeHTTP(w, r)
		}
	})
}

// authorize answers a refused request itself and reports whether r may
// pass.
func (f *AuthFront) authorize(w http.ResponseWriter, r *http.Request) bool {
	c := f.current()
	if len(c.users) == 0 {
		return true
	}
	user, pass, ok := r.BasicAuth()
	if !ok {
		f.refuse(w, reasonMissing, http.StatusUnauthorized, "unauthorized: basic auth credentials required", 0)
		return false
	}
	hash, known := c.users[user]
	d := f.digest(user, pass)
	if known {
		if v, ok := f.verified.Load(user); ok {
			v := v.(verifiedCred)
			if v.hash == hash && subtle.ConstantTimeCompare(v.digest[:], d[:]) == 1 {
				return true
			}
		}
	} else {
		hash = dummyHash
	}
	client := clientAddr(r)
	now := f.opts.Now()
	if ok, wait := f.clients.take(client, now); !ok {
		f.hold(r.Context())
		f.refuse(w, reasonClientLimit, http.StatusTooManyRequests, "too many failed logins from your address; retry later", wait)
		return false
	}
	if f.bad.has(d, hash) {
		f.hold(r.Context())
		f.refuse(w, reasonInvalid, http.StatusUnauthorized, "unauthorized: wrong user or password", 0)
		return false
	}
	if !f.acquire(r.Context()) {
		// The attempt keeps its token: a client retrying into a full
		// queue is limited like one that fails.
		f.refuse(w, reasonOverloaded, http.StatusServiceUnavailable, "too many logins being checked; retry in a second", time.Second)
		return false
	}
	err := bcrypt.CompareHashAndPassword([]byte(hash), []byte(pass))
	<-f.slots
	if known && err == nil {
		f.verified.Store(user, verifiedCred{hash: hash, digest: d})
		f.clients.give(client, now)
		return true
	}
	f.bad.add(d, hash)
	f.hold(r.Context())
	f.refuse(w, reasonInvalid, http.StatusUnauthorized, "unauthorized: wrong user or password", 0)
	return false
}

// hold delays a refusal by FailureDelay, or until the client is gone.
func (f *AuthFront) hold(ctx context.Context) {
	t := time.NewTimer(f.opts.FailureDelay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// acquire takes a check slot, waiting at most CheckWait behind at most
// MaxWaitingChecks others.
func (f *AuthFront) acquire(ctx context.Context) bool {
	select {
	case f.slots <- struct{}{}:
		return true
	default:
	}
	if f.waiting.Add(1) > int64(f.opts.MaxWaitingChecks) {
		f.waiting.Add(-1)
		return false
	}
	defer f.waiting.Add(-1)
	t := time.NewTimer(f.opts.CheckWait)
	defer t.Stop()
	select {
	case f.slots <- struct{}{}:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

// digest identifies a credential without keeping the password: a salted
// SHA-256 of user and password, the salt random per process.
func (f *AuthFront) digest(user, pass string) [32]byte {
	h := sha256.New()
	h.Write(f.salt[:])
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(user)))
	h.Write(n[:])
	h.Write([]byte(user))
	h.Write([]byte(pass))
	var d [32]byte
	h.Sum(d[:0])
	return d
}

// refuse answers in JSON, as every error of the exporter's API does.
func (f *AuthFront) refuse(w http.ResponseWriter, reason string, status int, msg string, retryAfter time.Duration) {
	f.refused.WithLabelValues(reason).Inc()
	h := w.Header()
	if status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Basic realm="mintlify_exporter", charset="UTF-8"`)
	}
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(int(max(1, (retryAfter+time.Second-1)/time.Second))))
	}
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// clientAddr is the client's IP address: the failure limit is per host,
// whatever the source port.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
