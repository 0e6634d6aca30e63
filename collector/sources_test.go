package collector

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/refresh"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
	"github.com/mintlify-exporter/mintlify_exporter/internal/visitors"
)

// sourceEndpoints are the fake's endpoint of each source's walk.
var sourceEndpoints = map[string]string{
	sources.NameVisitors: fakeapi.Visitors, sources.NameViews: fakeapi.Views, sources.NameFeedback: fakeapi.FeedbackByPage,
	sources.NameFeedbackItems: fakeapi.Feedback, sources.NameSearches: fakeapi.Searches, sources.NameAssistant: fakeapi.Assistant,
}

// TestEverySourceOverMetrics: for every source, over real HTTP from the
// fake API to /metrics, every exported value equals what a walk of the API
// gives, and each fault (429, 500, malformed JSON, an endless or repeated
// cursor) keeps /metrics at 200 with the last good data, refresh_success
// 0, the failure counted and logged; once the fault clears the data is
// fresh again. A value the API adds to an enumeration is exported as it
// came, and /metrics stays 200.
func TestEverySourceOverMetrics(t *testing.T) {
	faults := []struct {
		name  string
		fault fakeapi.Fault
		// only: the sources the fault applies to (nil: all).
		only []string
	}{
		{"429", fakeapi.Fault{Status: 429, RetryAfter: "1"}, nil},
		{"500", fakeapi.Fault{Status: 500}, nil},
		{"malformed", fakeapi.Fault{MalformedJSON: true}, nil},
		// Offset pages and cursors with hasMore; feedback by page has one
		// page and searches' total alone one request.
		{"endless", fakeapi.Fault{EndlessHasMore: true}, []string{sources.NameVisitors, sources.NameViews, sources.NameFeedbackItems, sources.NameAssistant}},
		{"repeated cursor", fakeapi.Fault{RepeatedCursor: true}, []string{sources.NameFeedbackItems, sources.NameAssistant}},
	}
	for _, def := range sources.All() {
		t.Run(def.Name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 30}, cfg: planConfig{
				Config:  refresh.Config{StateDir: t.TempDir()},
				Windows: []visitors.Window{days7}, Sources: []sources.Spec{{Name: def.Name}},
			}})
			status := []string{"project", "docs", "window", "7d", "source", def.Name}
			good := h.scrape()
			data := sourceData(good, def)
			if len(data) == 0 {
				t.Fatal("no data exported")
			}
			if want := walkDirectly(t, h, def); !maps.Equal(data, want) {
				t.Errorf("/metrics differs from a walk of the API:\n got %v\nwant %v", data, want)
			}
			for _, f := range faults {
				if f.only != nil && !slices.Contains(f.only, def.Name) {
					continue
				}
				failures := good.must(t, "mintlify_analytics_refresh_failures_total", status...)
				h.fake.SetFault(sourceEndpoints[def.Name], f.fault)
				h.clock.Advance(5 * time.Minute)
				bad := h.scrape() // fails the test unless HTTP 200
				if got := sourceData(bad, def); !maps.Equal(got, data) {
					t.Errorf("%s: /metrics does not serve the last good data (%d series, want %d)", f.name, len(got), len(data))
				}
				if v := bad.must(t, refreshSuccess, status...); v != 0 {
					t.Errorf("%s: refresh_success %v, want 0", f.name, v)
				}
				if v := bad.must(t, "mintlify_analytics_refresh_failures_total", status...); v != failures+1 {
					t.Errorf("%s: refresh_failures_total %v, want %v", f.name, v, failures+1)
				}
				if !regexp.MustCompile(`level=warn msg="analytics refresh failed" project=docs source=` + def.Name + ` .*err=`).MatchString(h.logs.String()) {
					t.Errorf("%s: no warning naming the source and the error in the log", f.name)
				}
				h.fake.ClearFaults()
				h.clock.Advance(5 * time.Minute)
				good = h.scrape()
				if v := good.must(t, refreshSuccess, status...); v != 1 {
					t.Fatalf("after the %s cleared: refresh_success %v, want 1", f.name, v)
				}
				data = sourceData(good, def)
			}
			// No fault left a trace in what is exported (the assistant's
			// counts are kept across walks).
			if want := walkDirectly(t, h, def); !maps.Equal(data, want) {
				t.Errorf("after the faults /metrics differs from a walk of the API:\n got %v\nwant %v", data, want)
			}
		})
	}

	// Unknown enumeration values of the sources that have them.
	for name, want := range map[string][]string{
		sources.NameFeedbackItems: {`mintlify_feedback_items{project="docs",source="%[1]s",status="%[1]s",window="7d"}`},
		sources.NameAssistant: {
			`mintlify_assistant_conversations{caller="%[1]s",project="docs",window="7d"}`,
			`mintlify_assistant_conversations_by_resolution{project="docs",resolution="%[1]s",window="7d"}`,
			`mintlify_assistant_conversations_by_response_type{project="docs",response_type="%[1]s",window="7d"}`,
		},
	} {
		t.Run(name+"/unknown enum", func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 30}, cfg: planConfig{
				Config:  refresh.Config{StateDir: t.TempDir()},
				Windows: []visitors.Window{days7}, Sources: []sources.Spec{{Name: name}},
			}})
			h.fake.SetFault(sourceEndpoints[name], fakeapi.Fault{UnknownEnum: true})
			h.fake.SetFault(fakeapi.AssistantCallerStats, fakeapi.Fault{UnknownEnum: true})
			fams := h.scrape()
			if v := fams.must(t, refreshSuccess, "project", "docs", "window", "7d", "source", name); v != 1 {
				t.Errorf("refresh_success %v, want 1: an unknown value is data, not a fault", v)
			}
			def, _ := sources.ByName(name)
			data := sourceData(fams, def)
			for _, w := range want {
				if series := fmt.Sprintf(w, fakeapi.UnknownEnumValue); data[series] <= 0 {
					t.Errorf("%s not exported (or 0)", series)
				}
			}
		})
	}
}

// sourceData is every data series of def's families in fams.
func sourceData(fams families, def *sources.Def) map[string]float64 {
	out := map[string]float64{}
	for _, f := range def.Families {
		for k, v := range fams.series(f.Name) {
			if strings.HasPrefix(k, f.Name+"{") {
				out[k] = v
			}
		}
	}
	return out
}

// walkDirectly walks def's window 7d at the harness's clock with a source
// of its own and returns its samples as sourceData names them.
func walkDirectly(t *testing.T, h *harness, def *sources.Def) map[string]float64 {
	t.Helper()
	src, err := def.New(sources.Config{Client: h.client, Now: h.clock.Now, StateDir: t.TempDir(), PageSize: apiclient.MaxPageSize})
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
	out := map[string]float64{}
	for _, f := range def.Families {
		f.Emit(snap, "docs", "7d", func(v float64, lv ...string) {
			ls := make([]string, len(lv))
			for i, l := range lv {
				ls[i] = fmt.Sprintf("%s=%q", f.Labels[i], l)
			}
			sort.Strings(ls)
			out[f.Name+"{"+strings.Join(ls, ",")+"}"] = v
		})
	}
	return out
}
