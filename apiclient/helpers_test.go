package apiclient_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

const (
	testKey     = "mint_test_key_0123"
	testProject = "docs"
)

// fixedNow keeps the fake's data stable between requests of one test (its
// counts move with the time of day).
func fixedNow() time.Time { return time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC) }

type clock = testutil.Clock

func newClock() *clock { return testutil.NewClock(fixedNow()) }

// seen is one request as it arrived at the test server.
type seen struct {
	at     time.Time
	method string
	uri    string // RequestURI, exactly as sent
	header http.Header
	body   []byte
}

// recorder sits in front of a handler (usually the fake) and records every
// request. When intercept is set and returns true for the n-th request
// (0-based), the request is answered by intercept and never reaches next.
type recorder struct {
	next      http.Handler
	intercept func(n int, w http.ResponseWriter, r *http.Request) bool
	// now stamps each request (the fake's clock in startFake; nil: time.Now).
	now func() time.Time

	mu   sync.Mutex
	reqs []seen
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	at := time.Now()
	if rec.now != nil {
		at = rec.now()
	}
	rec.mu.Lock()
	n := len(rec.reqs)
	rec.reqs = append(rec.reqs, seen{at: at, method: r.Method, uri: r.RequestURI, header: r.Header.Clone(), body: body})
	rec.mu.Unlock()
	if rec.intercept != nil && rec.intercept(n, w, r) {
		return
	}
	if rec.next == nil {
		http.NotFound(w, r)
		return
	}
	rec.next.ServeHTTP(w, r)
}

func (rec *recorder) requests() []seen {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]seen(nil), rec.reqs...)
}

// startFake serves a fake API (APIKey testKey, project testProject unless
// opts says otherwise) behind a recorder.
func startFake(t *testing.T, opts fakeapi.Options) (*fakeapi.Server, *recorder, *httptest.Server) {
	t.Helper()
	if opts.APIKey == "" {
		opts.APIKey = testKey
	}
	if opts.Projects == nil {
		opts.Projects = []string{testProject}
	}
	if opts.Now == nil {
		opts.Now = fixedNow
	}
	fake := fakeapi.New(opts)
	rec := &recorder{next: fake, now: opts.Now}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	return fake, rec, srv
}

// serve starts a plain handler behind a recorder.
func serve(t *testing.T, h http.HandlerFunc) (*recorder, *httptest.Server) {
	t.Helper()
	rec := &recorder{next: h}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	return rec, srv
}

// newClient returns a client for baseURL with test-friendly defaults: short
// backoff, 2 retries, key testKey. mod may change the config.
func newClient(t *testing.T, baseURL string, mod func(*apiclient.Config)) *apiclient.Client {
	t.Helper()
	cfg := apiclient.Config{
		BaseURL:     baseURL,
		APIKey:      testKey,
		Timeout:     10 * time.Second,
		MaxRetries:  2,
		BackoffBase: time.Millisecond,
		BackoffMax:  5 * time.Millisecond,
	}
	if mod != nil {
		mod(&cfg)
	}
	c, err := apiclient.New(cfg)
	if err != nil {
		t.Fatalf("apiclient.New: %v", err)
	}
	return c
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// closedURL returns the URL of a loopback port that nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr
}

// gathered returns the metric family name from reg, or nil.
func gathered(t *testing.T, reg prometheus.Gatherer, name string) *dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf
		}
	}
	return nil
}

// histogramCount returns the sample count of the duration histogram for an
// endpoint.
func histogramCount(t *testing.T, reg prometheus.Gatherer, endpoint string) uint64 {
	t.Helper()
	mf := gathered(t, reg, "mintlify_api_request_duration_seconds")
	if mf == nil {
		t.Fatal("mintlify_api_request_duration_seconds not gathered")
	}
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "endpoint" && l.GetValue() == endpoint {
				return m.GetHistogram().GetSampleCount()
			}
		}
	}
	t.Fatalf("no duration series for endpoint %q", endpoint)
	return 0
}
