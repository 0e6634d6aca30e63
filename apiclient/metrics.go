package apiclient

import (
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Endpoint names are used in metric labels and errors (README, Metrics,
// lists them as values of the endpoint label). Each endpoint is declared
// in its own file: an analytics one with analyticsEndpoint, an operation's
// with operationEndpoint.

// operationEndpoints are the endpoints that do not draw on the analytics
// quota, sorted: those of the kinds of operation, which have limits of
// their own.
var operationEndpoints []string

// operationEndpoint declares an endpoint of an operation: its requests
// do not pay the analytics budget.
func operationEndpoint(name string) string {
	i, _ := slices.BinarySearch(operationEndpoints, name)
	operationEndpoints = slices.Insert(operationEndpoints, i, name)
	return name
}

// AnalyticsEndpoints are the endpoints that draw on the organization's one
// analytics quota, sorted. Each endpoint file adds its own
// (analyticsEndpoint), so a new endpoint is in the list with its file.
var AnalyticsEndpoints []string

// analyticsEndpoint declares an analytics endpoint: its requests pay the
// analytics budget and its metrics are pre-created.
func analyticsEndpoint(name string) string {
	i, _ := slices.BinarySearch(AnalyticsEndpoints, name)
	AnalyticsEndpoints = slices.Insert(AnalyticsEndpoints, i, name)
	return name
}

// Endpoints are every endpoint the client names in its metrics: the
// analytics ones (sorted), then the operations'.
func Endpoints() []string { return slices.Concat(AnalyticsEndpoints, operationEndpoints) }

// precreatedCodes are pre-created so that alerts built on increase() see the
// first 401 or 429, which a series born at 1 would hide.
var precreatedCodes = []string{"200", "401", "403", "429", "500", "502", "503", "error"}

// Metrics instruments the client's requests. Every attempt counts, retries
// included, because each one spends upstream quota.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// rowsSkipped counts the rows of answers that could not be read.
	rowsSkipped *prometheus.CounterVec
	// version counts the requests observed, so that the families can be
	// encoded once per change rather than once per scrape (Version).
	version atomic.Uint64
}

// NewMetrics creates the client metrics and registers them with reg (when
// not nil; Metrics is a collector of its own families).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mintlify_api_requests_total",
			Help: "HTTP requests sent to the Mintlify API, retries included, by endpoint and status code (\"error\": no response).",
		}, []string{"endpoint", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:                            "mintlify_api_request_duration_seconds",
			Help:                            "Duration of HTTP requests to the Mintlify API, by endpoint.",
			Buckets:                         []float64{.025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
			NativeHistogramBucketFactor:     1.1,
			NativeHistogramMaxBucketNumber:  100,
			NativeHistogramMinResetDuration: time.Hour,
		}, []string{"endpoint"}),
		rowsSkipped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mintlify_api_rows_skipped_total",
			Help: "Rows and values of Mintlify API answers that could not be read, skipped (the walk stands), by endpoint and reason.",
		}, []string{"endpoint", "reason"}),
	}
	for _, e := range rowEndpoints {
		for _, r := range SkipReasons {
			m.rowsSkipped.WithLabelValues(e, r)
		}
	}
	for _, e := range Endpoints() {
		m.duration.WithLabelValues(e)
		for _, c := range precreatedCodes {
			m.requests.WithLabelValues(e, c)
		}
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.duration, m.rowsSkipped)
	}
	return m
}

func (m *Metrics) observe(endpoint string, status int, d time.Duration) {
	if m == nil {
		return
	}
	code := "error"
	if status > 0 {
		code = strconv.Itoa(status)
	}
	m.requests.WithLabelValues(endpoint, code).Inc()
	m.duration.WithLabelValues(endpoint).Observe(d.Seconds())
	m.version.Add(1) // after the change: a reader of the new version sees it
}

// rowEndpoints are the endpoints whose answers hold values read one by
// one (rows, totals, callers): their skipped counts are pre-created.
var rowEndpoints = []string{EndpointAssistant, EndpointAssistantCallerStats, EndpointFeedback, EndpointFeedbackByPage, EndpointSearches, EndpointViews, EndpointVisitors}

func (m *Metrics) skipped(endpoint string, s Skips) {
	if m == nil || len(s) == 0 {
		return
	}
	for reason, n := range s {
		m.rowsSkipped.WithLabelValues(endpoint, reason).Add(float64(n))
	}
	m.version.Add(1)
}

// Version changes after every request observed, and only then: what
// Collect gives is the same for as long as Version is.
func (m *Metrics) Version() uint64 { return m.version.Load() }

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.requests.Describe(ch)
	m.duration.Describe(ch)
	m.rowsSkipped.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.requests.Collect(ch)
	m.duration.Collect(ch)
	m.rowsSkipped.Collect(ch)
}
