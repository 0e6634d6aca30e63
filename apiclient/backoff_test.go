package apiclient_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"":                     0,
		"0":                    0,
		"2":                    2 * time.Second,
		" 120 ":                2 * time.Minute,
		"-5":                   0,
		"soon":                 0,
		"1.5":                  0,
		"86400":                time.Hour, // capped
		"9223372037":           time.Hour, // seconds that overflow a Duration
		"99999999999999999999": 0,         // not an int64 at all: ignored
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Minute).Format(http.TimeFormat):     0,
		now.Add(48 * time.Hour).Format(http.TimeFormat):   time.Hour,
		"Fri, 14 Mar 2025 12:00:30 GMT":                   30 * time.Second,
		"Friday, 14-Mar-25 12:00:30 GMT":                  30 * time.Second, // RFC 850, which HTTP still allows
	} {
		if got := apiclient.ParseRetryAfter(in, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestBackoffGrowsJitteredAndCapped(t *testing.T) {
	t.Parallel()
	c, err := apiclient.New(apiclient.Config{BackoffBase: 100 * time.Millisecond, BackoffMax: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for attempt := range 200 {
		d := 100 * time.Millisecond
		for range attempt {
			if d >= 2*time.Second {
				break
			}
			d *= 2
		}
		d = min(d, 2*time.Second)
		for range 20 {
			got := c.Backoff(attempt)
			if got < d/2 || got > d {
				t.Fatalf("attempt %d: backoff %v outside [%v, %v]", attempt, got, d/2, d)
			}
		}
	}
}

// The backoff between retries is slept on the injected clock: a retry ten
// minutes out takes no real time, and the server sees it that late.
func TestBackoffSleepsOnInjectedClock(t *testing.T) {
	t.Parallel()
	clk := newClock()
	fake, rec, srv := startFake(t, fakeapi.Options{Paths: 5, Now: clk.Now})
	fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Status: 500, Remaining: 1})
	c := newClient(t, srv.URL, func(cfg *apiclient.Config) {
		cfg.MaxRetries, cfg.BackoffBase, cfg.BackoffMax = 1, 10*time.Minute, 10*time.Minute
		cfg.Now, cfg.Sleep = clk.Now, clk.Sleep
	})
	// No deadline: the fake clock's Sleep, like a real one, would fail
	// on a wait that outlasts it.
	if _, err := c.VisitorsPage(context.Background(), testProject, apiclient.VisitorsQuery{}); err != nil {
		t.Fatalf("retry after a 500: %v", err)
	}
	reqs := rec.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	if gap := reqs[1].at.Sub(reqs[0].at); gap < 5*time.Minute || gap > 10*time.Minute {
		t.Errorf("retry %v after the 500, want within [5m, 10m]", gap)
	}
}
