package apiclient_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

func TestMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	m := apiclient.NewMetrics(reg)
	requests, duration := m.Collectors()
	fake, _, srv := startFake(t, fakeapi.Options{Paths: 5})
	c := newClient(t, srv.URL, func(cfg *apiclient.Config) { cfg.Metrics = m })
	ctx := testCtx(t)

	// Before any request every known combination reads 0: counts derived
	// from the client's endpoints, not written here (a new endpoint would
	// otherwise edit this test).
	endpoints := apiclient.Endpoints()
	combos := len(endpoints) * len(apiclient.PrecreatedCodes)
	if len(endpoints) < 10 || !slices.Contains(endpoints, apiclient.EndpointCreateJob) || !slices.Contains(endpoints, "visitors") {
		t.Fatalf("endpoints %v: the analytics and the operations' expected", endpoints)
	}
	if n := testutil.CollectAndCount(requests); n != combos {
		t.Errorf("%d request series before any request, want %d pre-created", n, combos)
	}
	if n := testutil.CollectAndCount(duration); n != len(endpoints) {
		t.Errorf("%d duration series, want %d (one per endpoint)", n, len(endpoints))
	}
	for _, e := range endpoints {
		for _, c := range apiclient.PrecreatedCodes {
			if got := testutil.ToFloat64(requests.WithLabelValues(e, c)); got != 0 {
				t.Errorf("{%s,%s} = %v before any request", e, c, got)
			}
		}
	}

	fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Status: http.StatusUnauthorized, Remaining: 1})
	v0 := m.Version()
	if _, err := c.VisitorsPage(ctx, testProject, apiclient.VisitorsQuery{}); apiclient.StatusCode(err) != 401 {
		t.Fatalf("err = %v, want 401", err)
	}
	v1 := m.Version()
	if _, err := c.VisitorsPage(ctx, testProject, apiclient.VisitorsQuery{}); err != nil {
		t.Fatal(err)
	}
	// /metrics encodes these series again only when Version moved.
	if v2 := m.Version(); v1 == v0 || v2 == v1 {
		t.Errorf("Version %d, then %d, %d after two requests: it must move with each", v0, v1, v2)
	}

	for _, tc := range []struct {
		endpoint, code string
		want           float64
	}{
		{"visitors", "200", 1},
		{"visitors", "401", 1},
		{"visitors", "429", 0},
		{"visitors", "error", 0},
		{"create_job", "200", 0},
		{"get_job", "503", 0},
	} {
		if got := testutil.ToFloat64(requests.WithLabelValues(tc.endpoint, tc.code)); got != tc.want {
			t.Errorf("mintlify_api_requests_total{endpoint=%q,code=%q} = %v, want %v", tc.endpoint, tc.code, got, tc.want)
		}
	}
	if n := testutil.CollectAndCount(requests); n != combos {
		t.Errorf("%d request series, want %d: 200 and 401 are pre-created", n, combos)
	}
	if got := histogramCount(t, reg, "visitors"); got != 2 {
		t.Errorf("visitors duration count = %d, want 2", got)
	}
	if got := histogramCount(t, reg, "create_job"); got != 0 {
		t.Errorf("create_job duration count = %d, want 0", got)
	}

	// Retries count: each attempt spends quota.
	fake.SetFault(fakeapi.GetJob, fakeapi.Fault{Status: 500})
	if _, err := c.GetJob(ctx, testProject, "job_1"); apiclient.StatusCode(err) != 500 {
		t.Fatalf("err = %v", err)
	}
	if got := testutil.ToFloat64(requests.WithLabelValues("get_job", "500")); got != 3 {
		t.Errorf(`{get_job,500} = %v, want 3 (MaxRetries 2 + 1)`, got)
	}
	// A code outside the pre-created set still gets its series.
	fake.SetFault(fakeapi.GetJob, fakeapi.Fault{Status: 418})
	_, _ = c.GetJob(ctx, testProject, "job_1")
	if got := testutil.ToFloat64(requests.WithLabelValues("get_job", "418")); got != 1 {
		t.Errorf(`{get_job,418} = %v, want 1`, got)
	}

	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) != 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
	for _, col := range []prometheus.Collector{requests, duration} {
		if problems, err := testutil.CollectAndLint(col); err != nil || len(problems) != 0 {
			t.Errorf("lint: %v %v", problems, err)
		}
	}
	if _, err := reg.Gather(); err != nil {
		t.Errorf("pedantic gather: %v", err)
	}
	// Classic buckets are there for alerts and dashboards.
	// The endpoints beside visitors and get_job were not called: all 0.
	var untouched strings.Builder
	for _, e := range endpoints {
		if e == apiclient.EndpointVisitors || e == apiclient.EndpointGetJob {
			continue
		}
		for _, code := range []string{"200", "401", "403", "429", "500", "502", "503", "error"} {
			fmt.Fprintf(&untouched, "mintlify_api_requests_total{code=%q,endpoint=%q} 0\n", code, e)
		}
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP mintlify_api_requests_total HTTP requests sent to the Mintlify API, retries included, by endpoint and status code ("error": no response).
# TYPE mintlify_api_requests_total counter
`+untouched.String()+`
mintlify_api_requests_total{code="200",endpoint="get_job"} 0
mintlify_api_requests_total{code="401",endpoint="get_job"} 0
mintlify_api_requests_total{code="403",endpoint="get_job"} 0
mintlify_api_requests_total{code="418",endpoint="get_job"} 1
mintlify_api_requests_total{code="429",endpoint="get_job"} 0
mintlify_api_requests_total{code="500",endpoint="get_job"} 3
mintlify_api_requests_total{code="502",endpoint="get_job"} 0
mintlify_api_requests_total{code="503",endpoint="get_job"} 0
mintlify_api_requests_total{code="error",endpoint="get_job"} 0
mintlify_api_requests_total{code="200",endpoint="visitors"} 1
mintlify_api_requests_total{code="401",endpoint="visitors"} 1
mintlify_api_requests_total{code="403",endpoint="visitors"} 0
mintlify_api_requests_total{code="429",endpoint="visitors"} 0
mintlify_api_requests_total{code="500",endpoint="visitors"} 0
mintlify_api_requests_total{code="502",endpoint="visitors"} 0
mintlify_api_requests_total{code="503",endpoint="visitors"} 0
mintlify_api_requests_total{code="error",endpoint="visitors"} 0
`), "mintlify_api_requests_total"); err != nil {
		t.Error(err)
	}
}

func TestNilMetricsAndNilRegisterer(t *testing.T) {
	t.Parallel()
	_, _, srv := startFake(t, fakeapi.Options{Paths: 5})
	// Metrics nil: the client still works.
	c := newClient(t, srv.URL, nil)
	if _, err := c.VisitorsPage(testCtx(t), testProject, apiclient.VisitorsQuery{}); err != nil {
		t.Fatal(err)
	}
	// A nil registerer: metrics are made but not registered.
	m := apiclient.NewMetrics(nil)
	c = newClient(t, srv.URL, func(cfg *apiclient.Config) { cfg.Metrics = m; cfg.Timeout = time.Minute })
	if _, err := c.VisitorsPage(testCtx(t), testProject, apiclient.VisitorsQuery{}); err != nil {
		t.Fatal(err)
	}
	requests, _ := m.Collectors()
	if got := testutil.ToFloat64(requests.WithLabelValues("visitors", "200")); got != 1 {
		t.Errorf("{visitors,200} = %v, want 1", got)
	}
}
