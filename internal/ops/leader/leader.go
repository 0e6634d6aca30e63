// Package leader runs the gateway and its engine (the operations of every
// kind) on one replica at a time when replicas share a Redis. The replica
// holding the "agent" lease opens the operations' state in Redis (fenced
// by that lease: a replica that lost it cannot write), polls every
// operation not final and answers /api/; every other replica forwards its
// /api/ requests there. When the holder dies, another replica takes the
// lease within one lease duration and resumes from the shared state: the
// same operations, intents and Idempotency-Keys, and the local limits
// seeded from what was started within their windows.
//
// One process runs the operations at a time because the engine's counting
// rules (write before count, an idempotency key reserved before its start)
// are those of one writer; a takeover is what a restart of a single
// exporter is, with the state in Redis instead of a file.
package leader

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/gateway"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sharedredis"
	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
)

// forwardedHeader marks a request one replica forwarded to another, so
// that a replica that is no longer the holder answers 503 instead of
// forwarding it again.
const forwardedHeader = "X-Mintlify-Exporter-Forwarded"

// Term is one replica's turn at running the gateway.
type Term struct {
	// Handler serves /api/.
	Handler http.Handler
	// Status is the jobs for the status page.
	Status func() *status.Jobs
	// Follow reads the jobs of projects a reload adds, before
	// SetProjects (nil: nothing to read).
	Follow func(ids []string) error
	// SetProjects changes the projects that accept jobs (a reload).
	SetProjects func(ids []string)
	// Stop ends the term: polling stops, starts under way are recorded,
	// the engine is closed.
	Stop func()
	// Unsaved lists, once the term is stopped, the operations the API
	// acknowledged whose record the term could not save (nil: none): the
	// leader hands each to whoever runs the gateway next (handoff.go).
	Unsaved func() []engine.Unsaved
}

// Options configure a Leader.
type Options struct {
	Cluster *sharedredis.Client
	// Owner is this replica's lease owner id; Advertise is the base URL
	// (scheme://host:port) at which the other replicas reach its /api/.
	Owner, Advertise string
	// LeaseDuration is how long the lease lasts unless renewed (every
	// third of it).
	LeaseDuration time.Duration
	// Start opens a term on the shared state st; the term's metrics
	// register with reg (they are exported while the term lasts).
	Start func(ctx context.Context, st engine.Store, reg prometheus.Registerer) (*Term, error)
	// ForwardSecret is the secret the replicas share outside Redis
	// (--cluster.forward-secret-file): forwarded requests are signed with
	// it and forwarded only to a holder that proves it knows it (see
	// forward.go). At least MinSecretBytes.
	ForwardSecret []byte
	// Registerer takes the leader's own metrics.
	Registerer prometheus.Registerer
	Logger     log.Logger
}

// Leader contends for the gateway and serves /api/ on every replica.
type Leader struct {
	opts    Options
	owner   string // the lease owner: Owner@Advertise
	metrics *termMetrics
	role    prometheus.Gauge

	// known is the marker of the shared state this replica saw last (Run's
	// goroutine alone uses it): a state found with another marker, or none,
	// was lost (store.CheckRedis).
	known string
	// lost is the error that found the shared state lost, nil while it is
	// not: no replica runs the gateway until an operator decides (stateLost
	// exports it).
	lost      atomic.Pointer[string]
	stateLost prometheus.Gauge

	mu   sync.RWMutex
	term *Term
	// holderLease is the last holder read from Redis, kept for holderTTL.
	holderLease sharedredis.Lease
	holderAt    time.Time
	// proven is the lease whose holder proved it knows the forward secret
	// (its Token and Owner: the lease's value).
	proven sharedredis.Lease

	// client sends the probes (forwarded requests go through a
	// ReverseProxy); nonces are the signatures this replica accepted.
	client *http.Client
	nonces nonceCache

	// handoffs are the operations ended terms could not save, until the
	// replica running the gateway took each over (Run's goroutine alone
	// uses them).
	handoffs []engine.Unsaved
}

// holderTTL is how long a replica reuses the holder it read.
const holderTTL = time.Second

