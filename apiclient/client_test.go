package apiclient_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

func TestNewValidatesConfig(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"ftp://x", "api.mintlify.com", "http://", "://x"} {
		if _, err := apiclient.New(apiclient.Config{BaseURL: u}); err == nil {
			t.Errorf("base URL %q accepted", u)
		}
	}
	if _, err := apiclient.New(apiclient.Config{MaxRetries: -1}); err == nil {
		t.Error("negative MaxRetries accepted")
	}
	if _, err := apiclient.New(apiclient.Config{}); err != nil {
		t.Errorf("zero config (defaults): %v", err)
	}
}

func TestBaseURLPrefixKept(t *testing.T) {
	t.Parallel()
	rec, srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"totals":{},"visitors":[],"hasMore":false}`)
	})
	c := newClient(t, srv.URL+"/proxy/mint/", nil)
	if _, err := c.VisitorsPage(testCtx(t), "p 1", apiclient.VisitorsQuery{Limit: 3}); err != nil {
		t.Fatal(err)
	}
	if got, want := rec.requests()[0].uri, "/proxy/mint/v1/analytics/p%201/visitors?limit=3"; got != want {
		t.Errorf("request URI %q, want %q", got, want)
	}
}

func TestReadsRetriedOnServerErrorsAndRateLimits(t *testing.T) {
	t.Parallel()
	for _, status := range []int{500, 502, 503, 504, 429} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			t.Parallel()
			fake, _, srv := startFake(t, fakeapi.Options{})
			fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Status: status})
			fake.SetFault(fakeapi.GetJob, fakeapi.Fault{Status: status})
			c := newClient(t, srv.URL, func(cfg *apiclient.Config) { cfg.MaxRetries = 3 })

			_, err := c.VisitorsPage(testCtx(t), testProject, apiclient.VisitorsQuery{})
			var apiErr *apiclient.APIError
			if !errors.As(err, &apiErr) || apiErr.StatusCode != status || apiErr.Endpoint != apiclient.EndpointVisitors {
				t.Fatalf("err = %#v, want *APIError for visitors with status %d", err, status)
			}
			if apiclient.StatusCode(err) != status {
				t.Errorf("StatusCode(err) = %d", apiclient.StatusCode(err))
			}
			if !strings.Contains(apiErr.Message, "injected fault") {
				t.Errorf("Message %q: upstream error text not kept", apiErr.Message)
			}
			if got := fake.Requests(fakeapi.Visitors); got != 4 {
				t.Errorf("visitors: %d requests, want MaxRetries+1 = 4", got)
			}

			_, err = c.GetJob(testCtx(t), testProject, "job_1")
			if apiclient.StatusCode(err) != status {
				t.Fatalf("get job: err = %v, want status %d", err, status)
			}
			if got := fake.Requests(fakeapi.GetJob); got != 4 {
				t.Errorf("get job: %d requests, want 4", got)
			}
		})
	}
}

func TestReadsNotRetriedOnClientErrors(t *testing.T) {
	t.Parallel()
	for _, status := range []int{400, 401, 403, 404, 422} {
		fake, _, srv := startFake(t, fakeapi.Options{})
		fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Status: status})
		c := newClient(t, srv.URL, func(cfg *apiclient.Config) { cfg.MaxRetries = 3 })
		_, err := c.VisitorsPage(testCtx(t), testProject, apiclient.VisitorsQuery{})
		if apiclient.StatusCode(err) != status {
			t.Errorf("%d: err = %v", status, err)
		}
		if got := fake.Requests(fakeapi.Visitors); got != 1 {
			t.Errorf("%d: %d requests, want 1 (not retried)", status, got)
		}
	}
}

func TestReadRetrySucceedsAfterTransientFault(t *testing.T) {
	t.Parallel()
	fake, _, srv := startFake(t, fakeapi.Options{Paths: 600})
	fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Status: 503, Remaining: 1})
	c := newClient(t, srv.URL, nil)
	v, err := c.AllVisitors(testCtx(t), testProject, week, 250, 0)
	if err != nil {
		t.Fatalf("AllVisitors: %v", err)
	}
	if len(v.Paths) != 600 {
		t.Errorf("%d paths, want 600", len(v.Paths))
	}
	if got := fake.Requests(fakeapi.Visitors); got != 4 {
		t.Errorf("%d requests, want 4 (one failed, then 3 pages)", got)
	}
	if v.Requests != 3 {
		t.Errorf("Visitors.Requests = %d, want 3 pages", v.Requests)
	}
}

func TestReadsRetriedOnTransportErrors(t *testing.T) {
	t.Parallel()
	// The server reads the request and drops the connection: the request
	// reached the server, which a read may survive and a create may not.
	hangUp := func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}
	rec, srv := serve(t, hangUp)
	c := newClient(t, srv.URL, func(cfg *apiclient.Config) { cfg.MaxRetries = 2 })

	if _, err := c.GetJob(testCtx(t), testProject, "job_1"); err == nil {
		t.Fatal("get job succeeded on a dropped connection")
	}
	if got := len(rec.requests()); got != 3 {
		t.Errorf("get job: %d requests, want MaxRetries+1 = 3", got)
	}

	rec2, srv2 := serve(t, hangUp)
	c2 := newClient(t, srv2.URL, func(cfg *apiclient.Config) { cfg.MaxRetries = 3 })
	_, err := c2.CreateJob(testCtx(t), testProject, "do it")
	if err == nil {
		t.Fatal("create job succeeded on a dropped connection")
	}
	if got := len(rec2.requests()); got != 1 {
		t.Errorf("create job: %d requests, want exactly 1: it may have been acted on", got)
	}
}

func TestRetriesBoundedByCallerContext(t *testing.T) {
	t.Parallel()
	fake, _, srv := startFake(t, fakeapi.Options{})
	fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Status: 500})
	c := newClient(t, srv.URL, func(cfg *apiclient.Config) {
		cfg.MaxRetries = 1000
		cfg.BackoffBase = time.Hour
		cfg.BackoffMax = time.Hour
	})
	// Time for the first request to be answered on a busy machine (the
	// error must keep its 500); the hour of backoff outlasts it anyway.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := c.VisitorsPage(ctx, testProject, apiclient.VisitorsQuery{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want it to wrap context.DeadlineExceeded", err)
	}
	if apiclient.StatusCode(err) != 500 {
		t.Errorf("err = %v, want it to keep the last APIError", err)
	}
	if got := fake.Requests(fakeapi.Visitors); got != 1 {
		t.Errorf("%d requests, want 1 (the backoff outlasts the context)", got)
	}
}

func TestCreateJobNeverRetriedOnceSent(t *testing.T) {
	t.Parallel()
	for _, f := range []fakeapi.Fault{{Status: 503}, {Status: 500}, {Status: 429}, {Status: 502, RetryAfter: "0"}} {
		fake, _, srv := startFake(t, fakeapi.Options{})
		fake.SetFault(fakeapi.CreateJob, f)
		c := newClient(t, srv.URL, func(cfg *apiclient.Config) { cfg.MaxRetries = 3 })
		_, err := c.CreateJob(testCtx(t), testProject, "write a page")
		if apiclient.StatusCode(err) != f.Status {
			t.Errorf("%+v: err = %v", f, err)
		}
		if got := fake.Requests(fakeapi.CreateJob); got != 1 {
			t.Errorf("%+v: %d requests, want exactly 1", f, got)
		}
		if n := fake.JobCount(); n != 0 {
			t.Errorf("%+v: %d jobs created", f, n)
		}
	}
}

func TestCreateJobRetriedOnDialError(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	m := apiclient.NewMetrics(reg)
	c := newClient(t, closedURL(t), func(cfg *apiclient.Config) {
		cfg.MaxRetries = 3
		cfg.Metrics = m
	})
	_, err := c.CreateJob(testCtx(t), testProject, "write a page")
	var opErr *net.OpError
	if !errors.As(err, &opErr) || opErr.Op != "dial" {
		t.Fatalf("err = %v, want one wrapping a *net.OpError from dial", err)
	}
	// Nothing reached a server, so retrying was safe: every attempt counts.
	requests, _ := m.Collectors()
	if got := testutil.ToFloat64(requests.WithLabelValues(apiclient.EndpointCreateJob, "error")); got != 4 {
		t.Errorf("create_job error attempts = %v, want MaxRetries+1 = 4", got)
	}
}

// retryAfterGap: a 429 with Retry-After once, then success, on a fake
// clock that the client's sleeps move. It returns the gap between the two
// requests as the server saw them on that clock, and the second's time.
func retryAfterGap(t *testing.T, retryAfter func(now time.Time) string) (time.Duration, time.Time) {
	t.Helper()
	clk := newClock()
	fake, rec, srv := startFake(t, fakeapi.Options{Paths: 5, Now: clk.Now})
	value := retryAfter(clk.Now())
	fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Status: 429, RetryAfter: value, Remaining: 1})
	c := newClient(t, srv.URL, func(cfg *apiclient.Config) { // backoff of a few ms: only Retry-After can explain a long gap
		cfg.Now, cfg.Sleep = clk.Now, clk.Sleep
	})
	if _, err := c.VisitorsPage(testCtx(t), testProject, apiclient.VisitorsQuery{}); err != nil {
		t.Fatalf("Retry-After %q: %v", value, err)
	}
	reqs := rec.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	return reqs[1].at.Sub(reqs[0].at), reqs[1].at
}

func TestRetryAfterSecondsHonoured(t *testing.T) {
	t.Parallel()
	// The backoff (a few ms) is part of the wait, not added to it.
	if gap, _ := retryAfterGap(t, func(time.Time) string { return "2" }); gap != 2*time.Second {
		t.Errorf("second request %v after the 429 with Retry-After: 2, want 2s", gap)
	}
}

func TestRetryAfterHTTPDateHonoured(t *testing.T) {
	t.Parallel()
	var date time.Time
	_, second := retryAfterGap(t, func(now time.Time) string {
		date = now.Add(3 * time.Second).UTC().Truncate(time.Second)
		return date.Format(http.TimeFormat)
	})
	if !second.Equal(date) {
		t.Errorf("second request at %v, want at the Retry-After date %v", second, date)
	}
}

func TestRetryAfterBeyondDeadlineSendsNothing(t *testing.T) {
	t.Parallel()
	for _, status := range []int{429, 503} {
		clk := newClock()
		fake, _, srv := startFake(t, fakeapi.Options{Paths: 5, Now: clk.Now})
		fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Status: status, RetryAfter: "30", Remaining: 1})
		c := newClient(t, srv.URL, func(cfg *apiclient.Config) {
			cfg.MaxRetries = 0
			cfg.Now, cfg.Sleep = clk.Now, clk.Sleep
		})

		_, err := c.VisitorsPage(testCtx(t), testProject, apiclient.VisitorsQuery{})
		var apiErr *apiclient.APIError
		if !errors.As(err, &apiErr) || apiErr.StatusCode != status || apiErr.RetryAfter != 30*time.Second {
			t.Fatalf("%d: first call: err = %v, want an APIError with RetryAfter 30s", status, err)
		}
		if until, want := c.ThrottledUntil(apiclient.EndpointVisitors), clk.Now().Add(30*time.Second); !until.Equal(want) {
			t.Errorf("%d: ThrottledUntil = %v, want %v", status, until, want)
		}

		// A deadline before the gate opens: fail now rather than sit out
		// the deadline (the clock's Sleep would fail with
		// DeadlineExceeded if the client tried to wait).
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, err = c.VisitorsPage(ctx, testProject, apiclient.VisitorsQuery{})
		cancel()
		var thr *apiclient.ThrottledError
		if !errors.As(err, &thr) {
			t.Fatalf("%d: second call: err = %v, want *ThrottledError", status, err)
		}
		if thr.Endpoint != apiclient.EndpointVisitors || !thr.Until.Equal(clk.Now().Add(30*time.Second)) {
			t.Errorf("%d: ThrottledError %+v", status, thr)
		}
		// It fails at once: it does not sit out the caller's deadline
		// retrying a wait that cannot end in time.
		if errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%d: err = %v: waited for the deadline instead of failing at once", status, err)
		}
		if got := fake.Requests(fakeapi.Visitors); got != 1 {
			t.Errorf("%d: %d requests, want 1: nothing may be sent before Retry-After", status, got)
		}

		// Once the clock passes the gate, the endpoint is open again.
		clk.Advance(30 * time.Second)
		if until := c.ThrottledUntil(apiclient.EndpointVisitors); !until.IsZero() {
			t.Errorf("%d: still throttled until %v once Retry-After passed", status, until)
		}
		if _, err := c.VisitorsPage(testCtx(t), testProject, apiclient.VisitorsQuery{}); err != nil {
			t.Errorf("%d: after Retry-After: %v", status, err)
		}
	}
}

func TestRetryAfterIgnoredOnOtherStatuses(t *testing.T) {
	t.Parallel()
	fake, _, srv := startFake(t, fakeapi.Options{Paths: 5})
	fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Status: 500, RetryAfter: "3600", Remaining: 1})
	c := newClient(t, srv.URL, nil)
	if _, err := c.VisitorsPage(testCtx(t), testProject, apiclient.VisitorsQuery{}); err != nil {
		t.Fatalf("err = %v; Retry-After only binds on 429 and 503", err)
	}
}

func TestRetryAfterIsPerEndpoint(t *testing.T) {
	t.Parallel()
	fake, _, srv := startFake(t, fakeapi.Options{Paths: 5})
	fake.SetFault(fakeapi.CreateJob, fakeapi.Fault{Status: 429, RetryAfter: "60"})
	c := newClient(t, srv.URL, nil)
	if _, err := c.CreateJob(testCtx(t), testProject, "x"); apiclient.StatusCode(err) != 429 {
		t.Fatalf("create job: err = %v, want 429", err)
	}
	if c.ThrottledUntil(apiclient.EndpointCreateJob).IsZero() {
		t.Error("create_job not throttled after its 429")
	}
	for _, e := range []string{apiclient.EndpointVisitors, apiclient.EndpointGetJob} {
		if !c.ThrottledUntil(e).IsZero() {
			t.Errorf("%s throttled by create_job's 429", e)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.VisitorsPage(ctx, testProject, apiclient.VisitorsQuery{}); err != nil {
		t.Errorf("visitors after a create_job 429: %v", err)
	}
	_, err := c.CreateJob(ctx, testProject, "x")
	var thr *apiclient.ThrottledError
	if !errors.As(err, &thr) || thr.Endpoint != apiclient.EndpointCreateJob {
		t.Errorf("second create job: err = %v, want *ThrottledError", err)
	}
	if got := fake.Requests(fakeapi.CreateJob); got != 1 {
		t.Errorf("%d create requests, want 1", got)
	}
}

func TestRequestHeaders(t *testing.T) {
	t.Parallel()
	_, rec, srv := startFake(t, fakeapi.Options{Paths: 5})
	c := newClient(t, srv.URL, nil)
	ctx := testCtx(t)
	if _, err := c.VisitorsPage(ctx, testProject, apiclient.VisitorsQuery{}); err != nil {
		t.Fatal(err)
	}
	job, err := c.CreateJob(ctx, testProject, "hello")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetJob(ctx, testProject, job.ID); err != nil {
		t.Fatal(err)
	}
	reqs := rec.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	for _, r := range reqs {
		if got := r.header.Get("Authorization"); got != "Bearer "+testKey {
			t.Errorf("%s %s: Authorization %q", r.method, r.uri, got)
		}
		if got := r.header.Get("User-Agent"); !strings.HasPrefix(got, "mintlify_exporter/") {
			t.Errorf("%s %s: User-Agent %q", r.method, r.uri, got)
		}
		if got := r.header.Get("Accept"); got != "application/json" {
			t.Errorf("%s %s: Accept %q", r.method, r.uri, got)
		}
	}
	if ct := reqs[1].header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("create job Content-Type %q", ct)
	}
	if reqs[1].method != http.MethodPost || reqs[0].method != http.MethodGet || reqs[2].method != http.MethodGet {
		t.Errorf("methods %s %s %s, want GET POST GET", reqs[0].method, reqs[1].method, reqs[2].method)
	}
}

func TestWrongKeyIs401(t *testing.T) {
	t.Parallel()
	fake, _, srv := startFake(t, fakeapi.Options{APIKey: "mint_right"})
	c := newClient(t, srv.URL, func(cfg *apiclient.Config) { cfg.APIKey = "mint_wrong" })
	_, err := c.VisitorsPage(testCtx(t), testProject, apiclient.VisitorsQuery{})
	var apiErr *apiclient.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
		t.Fatalf("err = %v, want a 401 APIError", err)
	}
	if got := fake.Requests(fakeapi.Visitors); got != 1 {
		t.Errorf("%d requests, want 1 (a 401 is not retried)", got)
	}
	if strings.Contains(err.Error(), "mint_wrong") {
		t.Errorf("error %q carries the key", err)
	}
}

// TestAPIKeyNeverInErrors makes servers echo the Authorization header back
// in every place a client might copy into an error.
func TestAPIKeyNeverInErrors(t *testing.T) {
	t.Parallel()
	const secret = "mint_SECRET123"
	// Every cut that keeps more than the public "mint_" prefix is a leak.
	leaks := func(s string) bool { return strings.Contains(s, "SECRET") }
	dead := closedURL(t)

	cases := map[string]http.HandlerFunc{
		"plain 500 body": func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "bad header: "+r.Header.Get("Authorization"), http.StatusInternalServerError)
		},
		"json error 401": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(401)
			fmt.Fprintf(w, `{"error":{"message":"token %s rejected"}}`, r.Header.Get("Authorization"))
		},
		"json message 403": func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(403)
			fmt.Fprintf(w, `{"message":"token %s rejected"}`, r.Header.Get("Authorization"))
		},
		"malformed 200": func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "<html>%s</html>", r.Header.Get("Authorization"))
		},
		// The key straddles the point where excerpts are cut.
		"key across the 512-byte excerpt cut": func(w http.ResponseWriter, r *http.Request) {
			key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			http.Error(w, strings.Repeat("x", 512-len(key)+1)+key+" and more", http.StatusBadGateway)
		},
		"key across the 128-byte decode excerpt cut": func(w http.ResponseWriter, r *http.Request) {
			key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			fmt.Fprint(w, strings.Repeat("x", 128-len(key)+1)+key+" and more")
		},
		// Echoes altered on the way: cut, JSON-escaped, URL-encoded.
		"key minus its last character": func(w http.ResponseWriter, r *http.Request) {
			key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"error":"unknown key %s"}`, key[:len(key)-1])
		},
		"key minus a character inside": func(w http.ResponseWriter, r *http.Request) {
			key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"error":"unknown key %s"}`, key[:8]+key[9:])
		},
		"JSON-escaped key": func(w http.ResponseWriter, r *http.Request) {
			var esc strings.Builder
			for _, c := range []byte(r.Header.Get("Authorization")) {
				fmt.Fprintf(&esc, `\u%04x`, c)
			}
			w.WriteHeader(401)
			fmt.Fprintf(w, `{"error":"bad header \"%s\""}`, esc.String())
		},
		"URL-encoded key": func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "see /login?next="+url.QueryEscape(r.Header.Get("Authorization"))+"%2F", http.StatusBadGateway)
		},
		// A redirect whose Location carries the key: it is not followed,
		// and the 3xx body that quotes the URL is redacted.
		"redirect": func(w http.ResponseWriter, r *http.Request) {
			key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			http.Redirect(w, r, dead+"/login?token="+key, http.StatusFound)
		},
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, srv := serve(t, h)
			c := newClient(t, srv.URL, func(cfg *apiclient.Config) {
				cfg.APIKey = secret
				cfg.MaxRetries = 1
			})
			ctx := testCtx(t)
			_, err1 := c.VisitorsPage(ctx, testProject, apiclient.VisitorsQuery{})
			_, err2 := c.AllVisitors(ctx, testProject, week, 250, 0)
			_, err3 := c.GetJob(ctx, testProject, "job_1")
			_, err4 := c.CreateJob(ctx, testProject, "p")
			for i, err := range []error{err1, err2, err3, err4} {
				if err == nil {
					t.Fatalf("call %d: no error", i)
				}
				if leaks(err.Error()) || leaks(fmt.Sprintf("%+v", err)) || leaks(fmt.Sprintf("%#v", err)) {
					t.Errorf("call %d: error carries the key: %v", i, err)
				}
				var apiErr *apiclient.APIError
				if errors.As(err, &apiErr) && (leaks(apiErr.Body) || leaks(apiErr.Message)) {
					t.Errorf("call %d: APIError fields carry the key: %+v", i, apiErr)
				}
			}
			if !strings.Contains(err1.Error(), "<redacted") {
				t.Errorf("error %q: want the key's place marked <redacted>", err1)
			}
			if name == "redirect" && apiclient.StatusCode(err1) != http.StatusFound {
				t.Errorf("redirect: err = %v, want an APIError with 302", err1)
			}
		})
	}
}

func TestErrorBodyExcerptBounded(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("é", 100_000) // multi-byte, so a careless cut splits a rune
	_, srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, big, http.StatusInternalServerError)
	})
	c := newClient(t, srv.URL, func(cfg *apiclient.Config) { cfg.MaxRetries = 0 })
	_, err := c.VisitorsPage(testCtx(t), testProject, apiclient.VisitorsQuery{})
	var apiErr *apiclient.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v", err)
	}
	if len(apiErr.Body) > 520 || len(err.Error()) > 600 {
		t.Errorf("excerpt of %d bytes, error text of %d: not bounded", len(apiErr.Body), len(err.Error()))
	}
	if !strings.HasPrefix(apiErr.Body, "éé") || !strings.HasSuffix(apiErr.Body, "…") {
		t.Errorf("excerpt %q: want the start of the body, marked as cut", apiErr.Body[:20])
	}
	if !utf8.ValidString(apiErr.Body) {
		t.Error("excerpt is not valid UTF-8")
	}
}

func TestMalformedJSONNotRetried(t *testing.T) {
	t.Parallel()
	fake, _, srv := startFake(t, fakeapi.Options{})
	fake.SetFault(fakeapi.Visitors, fakeapi.Fault{MalformedJSON: true})
	c := newClient(t, srv.URL, func(cfg *apiclient.Config) { cfg.MaxRetries = 3 })
	_, err := c.VisitorsPage(testCtx(t), testProject, apiclient.VisitorsQuery{})
	if err == nil {
		t.Fatal("malformed JSON accepted")
	}
	if got := fake.Requests(fakeapi.Visitors); got != 1 {
		t.Errorf("%d requests, want 1: the same bytes will not parse on a retry", got)
	}
	if !strings.Contains(err.Error(), `{\"totals\": {\"human\": 1,, <html>`) {
		t.Errorf("error %q: want an excerpt of the body", err)
	}

	// A long non-JSON body is cut.
	_, srv2 := serve(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, strings.Repeat("<html>", 10_000))
	})
	c2 := newClient(t, srv2.URL, nil)
	_, err = c2.VisitorsPage(testCtx(t), testProject, apiclient.VisitorsQuery{})
	if err == nil || len(err.Error()) > 400 {
		t.Errorf("error of %d bytes, want a bounded excerpt: %.200v", len(err.Error()), err)
	}
}

