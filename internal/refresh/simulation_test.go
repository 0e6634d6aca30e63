package refresh

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

const simKey = "mint_sim_key"

// handlerTransport serves requests with a handler in-process: the client's
// whole HTTP path runs, without sockets, so a simulated day takes seconds.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// sendLog records the fake-clock time of every analytics request.
type sendLog struct {
	mu    sync.Mutex
	times []time.Time
}

func (l *sendLog) wrap(now func() time.Time, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/analytics/") {
			l.mu.Lock()
			l.times = append(l.times, now())
			l.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})
}

// maxInWindow is the most requests in any half-open window (t-w, t].
func maxInWindow(times []time.Time, w time.Duration) (int, time.Time) {
	best, at, lo := 0, time.Time{}, 0
	for hi, t := range times {
		for !times[lo].After(t.Add(-w)) {
			lo++
		}
		if n := hi - lo + 1; n > best {
			best, at = n, t
		}
	}
	return best, at
}

type simCase struct {
	projects, paths int
	windows         []string
}

// simPageSize is the simulation's page size: a fiftieth of the API's
// largest, with a fiftieth of the paths, so that each walk takes as many
// requests as with full pages (1, 10 and 40) while the fake encodes and the
// client decodes a fiftieth of the rows (under -race the JSON was most of
// the package's test time). The plan is made in requests, not rows: the
// planned intervals are the same as with full pages.
const simPageSize = apiclient.MaxPageSize / 50

// TestPlanSimulation runs the scheduler for 26 simulated hours (across a
// midnight) on a fake clock for 1 and 10 projects × walks of 1, 10 and 40
// pages (250 / 2,500 / 10,000 paths in full pages) × 1 and 3 windows, against the fake API enforcing the
// organization's 100 per hour, with the default budget of 60, and checks:
// never more than the budget in any rolling hour and no 429; today's
// windows walked first at start; every window walked again within its
// planned interval; no data dropped while its plan is on time.
func TestPlanSimulation(t *testing.T) {
	var cases []simCase
	for _, projects := range []int{1, 10} {
		for _, paths := range []int{250 / 50, 2500 / 50, 10000 / 50} {
			for _, windows := range [][]string{{"1d"}, {"1d", "7d", "30d"}} {
				cases = append(cases, simCase{projects, paths, windows})
			}
		}
	}
	var table []string
	var tableMu sync.Mutex
	t.Cleanup(func() {
		slices.Sort(table)
		t.Logf("planned intervals (budget %d/h, --visitors.cache-ttl 5m):\n%s", budget.DefaultLimit, strings.Join(table, "\n"))
	})
	for _, c := range cases {
		name := fmt.Sprintf("%dx%d_%s", c.projects, c.paths, strings.Join(c.windows, "+"))
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			row := simulate(t, c)
			tableMu.Lock()
			table = append(table, row)
			tableMu.Unlock()
		})
	}
}

