package sources_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

func TestRegistry(t *testing.T) {
	t.Parallel()
	if got := sources.Names(); !slices.Equal(got, []string{"visitors", "views", "feedback", "feedback_items", "searches", "assistant"}) {
		t.Errorf("names %v", got)
	}
	if got := sources.Defaults(); !slices.Contains(got, "visitors") || !slices.Contains(got, "views") {
		t.Errorf("defaults %v lack visitors and views", got)
	}
	if _, ok := sources.ByName("nope"); ok {
		t.Error("ByName of an unknown source")
	}
	additive := map[string]bool{"visitors": false, "views": true, "feedback": false, "feedback_items": false, "searches": true, "assistant": true}
	e := start(t, fakeapi.Options{Paths: 10}, nil)
	names := map[string]bool{}
	for _, def := range sources.All() {
		s := e.source(def.Name)
		if s.Name() != def.Name || s.Additive() != additive[def.Name] || s.TotalsOnly() != def.TotalsOnly {
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
	e := start(t, fakeapi.Options{Paths: 30}, func(c *sources.Config) { c.TopQueries = 10 })
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
