package orgs

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// TestKeyExpiryGauge: each organization with a configured expiry has its
// gauge, one without has none, and a new configuration (a reload) changes,
// adds and removes them; a key already expired is warned about when the
// configuration applies.
func TestKeyExpiryGauge(t *testing.T) {
	clock := testutil.NewClock(time.Date(2027, 2, 20, 12, 0, 0, 0, time.UTC))
	var logs bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	s := New(ctx, Settings{Budget: budget.Config{Now: clock.Now}}, log.NewLogfmtLogger(&logs))
	t.Cleanup(func() { cancel(); s.Wait() })
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(s.KeyExpiry())
	org := func(name, expires string) config.Organization {
		o := config.Organization{Name: name, APIKey: "mint_" + name, AnalyticsBudget: 10}
		if expires != "" {
			var err error
			if o.APIKeyExpires, err = config.ParseKeyExpiry(expires); err != nil {
				t.Fatal(err)
			}
		}
		return o
	}
	check := func(want string) {
		t.Helper()
		const head = "# HELP mintlify_api_key_expiry_timestamp_seconds Time the organization's Mintlify API key expires, as configured (api_key_expires or --mintlify.api-key-expires).\n" +
			"# TYPE mintlify_api_key_expiry_timestamp_seconds gauge\n"
		if want != "" {
			want = head + want
		}
		if err := promtest.GatherAndCompare(reg, strings.NewReader(want), "mintlify_api_key_expiry_timestamp_seconds"); err != nil {
			t.Error(err)
		}
	}

	if err := s.Apply(&config.Config{Organizations: []config.Organization{org("acme", "2027-02-24"), org("beta", "")}}); err != nil {
		t.Fatal(err)
	}
	check(`mintlify_api_key_expiry_timestamp_seconds{organization="acme"} 1.8034272e+09` + "\n")
	if probs, err := promtest.CollectAndLint(s.KeyExpiry()); err != nil || len(probs) > 0 {
		t.Errorf("lint: %v %v", probs, err)
	}
	if strings.Contains(logs.String(), "expired") {
		t.Errorf("a key valid for four more days was warned about:\n%s", logs.String())
	}

	// A reload: acme's key rotated (a later date, to the second), beta's
	// date given, and a new organization without one.
	if err := s.Apply(&config.Config{Organizations: []config.Organization{
		org("acme", "2027-05-25T10:30:15Z"), org("beta", "2027-02-20T11:00:00Z"), org("gamma", ""),
	}}); err != nil {
		t.Fatal(err)
	}
	check(`mintlify_api_key_expiry_timestamp_seconds{organization="acme"} 1.811241015e+09` + "\n" +
		`mintlify_api_key_expiry_timestamp_seconds{organization="beta"} 1.8031212e+09` + "\n")
	if !strings.Contains(logs.String(), `msg="the API key has expired, as configured (api_key_expires); requests will be rejected with 401 until it is replaced" organization=beta expired=2027-02-20T11:00:00Z`) ||
		strings.Contains(logs.String(), "organization=acme expired") {
		t.Errorf("want one warning, for beta's expired key:\n%s", logs.String())
	}

	// Dates removed, one organization removed: no series left.
	if err := s.Apply(&config.Config{Organizations: []config.Organization{org("acme", ""), org("gamma", "")}}); err != nil {
		t.Fatal(err)
	}
	check("")
}