// New validates opts and registers the leader's metrics.
func New(opts Options) (*Leader, error) {
	switch {
	case opts.Cluster == nil || opts.Start == nil:
		return nil, errors.New("gateway on replicas: no shared Redis or no way to start it")
	case opts.LeaseDuration <= 0:
		return nil, errors.New("gateway on replicas: the lease duration must be positive")
	case len(opts.ForwardSecret) < MinSecretBytes:
		return nil, fmt.Errorf("gateway on replicas: a forward secret of at least %d bytes is required (cluster.forward_secret_file, --cluster.forward-secret-file): "+
			"the replicas authenticate each other with it, not with what Redis says", MinSecretBytes)
	}
	if _, err := url.Parse(opts.Advertise); err != nil || !strings.Contains(opts.Advertise, "://") || strings.ContainsAny(opts.Advertise, " @") {
		return nil, fmt.Errorf("gateway on replicas: advertise URL %q: want scheme://host:port", opts.Advertise)
	}
	if opts.Logger == nil {
		opts.Logger = log.NewNopLogger()
	}
	l := &Leader{opts: opts, owner: opts.Owner + "@" + opts.Advertise, metrics: &termMetrics{},
		client: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		role: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mintlify_exporter_cluster_agent_gateway",
			Help: "Whether this replica runs the gateway (1): it polls the jobs and answers /api/ for every replica.",
		}),
		stateLost: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mintlify_exporter_cluster_agent_state_lost",
			Help: "Whether the agent job state in Redis was lost (1): the gateway refuses jobs until an operator accepts or re-imports it.",
		})}
	if opts.Registerer != nil {
		for _, c := range []prometheus.Collector{l.role, l.stateLost, l.metrics} {
			if err := opts.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("gateway on replicas: metrics: %w", err)
			}
		}
	}
	return l, nil
}

// Run contends for the gateway until ctx ends, then ends its term, if
// any, and gives the lease up so that another replica takes over at once.
func (l *Leader) Run(ctx context.Context) {
	leases := l.opts.Cluster.Leases()
	var lease sharedredis.Lease
	held := false
	t := time.NewTicker(l.opts.LeaseDuration / 3)
	defer t.Stop()
	for {
		if held {
			next, err := leases.Renew(ctx, lease, l.opts.LeaseDuration)
			switch {
			case err == nil:
				lease = next
			case errors.Is(err, sharedredis.ErrLeaseLost), time.Now().After(lease.Deadline):
				// Another replica may hold it now: stop polling and
				// answering before it starts (its writes would win anyway,
				// ours are fenced).
				l.endTerm("the lease was lost or could not be renewed in time", err)
				held = false
			}
		}
		if ctx.Err() == nil && l.checkState(ctx) && held {
			l.endTerm("the agent state in Redis was lost", nil)
			release(ctx, leases, lease)
			held = false
		}
		if !held && ctx.Err() == nil && l.lost.Load() == nil {
			held, lease = l.begin(ctx, leases)
		}
		if ctx.Err() == nil {
			l.deliverHandoffs(ctx)
		}
		select {
		case <-ctx.Done():
			if held {
				l.endTerm("shutting down", nil)
				release(ctx, leases, lease)
			}
			return
		case <-t.C:
		}
	}
}

// begin takes the lease if it is free and starts a term on the shared
// state; it reports whether this replica now holds the gateway.
func (l *Leader) begin(ctx context.Context, leases *sharedredis.Leases) (bool, sharedredis.Lease) {
	lease, ok, err := leases.Acquire(ctx, store.AgentLease, l.owner, l.opts.LeaseDuration)
	if err != nil || !ok {
		return false, lease
	}
	schema, upgrades, buckets := engine.Layout()
	st, err := store.OpenRedis(ctx, l.opts.Cluster, store.RedisOptions{Schema: schema, Upgrades: upgrades, Buckets: buckets, Fence: &lease, Known: l.known})
	if errors.Is(err, store.ErrStateLost) {
		l.setLost(err)
	}
	var term *Term
	if err == nil {
		l.known = st.Marker()
		l.metrics.reset()
		term, err = l.opts.Start(ctx, st, l.metrics)
	}
	if err != nil {
		level.Error(l.opts.Logger).Log("msg", "could not start the gateway on the shared state; another replica may try", "err", err)
		release(ctx, leases, lease)
		return false, lease
	}
	l.mu.Lock()
	l.term = term
	l.mu.Unlock()
	l.role.Set(1)
	level.Info(l.opts.Logger).Log("msg", "this replica now runs the gateway: it polls the jobs and answers /api/ for every replica", "token", lease.Token)
	return true, lease
}

