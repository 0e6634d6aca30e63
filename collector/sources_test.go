package collector

import (
	"fmt"
	"maps"
	"sort"
	"strings"
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// sourceEndpoints are the fake's endpoint of each source's walk.
var sourceEndpoints = map[string]string{
	sources.NameVisitors: fakeapi.Visitors, sources.NameViews: fakeapi.Views, sources.NameFeedback: fakeapi.FeedbackByPage,
	sources.NameFeedbackItems: fakeapi.Feedback, sources.NameSearches: fakeapi.Searches, sources.NameAssistant: fakeapi.Assistant,
}

// TestEverySourceOverMetrics: for every source, /metrics exports every
// sample of a snapshot walked from the fake API over real HTTP, under its
// family's name and label names; a view whose last walk failed but whose
// snapshot is still served keeps /metrics at 200 with the same data,
// refresh_success 0 and the failure counted. A value the API adds to an
// enumeration is exported as it came. (What the plan serves after a fault:
// internal/refresh's TestEverySourceKeepsItsLastGoodData.)
func TestEverySourceOverMetrics(t *testing.T) {
	for _, def := range sources.All() {
		t.Run(def.Name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 30}})
			status := []string{"project", "docs", "window", "7d", "source", def.Name}
			v := h.walk(walkSpec{source: def.Name, window: days7})
			h.views.set(v)
			good := h.scrape()
			data := sourceData(good, def)
			if len(data) == 0 {
				t.Fatal("no data exported")
			}
			if want := samples(def, v.Data); !maps.Equal(data, want) {
				t.Errorf("/metrics differs from the snapshot's samples:\n got %v\nwant %v", data, want)
			}
			if v := good.must(t, refreshSuccess, status...); v != 1 {
				t.Errorf("refresh_success %v, want 1", v)
			}

			v.OK, v.Failures = false, 1
			h.views.set(v)
			bad := h.scrape() // fails the test unless HTTP 200
			if got := sourceData(bad, def); !maps.Equal(got, data) {
				t.Errorf("a failed walk: /metrics does not serve the last good data (%d series, want %d)", len(got), len(data))
			}
			if v := bad.must(t, refreshSuccess, status...); v != 0 {
				t.Errorf("a failed walk: refresh_success %v, want 0", v)
			}
			if v := bad.must(t, "mintlify_analytics_refresh_failures_total", status...); v != 1 {
				t.Errorf("a failed walk: refresh_failures_total %v, want 1", v)
			}
		})
	}

	// Unknown enumeration values of the sources that have them.
	for name, want := range map[string][]string{
		sources.NameFeedbackItems: {`mintlify_feedback_items{project="docs",source="%[1]s",status="%[1]s",window="7d"}`},
		sources.NameAssistant: {
			`mintlify_assistant_turns_by_caller{caller="%[1]s",project="docs",window="7d"}`,
			`mintlify_assistant_turns_by_resolution{project="docs",resolution="%[1]s",window="7d"}`,
			`mintlify_assistant_turns_by_response_type{project="docs",response_type="%[1]s",window="7d"}`,
		},
	} {
		t.Run(name+"/unknown enum", func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 30}})
			h.fake.SetFault(sourceEndpoints[name], fakeapi.Fault{UnknownEnum: true})
			h.fake.SetFault(fakeapi.AssistantCallerStats, fakeapi.Fault{UnknownEnum: true})
			h.views.set(h.walk(walkSpec{source: name, window: days7})) // fails the test unless the walk succeeds
			def, _ := sources.ByName(name)
			data := sourceData(h.scrape(), def)
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

// samples are the samples of def's families in snap (project docs, window
// 7d), named as sourceData names them.
func samples(def *sources.Def, snap sources.Snapshot) map[string]float64 {
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
