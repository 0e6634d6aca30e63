// Package sharedredis is the exporter's client of the Redis (or Valkey)
// its replicas share, found directly or through Redis Sentinel: the
// connection with its health and metrics, Lua scripts and the WAIT for
// Redis replicas (Client), leases with an expiry and a fencing token so
// that one replica does each piece of work (Leases), and the primary
// replica's lease (RunPrimary). What replicas keep there is written by
// adapters beside the seams they implement: the analytics ledger
// (budget.RedisLedger), the walks and their snapshots (refresh.RedisWalks)
// and the operations' state (store.RedisStore); this package knows none
// of them.
//
// A Redis outage is never fatal: every call has a short timeout and returns
// an error, which the caller turns into "not now" (the ledger pays for
// nothing, so no analytics request leaves), and everything resumes by
// itself when Redis answers again. Nothing here panics or exits on a Redis
// error, and no key except a lease's fencing counter lives without an
// expiry.
package sharedredis

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
)

// Operations are the values of the operation label of
// mintlify_exporter_cluster_operations_total: the adapters name theirs
// here, so that every series reads 0 before its first call.
const (
	opPing         = "ping"
	OpLedgerTake   = "ledger_take"
	OpLedgerRead   = "ledger_read"
	OpLedgerReject = "ledger_reject"
	opLeaseAcquire = "lease_acquire"
	opLeaseRenew   = "lease_renew"
	opLeaseRelease = "lease_release"
	opLeaseHolder  = "lease_holder"
	OpBlobPut      = "blob_put"
	OpBlobGet      = "blob_get"
	OpStoreApply   = "store_apply"
	OpStoreRead    = "store_read"
	// opStoreWait is the WAIT for the Redis replicas after a write
	// (RunReplicated): refused when fewer than asked acknowledged in time.
	opStoreWait = "store_wait"
)

var operations = []string{opPing, OpLedgerTake, OpLedgerRead, OpLedgerReject, opLeaseAcquire, opLeaseRenew,
	opLeaseRelease, opLeaseHolder, OpBlobPut, OpBlobGet, OpStoreApply, OpStoreRead, opStoreWait}

// Results of an operation: done, refused by the rules it enforces (budget
// spent, lease held by another, an older version), or failed.
const (
	resultOK      = "ok"
	resultRefused = "refused"
	resultError   = "error"
)

// Client is a connection pool to the shared Redis with its health and
// metrics. It is safe for concurrent use.
type Client struct {
	pool     *redisConn
	prefix   string
	timeout  time.Duration
	interval time.Duration
	// addr names the Redis in logs and errors (an address, or the
	// Sentinel master name and the sentinels).
	addr   string
	db     int
	logger log.Logger
	// replicas and waitTimeout: the WAIT before a record's
	// acknowledgement (see RunReplicated); 0 replicas: none.
	replicas    int
	waitTimeout time.Duration
	// unreplicated: the last WAIT fell short (logged once until one does not).
	unreplicated atomic.Bool

	// lease is how long leases last unless renewed.
	lease time.Duration

	// state is 0 before the first call, then stateUp or stateDown.
	state atomic.Int32
	up    prometheus.Gauge
	ops   *prometheus.CounterVec
	// held counts the leases held through Leases.Hold (the walks');
	// primary is whether this process holds the primary lease (see
	// RunPrimary).
	held    atomic.Int64
	primary atomic.Bool
}