func simulate(t *testing.T, c simCase) string {
	const step = 30 * time.Second
	start := time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC)
	clock := testutil.NewClock(start)
	var projects []string
	byProject := map[string]int{}
	for i := range c.projects {
		p := fmt.Sprintf("p%02d", i)
		projects = append(projects, p)
		byProject[p] = c.paths
	}
	fake := fakeapi.New(fakeapi.Options{APIKey: simKey, PathsByProject: byProject, Now: clock.Now, AnalyticsBudget: fakeapi.AnalyticsLimit})
	log := &sendLog{}
	b, err := budget.New(budget.Config{Limit: budget.DefaultLimit, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	client, err := apiclient.New(apiclient.Config{BaseURL: "http://fake.invalid", APIKey: simKey,
		HTTPClient: &http.Client{Transport: handlerTransport{log.wrap(clock.Now, fake)}}, AnalyticsBudget: b, Now: clock.Now, Sleep: clock.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	var windows []analytics.Window
	for _, w := range c.windows {
		win, err := analytics.ParseWindow(w)
		if err != nil {
			t.Fatal(err)
		}
		windows = append(windows, win)
	}
	s, err := New(client, b, planConfig{Projects: projects, Windows: windows, Config: Config{PageSize: simPageSize, MinInterval: 5 * time.Minute, MaxStaleness: time.Hour, FinalDayDelay: 10 * time.Minute, Now: clock.Now}}.build(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	type key struct{ project, window string }
	last := map[key]time.Time{}
	first := map[key]time.Time{}
	intervals := map[string]time.Duration{}
	midnight := time.Date(2026, 3, 11, 0, 0, 0, 0, time.UTC)
	walkedToday := map[key]bool{}
	for now := start; now.Before(start.Add(26 * time.Hour)); now = now.Add(step) {
		clock.Set(now)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		s.RefreshDue(ctx)
		cancel()
		for _, v := range s.Views() {
			k := key{v.Project, v.Window}
			if v.Window != FinalDayWindow {
				intervals[v.Window] = v.Interval
			}
			if v.LastSuccess.IsZero() {
				continue
			}
			if prev, ok := last[k]; !ok {
				first[k] = v.LastSuccess
			} else if v.LastSuccess != prev && v.Window != FinalDayWindow {
				// Walks more often than hourly are planned for their worst
				// hour and must be on time; rarer ones are planned on
				// average and may wait up to an hour for the budget.
				// After midnight every project's 1d is due at once: a walk
				// may wait for the budget to pay for all of them first.
				late := 2 * step
				if v.Interval >= time.Hour {
					late += time.Hour + catchUp(c)
				}
				if gap := v.LastSuccess.Sub(prev); gap > v.Interval+late {
					t.Errorf("%s/%s walked %s after the previous walk at %s, planned every %s",
						v.Project, v.Window, gap, prev.Format(time.TimeOnly), v.Interval)
				}
			}
			last[k] = v.LastSuccess
			if !v.LastSuccess.Before(midnight) {
				walkedToday[k] = true
			}
			// Data may be missing only for today's window after midnight,
			// until its first walk of the new day.
			if v.Data == nil && v.Window != FinalDayWindow && !(v.Window == "1d" && !now.Before(midnight) && !walkedToday[k]) {
				t.Fatalf("%s/%s has no data at %s though its last walk was at %s (interval %s)",
					v.Project, v.Window, now.Format(time.DateTime), v.LastSuccess.Format(time.DateTime), v.Interval)
			}
		}
		// A walked 1d window must be walked again after midnight as soon
		// as the budget pays for every project's.
		if !now.Before(midnight) {
			for _, p := range projects {
				k := key{p, "1d"}
				if !walkedToday[k] && now.Sub(midnight) > catchUp(c)+time.Hour+2*step {
					t.Fatalf("%s/1d not walked since midnight by %s (interval %s)", p, now.Format(time.DateTime), intervals["1d"])
				}
			}
		}
	}
	// Every window was walked, today's windows before any longer one.
	var last1d time.Time
	for _, p := range projects {
		if first[key{p, "1d"}].After(last1d) {
			last1d = first[key{p, "1d"}]
		}
	}
	for k, at := range first {
		if k.window != "1d" && k.window != FinalDayWindow && at.Before(last1d) {
			t.Errorf("%s/%s first walked at %s, before every project's 1d (last at %s)", k.project, k.window, at.Format(time.TimeOnly), last1d.Format(time.TimeOnly))
		}
	}
	// A window planned at most every 12 hours was walked in the 26 (a
	// budget too small for the configuration plans some windows in days,
	// and says so in a warning).
	for _, p := range projects {
		for _, w := range c.windows {
			if _, ok := first[key{p, w}]; !ok && intervals[w] <= 12*time.Hour {
				t.Errorf("%s/%s never walked (planned every %s)", p, w, intervals[w])
			}
		}
	}
	log.mu.Lock()
	times := slices.Clone(log.times)
	log.mu.Unlock()
	if n, at := maxInWindow(times, time.Hour); n > budget.DefaultLimit {
		t.Errorf("%d analytics requests in the hour up to %s, budget %d", n, at.Format(time.DateTime), budget.DefaultLimit)
	}
	if r := fake.AnalyticsRejections(); r != 0 {
		t.Errorf("the fake API answered 429 %d times", r)
	}
	if len(times) == 0 {
		t.Fatal("no request at all")
	}
	var iv []string
	for _, w := range c.windows {
		iv = append(iv, fmt.Sprintf("%s %s", w, intervals[w]))
	}
	return fmt.Sprintf("%2d projects × %5d paths (pages of %d), %-10s requests/walk %2d: %s; %d requests in 26 h",
		c.projects, c.paths, simPageSize, strings.Join(c.windows, "+"), walkCost(c.paths),
		strings.Join(iv, ", "), len(times))
}

func walkCost(paths int) int { return (paths + simPageSize - 1) / simPageSize }

// catchUp is how long the budget takes to pay for every project's 1d walk
// after midnight: walks are paid whole, floor(budget/cost) an hour.
func catchUp(c simCase) time.Duration {
	perHour := max(1, budget.DefaultLimit/walkCost(c.paths))
	return time.Duration((c.projects+perHour-1)/perHour) * time.Hour
}
