package refresh

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/visitors"
)

// TestEverySourceKeepsItsLastGoodData: for every source, a walk that fails
// (500, 429, malformed JSON, an endless cursor) leaves the last good
// snapshot served, counts the failure, and the next good walk replaces it.
func TestEverySourceKeepsItsLastGoodData(t *testing.T) {
	endpoints := map[string]string{
		sources.NameVisitors: fakeapi.Visitors, sources.NameViews: fakeapi.Views, sources.NameFeedback: fakeapi.FeedbackByPage,
		sources.NameFeedbackItems: fakeapi.Feedback, sources.NameSearches: fakeapi.Searches, sources.NameAssistant: fakeapi.Assistant,
	}
	faults := map[string]fakeapi.Fault{
		"500": {Status: 500}, "429": {Status: 429, RetryAfter: "1"}, "malformed": {MalformedJSON: true},
		"endless": {EndlessHasMore: true}, "repeated cursor": {RepeatedCursor: true},
	}
	// Paging faults apply to the sources that page that way: offset pages
	// (visitors, views), cursors with hasMore (feedback_items, assistant),
	// (searches reads one page while no top queries are asked for; its
	// cursor faults are internal/sources' tests); feedback by page has one page.
	applies := func(source, fault string) bool {
		switch fault {
		case "endless":
			return source != sources.NameFeedback && source != sources.NameSearches
		case "repeated cursor":
			return source == sources.NameFeedbackItems || source == sources.NameAssistant
		}
		return true
	}
	for _, def := range sources.All() {
		for name, fault := range faults {
			if !applies(def.Name, name) {
				continue
			}
			t.Run(def.Name+"/"+name, func(t *testing.T) {
				t.Parallel()
				clock := testutil.NewClock(time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC))
				fake := fakeapi.New(fakeapi.Options{APIKey: simKey, Paths: 30, Now: clock.Now})
				b, err := budget.New(budget.Config{Limit: 1000, Now: clock.Now})
				if err != nil {
					t.Fatal(err)
				}
				client, err := apiclient.New(apiclient.Config{BaseURL: "http://fake.invalid", APIKey: simKey, Now: clock.Now, Sleep: clock.Sleep,
					HTTPClient: &http.Client{Transport: handlerTransport{fake}}, AnalyticsBudget: b})
				if err != nil {
					t.Fatal(err)
				}
				w, _ := visitors.ParseWindow("7d")
				s, err := New(client, b, Config{Projects: []Project{{Project: visitors.Project{ID: "docs", Windows: []visitors.Window{w}},
					Sources: []sources.Spec{{Name: def.Name}}}}, PageSize: 10, MaxPages: 5, MinInterval: time.Minute,
					FinalDayDelay: -1, SiteInterval: -1, StateDir: t.TempDir(), Now: clock.Now}, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				walk := func() View {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					s.RefreshDue(ctx)
					views := s.Views()
					if len(views) != 1 {
						t.Fatalf("views %+v, want one", views)
					}
					return views[0]
				}
				good := walk()
				if !good.OK || good.Data == nil {
					t.Fatalf("first walk: %+v", good)
				}
				fake.SetFault(endpoints[def.Name], fault)
				clock.Advance(2 * time.Hour) // due again
				bad := walk()
				if bad.OK || bad.Failures != 1 || bad.Data != good.Data {
					t.Errorf("after a %s: ok %v, failures %d, data kept %v; want false, 1, true", name, bad.OK, bad.Failures, bad.Data == good.Data)
				}
				fake.ClearFaults()
				clock.Advance(2 * time.Hour)
				again := walk()
				if !again.OK || again.Data == nil || again.Data == good.Data {
					t.Errorf("after the fault: ok %v, new data %v", again.OK, again.Data != good.Data)
				}
			})
		}
	}
}