// release gives the lease up at once, even when ctx ended (shutdown), so
// that another replica need not wait for it to expire.
func release(ctx context.Context, leases *sharedredis.Leases, lease sharedredis.Lease) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	_ = leases.Release(rctx, lease)
}

// checkState compares the shared state's marker with the one this replica
// knows, and reports whether the state is lost.
func (l *Leader) checkState(ctx context.Context) bool {
	known, err := store.CheckRedis(ctx, l.opts.Cluster, l.known)
	switch {
	case errors.Is(err, store.ErrStateLost):
		// The marker the state was lost from: the one an accept supersedes.
		l.known = known
		l.setLost(err)
	case err != nil:
		// Redis unreachable: nothing is known, nothing changes (the lease
		// decides whether this replica may act).
	default:
		l.known = known
		if l.lost.Swap(nil) != nil {
			l.stateLost.Set(0)
			level.Info(l.opts.Logger).Log("msg", "the agent state in Redis was accepted or re-imported by an operator: the gateway runs again")
		}
	}
	return l.lost.Load() != nil
}

func (l *Leader) setLost(err error) {
	msg := err.Error()
	if l.lost.Swap(&msg) == nil {
		l.stateLost.Set(1)
		level.Error(l.opts.Logger).Log("msg", "the gateway refuses jobs: its state in Redis was lost", "err", err)
	}
}

func (l *Leader) endTerm(why string, err error) {
	l.mu.Lock()
	term := l.term
	l.term = nil
	l.mu.Unlock()
	if term == nil {
		return
	}
	l.role.Set(0)
	term.Stop()
	if term.Unsaved != nil {
		l.keepHandoffs(term.Unsaved())
	}
	l.metrics.reset()
	level.Warn(l.opts.Logger).Log("msg", "this replica no longer runs the gateway", "reason", why, "err", err)
}

func (l *Leader) current() *Term {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.term
}

// Status is the jobs of the term, nil on a replica that does not run it.
func (l *Leader) Status() *status.Jobs {
	if t := l.current(); t != nil {
		return t.Status()
	}
	return nil
}

// Follow passes a reload's projects to the term, if any, to read their
// jobs before they accept any (a term started later reads them through
// Start).
func (l *Leader) Follow(ids []string) error {
	if t := l.current(); t != nil && t.Follow != nil {
		return t.Follow(ids)
	}
	return nil
}

// SetProjects passes a reload's projects to the term, if any (a term
// started later reads them through Start).
func (l *Leader) SetProjects(ids []string) {
	if t := l.current(); t != nil {
		t.SetProjects(ids)
	}
}

// errNoProof: an answer to a forwarded request without the holder's proof.
var errNoProof = errors.New("the answer did not carry the proof that its replica knows the forward secret")

// ServeHTTP answers /api/: here when this replica runs the gateway, else
// forwarded to the replica that does, once it proved it knows the forward
// secret, else 503. A request another replica forwarded reaches it only
// through Authenticate.
func (l *Leader) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fwd, fromReplica := r.Context().Value(forwardedKey{}).(forwarded)
	if t := l.current(); t != nil {
		if fromReplica {
			w.Header().Set(proofHeader, hex.EncodeToString(proofMAC(l.opts.ForwardSecret, fwd.nonce, l.owner)))
			if r.URL.Path == probePath {
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		t.Handler.ServeHTTP(w, r)
		return
	}
	retry := int(l.opts.LeaseDuration/3/time.Second) + 1
	if msg := l.lost.Load(); msg != nil {
		gateway.WriteUnavailable(w, *msg, 60)
		return
	}
	if fromReplica || r.Header.Get(forwardedHeader) != "" {
		gateway.WriteUnavailable(w, "the gateway is moving to another replica; retry", retry)
		return
	}
	target, lease, ok := l.holderURL(r.Context())
	if !ok {
		gateway.WriteUnavailable(w, "no replica runs the gateway now (the shared Redis is unreachable, or a replica is taking over); retry", retry)
		return
	}
	if err := l.ensureProven(r.Context(), target, lease); err != nil {
		gateway.WriteUnavailable(w, "the replica that the agent lease in Redis names did not prove that it is one of ours: not forwarding; retry", retry)
		return
	}
	// The front checked the client's credentials here; they do not go on.
	user, _, _ := r.BasicAuth()
	client := r.RemoteAddr
	var nonce string
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
			for _, h := range []string{"Authorization", "Proxy-Authorization", "Cookie"} {
				pr.Out.Header.Del(h)
			}
			nonce = l.sign(pr.Out, pr.Out.URL.RequestURI(), client, user, lease.Owner)
		},
		ModifyResponse: func(resp *http.Response) error {
			if !l.checkProof(resp, nonce, lease.Owner) {
				return errNoProof
			}
			resp.Header.Del(proofHeader)
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			l.forgetHolder()
			if opErr := (*net.OpError)(nil); errors.As(err, &opErr) && opErr.Op == "dial" {
				// Nothing was sent: the replica is gone (its lease not
				// expired yet). Not done, so a plain 503.
				gateway.WriteUnavailable(w, "the replica running the gateway is unreachable; another takes over within the lease; retry", retry)
				return
			}
			// The request may have reached the gateway before its replica
			// went away: a create's outcome is unknown, so not a 503 ("not
			// done"), but a 502. A retry with the same Idempotency-Key is
			// safe; a create without one shows up in unknown_creates.
			level.Warn(l.opts.Logger).Log("msg", "the replica running the gateway did not answer a forwarded request", "replica", target.Host, "err", err)
			gateway.WriteBadGateway(w, "the replica running the gateway did not answer: the outcome is unknown; retry with the same Idempotency-Key, or look for the job (or an unknown create) before creating it again")
		},
	}
	proxy.ServeHTTP(w, r)
}