func TestResponseSizeLimit(t *testing.T) {
	t.Parallel()
	chunk := []byte(strings.Repeat(" ", 64<<10))
	// JSON whitespace without end: a client that reads it all never
	// finishes (or runs out of memory); one that reads through the limit
	// stops after 8 MiB.
	huge := func(status int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(status)
			for {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}
	}
	rec, srv := serve(t, huge(200))
	c := newClient(t, srv.URL, func(cfg *apiclient.Config) { cfg.MaxRetries = 2; cfg.Timeout = 20 * time.Second })
	_, err := c.VisitorsPage(testCtx(t), testProject, apiclient.VisitorsQuery{})
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("err = %v, want a size error", err)
	}
	if n := len(rec.requests()); n != 1 {
		t.Errorf("%d requests, want 1: a too-large body is not transient", n)
	}

	_, srv2 := serve(t, huge(500))
	c2 := newClient(t, srv2.URL, func(cfg *apiclient.Config) { cfg.MaxRetries = 0; cfg.Timeout = 20 * time.Second })
	_, err = c2.VisitorsPage(testCtx(t), testProject, apiclient.VisitorsQuery{})
	if apiclient.StatusCode(err) != 500 || len(err.Error()) > 600 {
		t.Errorf("huge error body: err of %d bytes, status %d", len(err.Error()), apiclient.StatusCode(err))
	}
}

