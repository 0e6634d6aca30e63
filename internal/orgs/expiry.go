package orgs

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// keyExpiryDesc: the API does not say when a key expires (an expired key
// just answers 401), so the exporter exports what the configuration says,
// for an alert before the key stops working (MintlifyAPIKeyExpiresSoon).
var keyExpiryDesc = prometheus.NewDesc("mintlify_api_key_expiry_timestamp_seconds",
	"Time the organization's Mintlify API key expires, as configured (api_key_expires or --mintlify.api-key-expires).",
	[]string{"organization"}, nil)

// KeyExpiry is a prometheus.Collector of the configured expiry of each
// organization's key; an organization without one has no series. Every
// replica exports it: it is the replica's own configuration.
func (s *Set) KeyExpiry() prometheus.Collector { return keyExpiry{s} }

type keyExpiry struct{ s *Set }

// Describe implements prometheus.Collector.
func (keyExpiry) Describe(ch chan<- *prometheus.Desc) { ch <- keyExpiryDesc }

// Collect implements prometheus.Collector.
func (k keyExpiry) Collect(ch chan<- prometheus.Metric) {
	k.s.mu.RLock()
	defer k.s.mu.RUnlock()
	for _, o := range k.s.orgs {
		if !o.keyExpires.IsZero() {
			ch <- prometheus.MustNewConstMetric(keyExpiryDesc, prometheus.GaugeValue, unixSeconds(o.keyExpires), o.name)
		}
	}
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
