package refresh

import (
	"context"
	"maps"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// TestEverySourceKeepsItsLastGoodData: for every source, a walk that fails
// (500, 429, malformed JSON, an endless cursor) leaves the last good
// snapshot served, counts the failure and logs it with the source, and the
// next good walk replaces it with what a walk of the API gives.
func TestEverySourceKeepsItsLastGoodData(t *testing.T) {
	// A source's first endpoint is the one its walk reads first; the fake
	// names its endpoints as apiclient does.
	endpoints := map[string]string{}
	for _, def := range sources.All() {
		endpoints[def.Name] = def.Endpoints[0]
	}
	faults := map[string]fakeapi.Fault{
		"500": {Status: 500}, "429": {Status: 429, RetryAfter: "1"}, "malformed": {MalformedJSON: true},
		"endless": {EndlessHasMore: true},
	}
	// Paging faults apply to the sources that page that way: offset pages
	// (visitors, views), cursors with hasMore (feedback_items, assistant),
	// (searches reads one page while no top queries are asked for; its
	// cursor faults are internal/sources' tests); feedback by page has one page.
	applies := func(def *sources.Def, fault string) bool {
		return fault != "endless" || def.Paging == sources.PagingOffset || def.Paging == sources.PagingCursor
	}
	for _, def := range sources.All() {
		for name, fault := range faults {
			if !applies(def, name) {
				continue
			}
			t.Run(def.Name+"/"+name, func(t *testing.T) {
				t.Parallel()
				h := newHarness(t, harnessOptions{now: time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC), fake: fakeapi.Options{Paths: 30},
					cfg: planConfig{Windows: []analytics.Window{days7}, Sources: []sources.Spec{{Name: def.Name}},
						Config: Config{PageSize: 10, MaxPages: 5, MinInterval: time.Minute, StateDir: t.TempDir()}}})
				walk := func() View {
					h.refreshDue()
					views := h.sched.Views()
					if len(views) != 1 {
						t.Fatalf("views %+v, want one", views)
					}
					return views[0]
				}
				good := walk()
				if !good.OK || good.Data == nil {
					t.Fatalf("first walk: %+v", good)
				}
				h.fake.SetFault(endpoints[def.Name], fault)
				h.clock.Advance(2 * time.Hour) // due again
				bad := walk()
				if bad.OK || bad.Failures != 1 || bad.Data != good.Data {
					t.Errorf("after a %s: ok %v, failures %d, data kept %v; want false, 1, true", name, bad.OK, bad.Failures, bad.Data == good.Data)
				}
				if !regexp.MustCompile(`level=warn msg="analytics refresh failed" project=docs source=` + def.Name + ` .*err=`).MatchString(h.logs.String()) {
					t.Errorf("after a %s: no warning naming the source and the error in the log:\n%s", name, h.logs.String())
				}
				h.fake.ClearFaults()
				h.clock.Advance(2 * time.Hour)
				again := walk()
				if !again.OK || again.Data == nil || again.Data == good.Data {
					t.Fatalf("after the fault: ok %v, new data %v", again.OK, again.Data != good.Data)
				}
				// The fault left no trace in what is served (the assistant's
				// counts are kept across walks): the same samples as a walk
				// of a source of its own.
				if got, want := samples(def, again.Data), samples(def, walkDirectly(t, h, def)); !maps.Equal(got, want) {
					t.Errorf("after a %s the snapshot differs from a walk of the API:\n got %v\nwant %v", name, got, want)
				}
			})
		}
	}
}

// walkDirectly walks def's window 7d of project docs at the harness's clock
// with a source of its own.
func walkDirectly(t *testing.T, h *harness, def *sources.Def) sources.Snapshot {
	t.Helper()
	src, err := def.New(sources.Config{Client: h.client, Now: h.clock.Now, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	from, to := days7.Range(h.clock.Now(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	snap, err := src.Walk(ctx, sources.Query{Project: "docs", DateFrom: from, DateTo: to})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// samples are the samples of def's families in snap, by family and label
// values.
func samples(def *sources.Def, snap sources.Snapshot) map[string]float64 {
	out := map[string]float64{}
	for _, f := range def.Families {
		f.Emit(snap, "docs", "7d", func(v float64, lv ...string) {
			out[f.Name+"{"+strings.Join(lv, ",")+"}"] = v
		})
	}
	return out
}