func TestTimeoutPerAttempt(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	m := apiclient.NewMetrics(reg)
	fake, _, srv := startFake(t, fakeapi.Options{})
	fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Latency: 20 * time.Second})
	c := newClient(t, srv.URL, func(cfg *apiclient.Config) {
		cfg.Timeout = 100 * time.Millisecond
		cfg.MaxRetries = 0
		cfg.Metrics = m
	})
	start := time.Now()
	_, err := c.VisitorsPage(testCtx(t), testProject, apiclient.VisitorsQuery{})
	if err == nil {
		t.Fatal("no error from a response slower than the timeout")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v: the 100ms timeout did not cut the 20s response", d)
	}
	requests, _ := m.Collectors()
	if got := testutil.ToFloat64(requests.WithLabelValues(apiclient.EndpointVisitors, "error")); got != 1 {
		t.Errorf(`requests_total{visitors,error} = %v, want 1`, got)
	}
	if got := histogramCount(t, reg, apiclient.EndpointVisitors); got != 1 {
		t.Errorf("duration count = %d, want 1", got)
	}
}

// A redirect is not followed: following it would resend the Authorization
// header to wherever the Location points (Go keeps it for the same host on
// any port).
func TestRedirectIsNotFollowed(t *testing.T) {
	var reached atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
	}))
	defer target.Close()
	_, srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+r.URL.Path, http.StatusTemporaryRedirect)
	})
	c := newClient(t, srv.URL, nil)
	_, err := c.VisitorsPage(testCtx(t), testProject, apiclient.VisitorsQuery{})
	if got := apiclient.StatusCode(err); got != http.StatusTemporaryRedirect {
		t.Fatalf("err = %v (status %d), want an APIError with 307", err, got)
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the redirect target received %d requests", n)
	}
}
