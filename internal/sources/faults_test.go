package sources_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// firstEndpoints are each source's first endpoint, the one its walk reads
// first; the fake names its endpoints as apiclient does.
func firstEndpoints() map[string]string {
	endpoints := map[string]string{}
	for _, def := range sources.All() {
		endpoints[def.Name] = def.Endpoints[0]
	}
	return endpoints
}

// TestFaultsFailTheWalk: every fault that leaves nothing to read (an error
// status, a page that is not JSON, pages past the cap) is an error of that
// walk (never a hang, a panic or a partial snapshot), and no error quotes
// the API's free text.
func TestFaultsFailTheWalk(t *testing.T) {
	t.Parallel()
	endpoints := firstEndpoints()
	faults := map[string]fakeapi.Fault{
		"429":       {Status: 429, RetryAfter: "1"},
		"500":       {Status: 500},
		"malformed": {MalformedJSON: true},
		"endless":   {EndlessHasMore: true},
	}
	for _, def := range sources.All() {
		name := def.Name
		for fault, f := range faults {
			if fault == "endless" && def.Paging == sources.PagingOnePage {
				continue // one page only
			}
			t.Run(name+"/"+fault, func(t *testing.T) {
				t.Parallel()
				e := start(t, fakeapi.Options{Paths: 30}, func(c *sources.Config) { c.MaxPages = 5; c.Settings = map[string]int{"top_queries": 1000} }) // more pages than the cap
				e.fake.SetFault(endpoints[name], f)
				snap, err := e.source(name).Walk(ctx(t), e.window(7))
				if err == nil || snap != nil {
					t.Fatalf("walk under %s: snapshot %v, err %v; want an error and no snapshot", fault, snap != nil, err)
				}
				if strings.Contains(err.Error(), "PRIVATE") || strings.Contains(err.Error(), "example.com") {
					t.Errorf("error quotes free text: %v", err)
				}
				switch fault {
				case "endless":
					if !errors.Is(err, apiclient.ErrTooManyPages) {
						t.Errorf("endless: %v, want ErrTooManyPages", err)
					}
					if got := e.fake.Requests(endpoints[name]); got != 5 {
						t.Errorf("endless: %d requests, want the cap of 5", got)
					}
				case "429", "500":
					if apiclient.StatusCode(err) == 0 {
						t.Errorf("%s: %v carries no status", fault, err)
					}
				}
			})
		}
	}
	// The assistant's caller stats fail the walk too.
	e := start(t, fakeapi.Options{Paths: 30}, nil)
	e.fake.SetFault(fakeapi.AssistantCallerStats, fakeapi.Fault{Status: 500})
	if _, err := e.source(sources.NameAssistant).Walk(ctx(t), e.window(1)); apiclient.StatusCode(err) != 500 {
		t.Errorf("caller stats 500: %v", err)
	}
}

// TestBadValuesNeverFailTheWalk (issue 44): a negative count in the first
// row of every page, a cursor handed back twice, hasMore without a cursor:
// every walk stands, and counts the skips in its Meta. A walk that skipped
// rows exports exactly what a plain walk exports less those rows; one that
// ended at a cursor that cannot go on exports what it read: no count above
// the plain walk's.
func TestBadValuesNeverFailTheWalk(t *testing.T) {
	t.Parallel()
	endpoints := firstEndpoints()
	faults := map[string]fakeapi.Fault{
		"negative": {NegativeCounts: true},
		"repeated": {RepeatedCursor: true},
		"missing":  {MissingCursor: true},
	}
	for _, def := range sources.All() {
		name := def.Name
		for fault, f := range faults {
			switch {
			case fault != "negative" && def.Paging != sources.PagingCursor && (fault != "repeated" || def.Paging != sources.PagingCursorToNull):
				continue // no cursor, or (searches) a null cursor is the end
			case fault == "negative" && def.Paging == sources.PagingCursor:
				continue // the cursor endpoints list items, not counts
			}
			t.Run(name+"/"+fault, func(t *testing.T) {
				t.Parallel()
				// Pages of 10, so that a walk has several.
				e := start(t, fakeapi.Options{Paths: 30}, func(c *sources.Config) {
					c.PageSize, c.AssistantPageSize, c.Settings = 10, 10, map[string]int{"top_queries": 1000}
				})
				q := e.window(7)
				plain := collect(t, e.source(name), e.walk(e.source(name), q), "7d")
				e.fake.SetFault(endpoints[name], f)
				src := e.source(name)
				snap := e.walk(src, q)
				got := collect(t, src, snap, "7d")
				skipped, lost := snap.Meta().Skipped, 0
				for fam, series := range got {
					for k, v := range series {
						if w, ok := plain[fam][k]; !ok || v > w || (fault == "negative" && v != w) {
							t.Errorf("%s{%s} = %v, a plain walk has %v (%v): a skipped value was exported", fam, k, v, w, ok)
						}
					}
					lost += len(plain[fam]) - len(series)
				}
				switch {
				case skipped < 1:
					t.Errorf("%d values skipped, want the fault's counted", skipped)
				case fault == "negative" && lost == 0:
					t.Error("every series of the plain walk is exported: the negative rows were not skipped")
				case fault == "negative" && name != sources.NameFeedback && skipped != snap.Meta().Requests:
					t.Errorf("%d rows skipped in %d pages, want one a page", skipped, snap.Meta().Requests)
				}
			})
		}
	}
}

// TestImpossibleTotalsAreSkipped: site totals no answer can mean (here
// negative) are skipped: their families emit nothing and the walk says so
// (Meta.TotalsSkipped, one value counted), while every other series, the
// pages' among them, is the plain walk's. A walk of the totals alone
// stands too, with nothing to export.
func TestImpossibleTotalsAreSkipped(t *testing.T) {
	t.Parallel()
	withTotals := 0
	for _, def := range sources.All() {
		if !slices.ContainsFunc(def.Families, func(f *sources.Family) bool { return f.Totals }) {
			continue
		}
		withTotals++
		for _, totalsOnly := range []bool{false, true} {
			if totalsOnly && !def.TotalsOnly {
				continue
			}
			t.Run(fmt.Sprintf("%s/totals-only=%v", def.Name, totalsOnly), func(t *testing.T) {
				t.Parallel()
				e := start(t, fakeapi.Options{Paths: 30}, func(c *sources.Config) { c.Settings = map[string]int{"top_queries": 10} })
				q := e.window(1)
				q.TotalsOnly = totalsOnly
				plain := collect(t, e.source(def.Name), e.walk(e.source(def.Name), q), "1d")
				for _, ep := range def.Endpoints {
					e.fake.SetFault(ep, fakeapi.Fault{NegativeTotals: true})
				}
				src := e.source(def.Name)
				snap := e.walk(src, q)
				if m := snap.Meta(); !m.TotalsSkipped || m.Skipped != 1 {
					t.Errorf("meta %+v: want the totals skipped, one value counted", m)
				}
				got := collect(t, src, snap, "1d")
				for _, f := range def.Families {
					want := plain[f.Name]
					if f.Totals {
						want = map[string]float64{}
						if len(plain[f.Name]) == 0 {
							t.Errorf("%s: the plain walk exports none", f.Name)
						}
					}
					if !maps.Equal(got[f.Name], want) {
						t.Errorf("%s: %v, want %v", f.Name, got[f.Name], want)
					}
				}
			})
		}
	}
	if withTotals != 4 {
		t.Errorf("%d sources have totals families, want 4 (visitors, views, searches, assistant)", withTotals)
	}
}
