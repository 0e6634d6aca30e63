package refresh

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

// TestRunWithinBudget runs the scheduler's own loop (Run) for seven hours
// of fake time in a synctest bubble, where every timer of the scheduler,
// the budget and the client fires on the bubble's clock, against a fake API
// that enforces an organization quota of 14 per hour: refreshes of
// 2 projects × 3 pages × 3 windows never get a 429, never exceed the budget
// of 12 in any rolling hour, and today's window is refreshed over and over.
// The requests go through the client's whole HTTP path to the fake's
// handler in-process (a socket would keep the bubble from ever idling).
func TestRunWithinBudget(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const window = time.Hour
		fake := fakeapi.New(fakeapi.Options{APIKey: simKey, Paths: 600, AnalyticsBudget: 14, AnalyticsWindow: window})
		log := &sendLog{}
		b, err := budget.New(budget.Config{Limit: 12, Window: window})
		if err != nil {
			t.Fatal(err)
		}
		client, err := apiclient.New(apiclient.Config{BaseURL: "http://fake.invalid", APIKey: simKey, AnalyticsBudget: b, MaxRetries: 1,
			HTTPClient: &http.Client{Transport: handlerTransport{log.wrap(time.Now, fake)}}})
		if err != nil {
			t.Fatal(err)
		}
		var windows []analytics.Window
		for _, w := range []string{"1d", "7d", "30d"} {
			win, _ := analytics.ParseWindow(w)
			windows = append(windows, win)
		}
		s, err := New(client, b, planConfig{Projects: []string{"a", "b"}, Windows: windows, Config: Config{PageSize: apiclient.MaxPageSize, MinInterval: time.Minute, FinalDayDelay: -1}}.build(), nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 7*window)
		defer cancel()
		s.Run(ctx) // returns when ctx ends, with every walk stopped

		log.mu.Lock()
		times := slices.Clone(log.times)
		log.mu.Unlock()
		if n, at := maxInWindow(times, window); n > 12 {
			t.Errorf("%d requests in the hour up to %s, budget 12", n, at.Format(time.StampMilli))
		}
		if r := fake.AnalyticsRejections(); r != 0 {
			t.Errorf("%d requests answered 429", r)
		}
		if len(times) < 4*12 {
			t.Errorf("only %d requests in 7 hours of a budget of 12: the scheduler idled", len(times))
		}
		var oneDay int
		for _, v := range s.Views() {
			if v.Window == "1d" && v.OK && v.Data != nil {
				oneDay++
			}
		}
		if oneDay != 2 {
			t.Errorf("%d projects with today's data, want 2", oneDay)
		}
		if got := fake.Requests(fakeapi.Visitors); got != int64(len(times)) {
			t.Errorf("fake saw %d requests, log %d", got, len(times))
		}
	})
}
