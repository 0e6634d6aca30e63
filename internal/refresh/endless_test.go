package refresh

import (
	"errors"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// TestEndlessPagesCannotSpendTheHour (issue 45 item 6): /feedback answering
// new rows and a new cursor on every page, or /visitors full pages with
// hasMore for ever, under the organization's budget of 100 an hour. The
// walk ends as a pagination error after at most 20 requests (3× its
// planned cost, at least 20), every other source of the organization is
// walked within a minute of the injected clock, and over the next hours
// the endless walk goes further only on what the plan leaves spare (at
// most half of any hour's budget here) while the others stay fresh.
func TestEndlessPagesCannotSpendTheHour(t *testing.T) {
	for _, endless := range []struct{ endpoint, source string }{
		{fakeapi.Feedback, sources.NameFeedbackItems},
		{fakeapi.Visitors, sources.NameVisitors},
	} {
		t.Run(endless.source, func(t *testing.T) {
			t.Parallel()
			var specs []sources.Spec
			for _, def := range sources.All() {
				specs = append(specs, sources.Spec{Name: def.Name})
			}
			h := newHarness(t, harnessOptions{budget: 100, fake: fakeapi.Options{Paths: 300},
				cfg: planConfig{Windows: []analytics.Window{day1}, Sources: specs,
					Config: Config{MaxPages: apiclient.DefaultMaxPages, StateDir: t.TempDir()}}})
			h.fake.SetFault(endless.endpoint, fakeapi.Fault{EndlessHasMore: true})
			start := h.clock.Now()
			h.refreshDue()

			if n := h.fake.Requests(endless.endpoint); n > minWalkCap {
				t.Errorf("the endless walk sent %d requests, want at most %d", n, minWalkCap)
			}
			if spent := h.clock.Now().Sub(start); spent > time.Minute {
				t.Errorf("the first round took %s on the injected clock, want every walk within a minute", spent)
			}
			for _, v := range h.sched.Views() {
				switch {
				case v.Source == endless.source && v.Scope == ScopePages:
					if v.OK || !errors.Is(v.Err, apiclient.ErrTooManyPages) {
						t.Errorf("%s: ok %v, err %v; want a pagination error", v.Source, v.OK, v.Err)
					}
				case !v.OK:
					t.Errorf("%s/%s: not walked within a minute: %v", v.Source, v.Scope, v.Err)
				}
			}

			// Four hours on: a walk of the endless source goes three times
			// further after each that did not end, up to half the budget,
			// and waits ever longer (an hour, then two); every other
			// demand is walked on its plan, its data never an hour old.
			sent := []int64{h.fake.Requests(endless.endpoint)}
			for range 4 * 60 {
				h.clock.Advance(time.Minute)
				h.refreshDue()
				sent = append(sent, h.fake.Requests(endless.endpoint))
				for _, v := range h.sched.Views() {
					k := v.Source + "/" + v.Scope
					if v.Source == endless.source && v.Scope == ScopePages {
						if v.OK {
							t.Fatalf("%s: a walk of endless pages succeeded", k)
						}
						continue
					}
					if !v.OK || v.Data == nil {
						t.Fatalf("%s at %s: ok %v, data %v: %v", k, h.clock.Now().Sub(start), v.OK, v.Data != nil, v.Err)
					}
					if age := h.clock.Now().Sub(v.LastSuccess); age > time.Hour {
						t.Fatalf("%s at %s: data %s old", k, h.clock.Now().Sub(start), age)
					}
				}
			}
			for i := 60; i < len(sent); i++ {
				if hour := sent[i] - sent[i-60]; hour > 50 {
					t.Errorf("the endless walk spent %d requests in the hour to minute %d, over half the budget", hour, i)
				}
			}
			t.Logf("the endless walk spent %d requests in the first round, then %d in four hours; the organization %d",
				sent[0], sent[len(sent)-1]-sent[0], h.fake.AnalyticsRequests())
			if total := sent[len(sent)-1] - sent[0]; total > 100 {
				t.Errorf("the endless walk spent %d requests in four hours, want at most two walks of half the budget", total)
			}
		})
	}
}

// TestSiteLargerThanTheCapIsReadLater: a first walk of 30 pages (planned
// at one) ends at the cap of 20; the next, a budget window later, may go
// three times further and reads the site whole, and its cost is learned.
func TestSiteLargerThanTheCapIsReadLater(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOptions{budget: 100, fake: fakeapi.Options{Paths: 300},
		cfg: planConfig{Config: Config{PageSize: 10, MaxPages: apiclient.DefaultMaxPages}}})
	h.refreshDue()
	if v := h.view("docs", "1d"); v.OK || !errors.Is(v.Err, apiclient.ErrTooManyPages) || h.requests() != minWalkCap {
		t.Fatalf("first walk: ok %v, err %v, %d requests; want a pagination error at %d", v.OK, v.Err, h.requests(), minWalkCap)
	}
	h.clock.Advance(59 * time.Minute)
	h.refreshDue()
	if n := h.requests(); n != minWalkCap {
		t.Fatalf("%d requests within the hour after a walk that did not end, want none", n-minWalkCap)
	}
	h.clock.Advance(time.Minute)
	h.refreshDue()
	v := h.view("docs", "1d")
	if !v.OK || len(traffic(t, v).Paths) != 300 || h.requests() != minWalkCap+30 || v.Cost != 30 || !v.CostKnown {
		t.Errorf("an hour later: ok %v (%v), %d requests, cost %d (known %v); want the 300 paths in 30 requests, learned", v.OK, v.Err, h.requests()-minWalkCap, v.Cost, v.CostKnown)
	}
}

// TestPlanOfAWalkLargerThanTheBudget: a walk that costs more than the
// whole budget (it waits for it between pages) is planned, and the plan
// of nothing to spend ends: both hung (Intervals doubled its factor to
// +Inf) before.
func TestPlanOfAWalkLargerThanTheBudget(t *testing.T) {
	t.Parallel()
	for _, perWindow := range []float64{0, 50} {
		got := Intervals(perWindow, time.Hour, []Demand{{Cost: 101, MinInterval: time.Minute, Days: 1}})
		if got[0] < time.Hour {
			t.Errorf("a walk of 101 requests on %v an hour planned every %s", perWindow, got[0])
		}
	}
	h := newHarness(t, harnessOptions{budget: 100})
	h.sched.mu.Lock()
	for _, e := range h.sched.entries {
		e.cost, e.costKnown = 150, true
	}
	h.sched.replan()
	h.sched.mu.Unlock()
	if v := h.view("docs", "1d"); v.Interval < time.Hour {
		t.Errorf("a walk of 150 requests on 100 an hour planned every %s", v.Interval)
	}
}