// ensureProven probes the holder of lease at target once per lease value:
// a lease rewritten in Redis is a new value, and its holder must prove
// again that it knows the forward secret.
func (l *Leader) ensureProven(ctx context.Context, target *url.URL, lease sharedredis.Lease) error {
	l.mu.RLock()
	ok := l.proven.Token == lease.Token && l.proven.Owner == lease.Owner
	l.mu.RUnlock()
	if ok {
		return nil
	}
	if err := l.prove(ctx, target, lease.Owner); err != nil {
		level.Error(l.opts.Logger).Log("msg", "the replica that the agent lease in Redis names did not prove it knows the forward secret: not forwarding to it "+
			"(a lease rewritten in Redis, or a replica with another --cluster.forward-secret-file)", "replica", target.Host, "token", lease.Token, "err", err)
		l.forgetHolder()
		return err
	}
	l.mu.Lock()
	l.proven = lease
	l.mu.Unlock()
	return nil
}

// holderURL is the base URL of the replica that runs the gateway, and its
// lease.
func (l *Leader) holderURL(ctx context.Context) (*url.URL, sharedredis.Lease, bool) {
	l.mu.RLock()
	holder, at := l.holderLease, l.holderAt
	l.mu.RUnlock()
	if holder.Owner == "" || time.Since(at) > holderTTL {
		lease, ok, err := l.opts.Cluster.Leases().Holder(ctx, store.AgentLease)
		if err != nil || !ok {
			return nil, sharedredis.Lease{}, false
		}
		holder = lease
		l.mu.Lock()
		l.holderLease, l.holderAt = holder, time.Now()
		l.mu.Unlock()
	}
	_, base, ok := strings.Cut(holder.Owner, "@")
	if !ok || holder.Owner == l.owner {
		return nil, sharedredis.Lease{}, false
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, sharedredis.Lease{}, false
	}
	return u, holder, true
}

func (l *Leader) forgetHolder() {
	l.mu.Lock()
	l.holderLease = sharedredis.Lease{}
	l.mu.Unlock()
}

// termMetrics exports the metrics of the current term: a Registerer whose
// collectors are collected while they are registered. It describes nothing
// (an unchecked collector), since terms come and go.
type termMetrics struct {
	mu         sync.Mutex
	collectors []prometheus.Collector
}

func (m *termMetrics) Register(c prometheus.Collector) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.collectors = append(m.collectors, c)
	return nil
}

func (m *termMetrics) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		_ = m.Register(c)
	}
}

func (m *termMetrics) Unregister(c prometheus.Collector) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, x := range m.collectors {
		if x == c {
			m.collectors = append(m.collectors[:i], m.collectors[i+1:]...)
			return true
		}
	}
	return false
}

func (m *termMetrics) reset() {
	m.mu.Lock()
	m.collectors = nil
	m.mu.Unlock()
}

// Describe implements prometheus.Collector: nothing, see termMetrics.
func (m *termMetrics) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector.
func (m *termMetrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	cs := append([]prometheus.Collector(nil), m.collectors...)
	m.mu.Unlock()
	for _, c := range cs {
		c.Collect(ch)
	}
}
