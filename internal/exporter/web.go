package exporter

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/version"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/collector"
	"github.com/mintlify-exporter/mintlify_exporter/internal/logging"
	"github.com/mintlify-exporter/mintlify_exporter/internal/orgs"
	"github.com/mintlify-exporter/mintlify_exporter/internal/refresh"
	"github.com/mintlify-exporter/mintlify_exporter/internal/server"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sharedredis"
	"github.com/mintlify-exporter/mintlify_exporter/internal/snapstore"
	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
)

// web is what the HTTP server serves: every subsystem's routes, and what
// the status page reads of each.
type web struct {
	o   *Options
	reg *prometheus.Registry
	// client is the API client's metrics, encoded apart from reg
	// (metricsOptions.Client).
	client   *apiclient.Metrics
	front    *server.AuthFront
	reloader *Reloader
	set      *orgs.Set
	jobs     *jobsPart
	shared   *sharedredis.Client // nil without replicas
	owner    string
	// configFile is the configuration file ("" with flags alone).
	configFile string
	sandbox    bool
	started    time.Time
	// encoded encodes the analytics for /metrics; the status page shows
	// the views it published (set by newServer).
	encoded *collector.Encoded
	// snaps are the state directory's snapshots (nil: none are kept, as
	// with replicas), where the encoder keeps what it encoded.
	snaps *snapstore.Root
}

// newServer builds the server on w's routes; the metrics' encoder runs
// owned by wg until ctx ends.
func newServer(ctx context.Context, wg *sync.WaitGroup, w *web, loggers logging.Loggers) (*server.Server, error) {
	// With replicas, only the primary exports the data they all hold, so
	// that scraping every replica counts each series once.
	var primary func() bool
	if w.shared != nil {
		primary = w.shared.IsPrimary
	}
	w.encoded = collector.NewEncoded(w.set, loggers.Logger)
	if w.snaps != nil {
		w.encoded.SetStore(w.snaps.Encoded())
	}
	w.encoded.Prime() // before the server listens: see Prime
	wg.Go(func() { w.encoded.Run(ctx, collector.DefaultEncodeInterval) })
	return server.New(w.o.Server, server.Routes{
		Metrics: metricsHandler(ctx, wg, w.reg, metricsOptions{
			Encoded: w.encoded, Views: w.set, Budgets: w.set.Budgets, Client: w.client, Primary: primary, MaxRequests: w.o.Server.MaxRequests, Logger: loggers.Logger,
		}),
		API:     w.jobs.handler(),
		Reload:  w.reloader.Handler(),
		Front:   w.front,
		Replica: w.jobs.replica,
		Status:  status.Handler(w.report, status.Options{}),
	}, loggers.Logger, loggers.Slog)
}

// report is the status page's: the exporter, its configuration's last
// reload, the organizations and their demands, the replica's role, the
// jobs and the links.
func (w *web) report(context.Context) status.Report {
	r := status.Report{Exporter: status.Exporter{Version: version.Version, Revision: version.Revision, StartedAt: w.started, Sandbox: w.sandbox}}
	if w.configFile != "" {
		st := w.reloader.State()
		r.Exporter.Config = &status.Config{File: w.configFile, LastReloadSuccessful: st.Successful, LastReloadAt: st.LastAt, LastSuccessAt: st.LastSuccessAt}
	}
	var published []refresh.View
	if w.encoded != nil {
		published = w.encoded.Published()
	}
	r.Organizations, r.Demands = w.set.Status(published)
	if w.shared != nil {
		r.Exporter.Cluster = &status.Cluster{Owner: w.owner, Primary: w.shared.IsPrimary(), RedisUp: w.shared.Up()}
	}
	w.jobs.report(&r, w.o.Server.TelemetryPath)
	return r
}
