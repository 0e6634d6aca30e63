package sources_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

func TestRegistry(t *testing.T) {
	t.Parallel()
	// visitors comes first (tests read its families), the rest in their
	// Order, each once.
	all := sources.All()
	if len(all) == 0 || all[0].Name != sources.NameVisitors {
		t.Errorf("names %v: visitors is not first", sources.Names())
	}
	for i := 1; i < len(all); i++ {
		if all[i-1].Order >= all[i].Order {
			t.Errorf("%s (order %d) before %s (order %d)", all[i-1].Name, all[i-1].Order, all[i].Name, all[i].Order)
		}
	}
	for i, name := range sources.Names() {
		if all[i].Name != name {
			t.Errorf("Names()[%d] = %s, want %s (registry order)", i, name, all[i].Name)
		}
	}
	if got := analytics.SourceNames(true); !slices.Contains(got, "visitors") || !slices.Contains(got, "views") {
		t.Errorf("defaults %v lack visitors and views", got)
	}
	if _, ok := sources.ByName("nope"); ok {
		t.Error("ByName of an unknown source")
	}
	e := start(t, fakeapi.Options{Paths: 10}, nil)
	names := map[string]bool{}
	for _, def := range sources.All() {
		s := e.source(def.Name)
		if s.Name() != def.Name || s.Additive() != pinned[def.Name].additive || s.TotalsOnly() != def.TotalsOnly {
			t.Errorf("%s: name %q additive %v totals-only %v", def.Name, s.Name(), s.Additive(), s.TotalsOnly())
		}
		for _, f := range s.Families() {
			if names[f.Name] {
				t.Errorf("family %s twice", f.Name)
			}
			names[f.Name] = true
			if !strings.HasPrefix(f.Name, "mintlify_") || strings.HasSuffix(f.Name, "_total") || f.Labels[0] != "project" || (f.PerProject == slices.Contains(f.Labels, "window")) {
				t.Errorf("family %s labels %v", f.Name, f.Labels)
			}
		}
	}
}

// snapshots is a collector of const metrics from snapshots, as the
// exporter's collector builds them.
type snapshots struct {
	src  []sources.Source
	snap []sources.Snapshot
}

func (c *snapshots) Describe(ch chan<- *prometheus.Desc) {
	for _, s := range c.src {
		for _, f := range s.Families() {
			ch <- f.Desc()
		}
	}
}

func (c *snapshots) Collect(ch chan<- prometheus.Metric) {
	for i, s := range c.src {
		for _, f := range s.Families() {
			f.Emit(c.snap[i], project, "7d", func(v float64, lv ...string) {
				ch <- prometheus.MustNewConstMetric(f.Desc(), prometheus.GaugeValue, v, lv...)
			})
		}
	}
}

// TestFamiliesLint: every family of every source, from real snapshots,
// gathers on a pedantic registry and passes the metric linter.
func TestFamiliesLint(t *testing.T) {
	t.Parallel()
	e := start(t, fakeapi.Options{Paths: 30}, func(c *sources.Config) { c.Settings = map[string]int{"top_queries": 10} })
	col := &snapshots{}
	for _, name := range sources.Names() {
		s := e.source(name)
		col.src = append(col.src, s)
		col.snap = append(col.snap, e.walk(s, e.window(7)))
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(col)
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) != 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

// TestFamiliesAsTheIssueNamesThem holds every family's name and label
// names as each source's test file pins them (pinSource): those of issue
// 20's table are fixed (a rename breaks dashboards, alerts and users'
// queries), the others are listed so that a rename shows up and goes into
// the CHANGELOG.
func TestFamiliesAsTheIssueNamesThem(t *testing.T) {
	t.Parallel()
	want := pinned
	for _, def := range sources.All() {
		got := map[string][]string{}
		for _, f := range def.Families {
			got[f.Name] = f.Labels
		}
		pin, ok := want[def.Name]
		if !ok {
			t.Errorf("%s: its test file pins no families (pinSource)", def.Name)
		}
		if len(got) != len(pin.families) {
			t.Errorf("%s: families %v, want %v", def.Name, got, pin.families)
		}
		for name, labels := range pin.families {
			if !slices.Equal(got[name], labels) {
				t.Errorf("%s: %s has labels %v, want %v", def.Name, name, got[name], labels)
			}
		}
	}
	if len(sources.All()) != len(want) {
		t.Errorf("%d sources, %d pinned: a pin of no source", len(sources.All()), len(want))
	}
	// The label values the issue names (the tests of each source compare
	// the values with the API's under these constants).
	for _, c := range []struct {
		what      string
		got, want []string
	}{
		{"traffic", []string{sources.TrafficHuman, sources.TrafficAI}, []string{"human", "ai"}},
		{"kind", []string{sources.KindThumbsUp, sources.KindThumbsDown, sources.KindCodeSnippet}, []string{"thumbs_up", "thumbs_down", "code_snippet"}},
		{"caller", apiclient.Callers, []string{"web", "api", "other"}},
		{"resolution", apiclient.Resolutions, []string{"answered", "unanswered"}},
		{"response_type", apiclient.ResponseTypes, []string{"answer", "clarifying_question"}},
		{"source", apiclient.FeedbackSources, []string{"thumbs_only", "contextual", "code_snippet", "agent"}},
		{"status", apiclient.FeedbackStatuses, []string{"pending", "in_progress", "resolved", "dismissed"}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s values %v, want %v", c.what, c.got, c.want)
		}
	}
}