// New validates cfg, reads its password and TLS files and returns a Client
// whose metrics are registered with reg (when not nil). It does not dial:
// Redis may come up after the exporter, and Run reports when it does.
func New(cfg config.Cluster, reg prometheus.Registerer, logger log.Logger) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if !cfg.Enabled() {
		return nil, errors.New("cluster: no Redis address configured")
	}
	if logger == nil {
		logger = log.NewNopLogger()
	}
	redisLog.l.Store(&logger)
	if n := cfg.Sentinel.Notice(); n != "" {
		level.Warn(logger).Log("msg", n)
	}
	if _, err := password(&cfg); err != nil { // fail now, not at the first dial
		return nil, fmt.Errorf("cluster: %w", err)
	}
	sentinelPassword, err := sentinelPassword(&cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	tc, err := tlsConfig(&cfg)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	c := &Client{
		pool:        newRedisConn(&cfg, tc, sentinelPassword, logger),
		prefix:      cfg.KeyPrefix,
		timeout:     cfg.Timeout,
		interval:    cfg.HealthInterval,
		addr:        cfg.Where(),
		db:          cfg.DB,
		logger:      logger,
		replicas:    cfg.Replicas(),
		waitTimeout: cmp.Or(cfg.WaitTimeout, config.DefaultClusterWaitTimeout),
		lease:       cmp.Or(cfg.LeaseDuration, config.DefaultClusterLeaseDuration),
		up: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mintlify_exporter_cluster_up",
			Help: "Whether the last call to the shared Redis succeeded (1) or failed (0).",
		}),
		ops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mintlify_exporter_cluster_operations_total",
			Help: "Calls to the shared Redis, by operation and result (ok, refused, error).",
		}, []string{"operation", "result"}),
	}
	if c.interval <= 0 {
		c.interval = config.DefaultClusterHealthInterval
	}
	for _, op := range operations {
		for _, r := range []string{resultOK, resultRefused, resultError} {
			c.ops.WithLabelValues(op, r)
		}
	}
	held := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "mintlify_exporter_cluster_walk_leases_held",
		Help: "Analytics walks this replica holds the lease of now.",
	}, func() float64 { return float64(c.held.Load()) })
	// mintlify_exporter_cluster_primary is not registered here: a scrape
	// gathers it (PrimaryFamily) from the same read of the role that
	// decides whether it exports the shared data.
	if reg != nil {
		for _, m := range []prometheus.Collector{c.up, c.ops, held} {
			if err := reg.Register(m); err != nil {
				_ = c.pool.close()
				return nil, fmt.Errorf("cluster metrics: %w", err)
			}
		}
	}
	return c, nil
}

// poolSize bounds the connections to Redis of one process (go-redis's
// PoolSize): its calls are short, and a few goroutines (walks, the ledger,
// leases, the job store) make them.
const poolSize = 16

// Close closes the connections.
func (c *Client) Close() error { return c.pool.close() }

// Up says whether the last call to Redis succeeded.
func (c *Client) Up() bool { return c.state.Load() == stateUp }

const (
	stateUp   = 1
	stateDown = 2
)

