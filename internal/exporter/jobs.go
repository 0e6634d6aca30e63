package exporter

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/internal/cluster"
	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/gateway"
	"github.com/mintlify-exporter/mintlify_exporter/internal/jobleader"
	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
	"github.com/mintlify-exporter/mintlify_exporter/internal/tracker"
)

// agentJobs is the agent job gateway as Serve runs it: in this process on
// its state file (localJobs), or on whichever replica holds it when
// replicas share a Redis (jobleader.Leader).
type agentJobs interface {
	http.Handler
	// Status is the jobs for the status page (nil: none here).
	Status() *status.Jobs
	// Follow reads from the state the jobs of the projects of ids not
	// followed yet (a reload adds them), before any of them accepts a
	// job: a reload whose new projects' jobs cannot be read fails and
	// changes nothing.
	Follow(ids []string) error
	// SetProjects changes the projects that accept jobs (a reload).
	SetProjects(ids []string)
	// Run polls until ctx ends, then records what is under way and closes
	// the state.
	Run(ctx context.Context)
}

// localJobs is a tracker and its gateway in this process.
type localJobs struct {
	*gateway.Gateway
	trk    *tracker.Tracker
	logger log.Logger
}

// newLocalJobs opens the tracker's state (trkCfg.StatePath, or
// trkCfg.Store) and puts the gateway in front of it.
func newLocalJobs(api tracker.Upstream, reg prometheus.Registerer, trkCfg tracker.Config, gwCfg gateway.Config, logger log.Logger) (*localJobs, error) {
	trk, err := tracker.New(api, reg, trkCfg, logger)
	if err != nil {
		return nil, fmt.Errorf("agent jobs: %w", err)
	}
	// Agent projects a reload added since the start (a term that starts
	// later on replicas) are followed too.
	if err := trk.AddProjects(gwCfg.Projects); err != nil {
		_ = trk.Close()
		return nil, err
	}
	gw, err := gateway.New(trk, reg, gwCfg, logger)
	if err != nil {
		_ = trk.Close()
		return nil, fmt.Errorf("agent job gateway: %w", err)
	}
	return &localJobs{Gateway: gw, trk: trk, logger: logger}, nil
}

func (j *localJobs) Status() *status.Jobs { return j.trk.Status() }

func (j *localJobs) Follow(ids []string) error { return j.trk.AddProjects(ids) }

// SetProjects accepts jobs for ids, once followed: Follow has read their
// jobs, or it reads them now (a term started since Follow on replicas).
func (j *localJobs) SetProjects(ids []string) {
	if err := j.trk.AddProjects(ids); err != nil {
		level.Error(j.logger).Log("msg", "projects added by the reload do not accept agent jobs: their state could not be read", "err", err)
	}
	j.Gateway.SetProjects(j.trk.Accepts(ids))
}

func (j *localJobs) Run(ctx context.Context) {
	if err := j.trk.Run(ctx); err != nil {
		level.Error(j.logger).Log("msg", "agent job tracker stopped", "err", err)
	}
	j.Close()
}

// Close closes the tracker's state (Run does it when it ends).
func (j *localJobs) Close() {
	if err := j.trk.Close(); err != nil {
		level.Error(j.logger).Log("msg", "agent job tracker", "err", err)
	}
}

// replicatedJobs runs the gateway on the replica that holds it, with the
// job state in the shared Redis; projects are the agent projects, kept
// current by reloads for the terms that start later.
func replicatedJobs(shared *cluster.Client, cc config.Cluster, owner, listen string, api tracker.Upstream, reg prometheus.Registerer,
	trkCfg tracker.Config, gwCfg gateway.Config, projects *atomic.Pointer[[]string], logger log.Logger) (*jobleader.Leader, error) {
	advertise := cc.AdvertiseURL
	if advertise == "" {
		var err error
		if advertise, err = defaultAdvertiseURL(listen); err != nil {
			return nil, fmt.Errorf("agent job gateway on replicas: %w; set --cluster.advertise-url (cluster.advertise_url)", err)
		}
	}
	secret, err := cluster.ForwardSecret(&cc)
	if err != nil {
		return nil, fmt.Errorf("agent job gateway on replicas: %w", err)
	}
	start := func(ctx context.Context, st tracker.StateStore, treg prometheus.Registerer) (*jobleader.Term, error) {
		tc, gc := trkCfg, gwCfg
		tc.Store, gc.Projects = st, *projects.Load()
		j, err := newLocalJobs(api, treg, tc, gc, logger)
		if err != nil {
			return nil, err
		}
		tctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { // owned by the term: Stop waits for it
			defer close(done)
			j.Run(tctx)
		}()
		return &jobleader.Term{Handler: j, Status: j.Status, Follow: j.Follow, SetProjects: j.SetProjects, Stop: func() { cancel(); <-done }}, nil
	}
	return jobleader.New(jobleader.Options{Cluster: shared, Owner: owner, Advertise: advertise, LeaseDuration: cc.LeaseDuration,
		Start: start, ForwardSecret: secret, Registerer: reg, Logger: logger})
}

// defaultAdvertiseURL is http:// this host's first non-loopback address
// and the port of the listen address.
func defaultAdvertiseURL(listen string) (string, error) {
	_, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("listen address %q: %w", listen, err)
	}
	if _, err := strconv.Atoi(port); err != nil {
		return "", fmt.Errorf("listen address %q: no numeric port", listen)
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", fmt.Errorf("reading this host's addresses: %w", err)
	}
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && ip.IP.IsGlobalUnicast() {
			return "http://" + net.JoinHostPort(ip.IP.String(), port), nil
		}
	}
	return "", fmt.Errorf("no non-loopback address on this host")
}
