package status

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
)

// TestClassifyRealErrors classifies the errors the real client returns over
// HTTP, so a change in how it wraps them shows here.
func TestClassifyRealErrors(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		project := strings.Split(strings.TrimPrefix(r.URL.Path, "/v1/analytics/"), "/")[0]
		w.Header().Set("Content-Type", "application/json")
		switch project {
		case "ok":
			_, _ = w.Write([]byte(`{"totals":{"human":1,"ai":0,"total":1},"visitors":[],"hasMore":false}`))
		case "pages":
			_, _ = w.Write([]byte(`{"totals":{"human":1,"ai":0,"total":1},"visitors":[{"path":"/a","human":1,"ai":0,"total":1}],"hasMore":true}`))
		case "garbage":
			_, _ = w.Write([]byte(`<html>secret page</html>`))
		case "wrongtype":
			// Totals of the wrong type are skipped (the walk stands); a
			// list that is not one fails the page.
			_, _ = w.Write([]byte(`{"totals":"many","visitors":"many","hasMore":false}`))
		case "slow":
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		case "limited":
			w.Header().Set("Retry-After", "30")
			http.Error(w, `{"error":"slow down"}`, http.StatusTooManyRequests)
		default: // the project is the status code
			code := map[string]int{"e401": 401, "e403": 403, "e404": 404, "e400": 400, "e500": 500, "e503": 503}[project]
			http.Error(w, `{"error":"no, and here is some free text"}`, code)
		}
	}))
	defer api.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()

	client := func(base string, b *budget.Budget) *apiclient.Client {
		cfg := apiclient.Config{BaseURL: base, APIKey: "k", Timeout: 200 * time.Millisecond}
		if b != nil {
			cfg.AnalyticsBudget = b
		}
		c, err := apiclient.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	walk := func(c *apiclient.Client, ctx context.Context, project string) error {
		_, err := c.AllVisitors(ctx, project, apiclient.VisitorsQuery{}, 10, 1)
		return err
	}
	ctx := context.Background()
	for project, want := range map[string]string{
		"ok": ResultOK, "pages": ResultPagination, "garbage": ResultMalformed, "wrongtype": ResultMalformed,
		"slow": ResultTimeout, "limited": ResultRateLimited, "e401": ResultUnauthorized, "e403": ResultUnauthorized,
		"e404": ResultNotFound, "e400": ResultClientError, "e500": ResultServerError, "e503": ResultServerError,
	} {
		// A client each: the 429 closes a client's gate for 30s.
		if got := Classify(walk(client(api.URL, nil), ctx, project)); got != want {
			t.Errorf("project %s: %s, want %s", project, got, want)
		}
	}
	// After a 429 the client's gate is closed: a caller whose deadline ends
	// before it opens is told so without a request.
	c := client(api.URL, nil)
	_ = walk(c, ctx, "limited")
	// Seconds, not milliseconds: a deadline passed before the walk starts
	// (a busy machine) would be a timeout; the gate stays closed for 30s.
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	if got := Classify(walk(c, short, "ok")); got != ResultRateLimited {
		t.Errorf("throttled: %s, want %s", got, ResultRateLimited)
	}
	cancel()

	if got := Classify(walk(client(closed.URL, nil), ctx, "ok")); got != ResultNetwork {
		t.Errorf("closed server: %s, want %s", got, ResultNetwork)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if got := Classify(walk(client(api.URL, nil), canceled, "ok")); got != ResultCanceled {
		t.Errorf("canceled: %s, want %s", got, ResultCanceled)
	}

	b, err := budget.New(budget.Config{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	spent := client(api.URL, b)
	if err := walk(spent, ctx, "ok"); err != nil {
		t.Fatal(err)
	}
	if got := Classify(walk(spent, budget.WithoutWaiting(ctx), "ok")); got != ResultBudgetExhausted {
		t.Errorf("spent budget: %s, want %s", got, ResultBudgetExhausted)
	}
	short, cancel = context.WithTimeout(ctx, 2*time.Second) // the next request of the budget is an hour away
	defer cancel()
	if got := Classify(walk(spent, short, "ok")); got != ResultBudgetExhausted {
		t.Errorf("spent budget, short deadline: %s, want %s", got, ResultBudgetExhausted)
	}
	if got := Classify(errors.Join(&budget.ExhaustedError{}, context.DeadlineExceeded)); got != ResultBudgetExhausted {
		t.Errorf("budget wait cut by its context: %s, want %s", got, ResultBudgetExhausted)
	}
	if got := Classify(errors.New("something else")); got != ResultError {
		t.Errorf("other: %s, want %s", got, ResultError)
	}
}

func TestEveryResultIsExplained(t *testing.T) {
	for _, r := range []string{ResultOK, ResultBudgetExhausted, ResultRateLimited, ResultUnauthorized, ResultNotFound,
		ResultClientError, ResultServerError, ResultTimeout, ResultCanceled, ResultPagination, ResultMalformed, ResultNetwork, ResultError} {
		if resultHelp[r] == "" || category(r) != r {
			t.Errorf("result %q: help %q, category %q", r, resultHelp[r], category(r))
		}
	}
	for in, want := range map[string]string{
		"": "", "cursor_loop": "cursor_loop", "HTTP 500": ResultError, "mintlify API: boom": ResultError,
		"Timeout": ResultError, strings.Repeat("a", 33): ResultError,
	} {
		if got := category(in); got != want {
			t.Errorf("category(%q) = %q, want %q", in, got, want)
		}
	}
}
