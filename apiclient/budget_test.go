package apiclient_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

// TestAnalyticsBudgetPacesEveryAttempt: every analytics attempt, retries
// included, is paid from the budget; job endpoints are not; a request the
// budget cannot pay for is never sent.
func TestAnalyticsBudgetPacesEveryAttempt(t *testing.T) {
	t.Parallel()
	fake, _, srv := startFake(t, fakeapi.Options{})
	b, err := budget.New(budget.Config{Limit: 4})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, srv.URL, func(cfg *apiclient.Config) { cfg.MaxRetries = 2; cfg.AnalyticsBudget = b })

	fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Status: 500, Remaining: 2})
	if _, err := c.VisitorsPage(testCtx(t), testProject, apiclient.VisitorsQuery{}); err != nil {
		t.Fatalf("third attempt after two 500s: %v", err)
	}
	if b.Spent() != 3 {
		t.Fatalf("budget spent %d after 3 attempts, want 3", b.Spent())
	}
	if _, err := c.GetJob(testCtx(t), testProject, "job_x"); apiclient.StatusCode(err) != 404 || b.Spent() != 3 {
		t.Fatalf("get job: %v; budget spent %d, want 3 (jobs are not analytics)", err, b.Spent())
	}
	if _, err := c.VisitorsPage(testCtx(t), testProject, apiclient.VisitorsQuery{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = c.VisitorsPage(ctx, testProject, apiclient.VisitorsQuery{})
	var ex *budget.ExhaustedError
	if !errors.As(err, &ex) {
		t.Fatalf("fifth request with a budget of 4 per hour: %v, want ExhaustedError", err)
	}
	if got := fake.Requests(fakeapi.Visitors); got != 4 {
		t.Errorf("the fake saw %d visitors requests, want 4", got)
	}
}

// TestAnalytics429ReachesBudget: a 429 from the analytics API halves the
// budget and pauses it for the Retry-After.
func TestAnalytics429ReachesBudget(t *testing.T) {
	t.Parallel()
	fake, _, srv := startFake(t, fakeapi.Options{})
	b, err := budget.New(budget.Config{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, srv.URL, func(cfg *apiclient.Config) { cfg.MaxRetries = 0; cfg.AnalyticsBudget = b })
	fake.SetFault(fakeapi.Visitors, fakeapi.Fault{Status: 429, RetryAfter: "120", Remaining: 1})
	if _, err := c.VisitorsPage(testCtx(t), testProject, apiclient.VisitorsQuery{}); apiclient.StatusCode(err) != 429 {
		t.Fatalf("err = %v, want 429", err)
	}
	if b.Effective() != 5 {
		t.Errorf("effective budget %d after a 429, want 5", b.Effective())
	}
	if until := time.Until(b.PausedUntil()); until < 110*time.Second || until > 120*time.Second {
		t.Errorf("paused for %s, want the Retry-After of 120s", until)
	}
}

// TestEveryAnalyticsEndpointPaysTheBudget: each analytics endpoint spends
// one request of the one budget and is measured under its endpoint label.
func TestEveryAnalyticsEndpointPaysTheBudget(t *testing.T) {
	t.Parallel()
	fake, _, srv := startFake(t, fakeapi.Options{Paths: 20})
	b, err := budget.New(budget.Config{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, srv.URL, func(cfg *apiclient.Config) { cfg.AnalyticsBudget = b })
	ctx := testCtx(t)
	r := apiclient.DateRange{DateFrom: "2025-03-08", DateTo: "2025-03-15"}
	calls := map[string]func() error{
		apiclient.EndpointViews: func() error { _, err := c.ViewsTotals(ctx, testProject, r); return err },
		apiclient.EndpointFeedbackByPage: func() error {
			_, err := c.FeedbackByPage(ctx, testProject, apiclient.FeedbackByPageQuery{DateRange: r, Limit: 10})
			return err
		},
		apiclient.EndpointFeedback:             func() error { _, err := c.FeedbackPage(ctx, testProject, r, 1, ""); return err },
		apiclient.EndpointSearches:             func() error { _, err := c.SearchesPage(ctx, testProject, r, 1, ""); return err },
		apiclient.EndpointAssistant:            func() error { _, err := c.AssistantPage(ctx, testProject, r, 1, ""); return err },
		apiclient.EndpointAssistantCallerStats: func() error { _, err := c.AssistantCallerStats(ctx, testProject, r); return err },
	}
	fakeNames := map[string]string{
		apiclient.EndpointViews: fakeapi.Views, apiclient.EndpointFeedbackByPage: fakeapi.FeedbackByPage,
		apiclient.EndpointFeedback: fakeapi.Feedback, apiclient.EndpointSearches: fakeapi.Searches,
		apiclient.EndpointAssistant: fakeapi.Assistant, apiclient.EndpointAssistantCallerStats: fakeapi.AssistantCallerStats,
	}
	for endpoint, call := range calls {
		spent := b.Spent()
		if err := call(); err != nil {
			t.Fatalf("%s: %v", endpoint, err)
		}
		if b.Spent() != spent+1 || fake.Requests(fakeNames[endpoint]) != 1 {
			t.Errorf("%s: budget spent %d -> %d, fake saw %d", endpoint, spent, b.Spent(), fake.Requests(fakeNames[endpoint]))
		}
	}
}

// TestFreeTextNeverInErrors: an undecodable answer of an endpoint that
// carries free text is not quoted in the error.
func TestFreeTextNeverInErrors(t *testing.T) {
	t.Parallel()
	_, srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"feedback": [{"id": "1", "comment": "PRIVATE jane@example.com", "createdAt": 5`))
	})
	c := newClient(t, srv.URL, nil)
	r := apiclient.DateRange{DateFrom: "2025-03-08", DateTo: "2025-03-15"}
	for what, err := range map[string]error{
		"feedback":  func() error { _, err := c.AllFeedback(testCtx(t), testProject, r, 10, 0); return err }(),
		"searches":  func() error { _, err := c.TopSearches(testCtx(t), testProject, r, 5, 0); return err }(),
		"assistant": func() error { _, err := c.AllTurns(testCtx(t), testProject, r, 10, 0); return err }(),
	} {
		if err == nil || strings.Contains(err.Error(), "PRIVATE") || strings.Contains(err.Error(), "example.com") {
			t.Errorf("%s: %v", what, err)
		}
	}
}
