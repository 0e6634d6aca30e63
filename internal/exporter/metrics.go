package exporter

import (
	"context"
	"net/http"
	"sync"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/collector"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/logging"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sharedredis"
)

// metricsOptions are what the /metrics handler serves beside reg.
type metricsOptions struct {
	// Views are the plans' snapshots and status; Budgets their budgets.
	Views   collector.ViewSource
	Budgets func() []*budget.Budget
	// Client, when set, are the API client's metrics: served on every
	// replica, encoded once per request observed (collector.Versioned).
	Client *apiclient.Metrics
	// Primary, when set (replicas), reads this replica's role: the shared
	// analytics (status, data, budgets) are served on the primary alone.
	Primary     func() bool
	MaxRequests int
	Logger      log.Logger
	// Encoded, when set, is the analytics' encoder (its Run owned by the
	// caller); nil: one over Views, run until ctx ends.
	Encoded *collector.Encoded
}

// metricsHandler returns the /metrics handler over reg (the exporter's own
// collectors, gathered per scrape) and the analytics encoded by a
// collector.Encoded, which it keeps current off the scrape path until ctx
// ends (owned by wg).
func metricsHandler(ctx context.Context, wg *sync.WaitGroup, reg *prometheus.Registry, o metricsOptions) http.Handler {
	encoded := o.Encoded
	if encoded == nil {
		encoded = collector.NewEncoded(o.Views, o.Logger)
		encoded.Prime() // before the server listens: see Prime
		wg.Go(func() { encoded.Run(ctx, collector.DefaultEncodeInterval) })
	}
	var src collector.Source
	if o.Primary != nil {
		// Replicas: the budgets go with the data, on the primary alone,
		// decided by the one read of the role a scrape makes.
		budgets := prometheus.NewRegistry()
		budgets.MustRegister(budget.Set(o.Budgets))
		src = sharedAnalytics{analytics: encoded, budgets: budgets, primary: o.Primary, role: true}
	} else {
		// One exporter: the budgets are gathered with reg, one registry
		// gathered a scrape rather than two (each spends goroutines and
		// 32 kB of channels).
		reg.MustRegister(budget.Set(o.Budgets))
		src = sharedAnalytics{analytics: encoded, primary: func() bool { return true }}
	}
	if o.Client != nil {
		clientReg := prometheus.NewRegistry()
		clientReg.MustRegister(o.Client)
		src = withVersioned{Source: src, v: collector.NewVersioned(clientReg, o.Client.Version), logger: o.Logger}
	}
	return promhttp.InstrumentMetricHandler(reg, collector.NewHandler(reg, src, collector.Opts{
		ErrorLog:            logging.PromHTTPErrorLogger{Logger: o.Logger},
		MaxRequestsInFlight: o.MaxRequests,
		Registry:            reg,
	}))
}

// sharedAnalytics are the analytics every replica shares (status, data,
// budgets), served when primary says so. A scrape reads the role once:
// mintlify_exporter_cluster_primary (with role) and whether the analytics
// are served come from that one read, so that a scrape during a change of
// primary never shows the data with the gauge at 0, nor the gauge at 1
// without the data.
type sharedAnalytics struct {
	analytics collector.Source
	budgets   prometheus.Gatherer // nil when gathered with the registry
	primary   func() bool
	role      bool // export mintlify_exporter_cluster_primary
}

func (s sharedAnalytics) Answer(e collector.Encoding) collector.Answer {
	primary := s.primary()
	g := s.roleGatherer(primary)
	if !primary {
		return collector.Answer{Gatherer: g}
	}
	a := s.analytics.Answer(e)
	if s.budgets != nil {
		g = append(g, s.budgets)
	}
	if a.Gatherer != nil {
		g = append(g, a.Gatherer)
	}
	if len(g) == 0 {
		return collector.Answer{Families: a.Families}
	}
	return collector.Answer{Gatherer: g, Families: a.Families}
}

func (s sharedAnalytics) Gatherer() prometheus.Gatherer {
	primary := s.primary()
	g := s.roleGatherer(primary)
	if primary {
		if s.budgets != nil {
			g = append(g, s.budgets)
		}
		g = append(g, s.analytics.Gatherer())
	}
	return g
}

func (s sharedAnalytics) roleGatherer(primary bool) prometheus.Gatherers {
	if !s.role {
		return prometheus.Gatherers{}
	}
	return prometheus.Gatherers{prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		return []*dto.MetricFamily{sharedredis.PrimaryFamily(primary)}, nil
	})}
}

// withVersioned adds v's families to what Source serves.
type withVersioned struct {
	collector.Source
	v      *collector.Versioned
	logger log.Logger
}

func (w withVersioned) Answer(e collector.Encoding) collector.Answer {
	a := w.Source.Answer(e)
	fams, err := w.v.Families(e)
	if err != nil && w.logger != nil {
		level.Error(w.logger).Log("msg", "error gathering the API client's metrics", "err", err)
	}
	a.Families = append(fams[:len(fams):len(fams)], a.Families...)
	return a
}

func (w withVersioned) Gatherer() prometheus.Gatherer {
	return prometheus.Gatherers{w.v.Gatherer(), w.Source.Gatherer()}
}