// Run pings Redis at once and then every health interval until ctx ends,
// keeping mintlify_exporter_cluster_up current and logging each change.
func (c *Client) Run(ctx context.Context) {
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for {
		_ = c.Ping(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Ping asks Redis whether it is there.
func (c *Client) Ping(ctx context.Context) error {
	return c.Call(ctx, opPing, func(ctx context.Context) (bool, error) {
		_, err := c.Do(ctx, "PING")
		return false, err
	})
}

// Call runs fn with the client's timeout and records its result as
// operation op; fn says whether Redis refused what was asked (not an
// error). Errors name the operation; Redis's error texts hold no secrets.
func (c *Client) Call(ctx context.Context, op string, fn func(ctx context.Context) (refused bool, err error)) error {
	return c.callFor(ctx, op, c.timeout, fn)
}

// callFor is Call with a timeout of its own (a write that also waits for
// the replicas).
func (c *Client) callFor(ctx context.Context, op string, timeout time.Duration, fn func(ctx context.Context) (refused bool, err error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	refused, err := fn(ctx)
	switch {
	case err != nil:
		c.ops.WithLabelValues(op, resultError).Inc()
	case refused:
		c.ops.WithLabelValues(op, resultRefused).Inc()
	default:
		c.ops.WithLabelValues(op, resultOK).Inc()
	}
	// Any error counts as down: a refused password or a Redis still
	// loading its data is as unusable as one that does not answer.
	c.setUp(err == nil, err)
	if err != nil {
		return fmt.Errorf("redis %s at %s: %w", op, c.addr, err)
	}
	return nil
}

func (c *Client) setUp(up bool, err error) {
	next := int32(stateDown)
	if up {
		next = stateUp
	}
	if c.state.Swap(next) == next {
		return
	}
	if up {
		c.up.Set(1)
		level.Info(c.logger).Log("msg", "shared Redis reachable", "address", c.addr)
		return
	}
	c.up.Set(0)
	level.Warn(c.logger).Log("msg", "shared Redis unreachable: no analytics request is sent until it answers again", "address", c.addr, "err", err)
}

// RunReplicated runs s as operation op and, when written says its reply
// wrote something and replicas are asked for, waits for them (WAIT) before
// it returns; the call's deadline leaves the WAIT its own time beside the
// write's. A reply that wrote nothing counts as refused.
func (c *Client) RunReplicated(ctx context.Context, op string, s *Script, written func(reply any) bool, keys []string, args ...any) (any, error) {
	var v any
	acked := int64(-1)
	timeout := c.timeout
	if c.replicas > 0 {
		timeout += c.waitTimeout
	}
	wait := func(v any) bool { return c.replicas > 0 && written(v) }
	err := c.callFor(ctx, op, timeout, func(ctx context.Context) (bool, error) {
		var err error
		v, acked, err = s.runThenWait(ctx, c.pool, c.replicas, c.waitTimeout, wait, keys, args...)
		return err == nil && !written(v), err
	})
	if err == nil && wait(v) {
		c.waited(acked)
	}
	return v, err
}

// waited records a WAIT after a write that acknowledged acked replicas
// (-1: WAIT itself failed). A record the replicas do not hold yet is
// acknowledged all the same, with a warning: it is in the primary (the
// write's all-or-nothing contract holds, an error would say it is not),
// and refusing every operation while a replica is away would turn the loss
// of a replica into the loss of the gateway. It is lost only if the
// primary dies before a replica copies it. Redis's own
// min-replicas-to-write refuses the write itself, for those who want that
// instead.
func (c *Client) waited(acked int64) {
	switch {
	case acked >= int64(c.replicas):
		c.ops.WithLabelValues(opStoreWait, resultOK).Inc()
		if c.unreplicated.Swap(false) {
			level.Info(c.logger).Log("msg", "agent job records reach a Redis replica again before their acknowledgement", "address", c.addr)
		}
		return
	case acked < 0:
		c.ops.WithLabelValues(opStoreWait, resultError).Inc()
	default:
		c.ops.WithLabelValues(opStoreWait, resultRefused).Inc()
	}
	// Logged once until records reach a replica again (the counter counts
	// each): after a failover the promoted Redis has no replica until the
	// old primary returns, and every write would warn.
	if !c.unreplicated.Swap(true) {
		level.Warn(c.logger).Log("msg", "agent job record acknowledged before a Redis replica held it: a failover now could lose it; "+
			"mintlify_exporter_cluster_operations_total{operation=\"store_wait\",result!=\"ok\"} counts the others",
			"replicas_wanted", c.replicas, "replicas_acknowledged", max(acked, 0), "wait_timeout", c.waitTimeout, "address", c.addr)
	}
}

// Key is the prefixed key of parts joined by ':'.
func (c *Client) Key(parts ...string) string {
	return c.prefix + strings.Join(parts, ":")
}

// Name names key in this Redis for logs and errors: the Redis, its
// database and the key.
func (c *Client) Name(key string) string {
	return "redis://" + c.addr + "/" + strconv.Itoa(c.db) + " " + key
}

// Logger is the client's logger, for what an adapter reports once.
func (c *Client) Logger() log.Logger { return c.logger }

// NewOwnerID returns an id for this process as a lease owner: the host
// name (a pod's name in Kubernetes, for people reading the holder) and a
// random suffix, so that a restarted process is a new owner.
func NewOwnerID() string {
	host, _ := os.Hostname()
	var b [6]byte
	_, _ = rand.Read(b[:])
	return strings.Trim(host+"-"+hex.EncodeToString(b[:]), "-")
}
