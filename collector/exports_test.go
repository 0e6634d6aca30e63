package collector

import (
	"slices"
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// TestFamilyWithoutWindowFromTheWidestWindow: a family without a window
// label (feedback_items' oldest pending age) is exported once per project
// and source, from the walk of its widest window, whichever order the
// views come in; the other families from each window's own walk.
func TestFamilyWithoutWindowFromTheWidestWindow(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 4}})
	def, _ := sources.ByName(sources.NameFeedbackItems)
	var perProject, windowed int
	for _, f := range def.Families {
		if f.PerProject {
			perProject = familyIndex[f]
		} else {
			windowed = familyIndex[f]
		}
	}
	d1 := h.walk(walkSpec{source: sources.NameFeedbackItems, window: day1})
	d7 := h.walk(walkSpec{source: sources.NameFeedbackItems, window: days7})
	for _, views := range [][]sources.View{{d1, d7}, {d7, d1}} {
		var from, windows []string
		for _, e := range exports(views) {
			if slices.Contains(e.fams, perProject) {
				from = append(from, e.key.window)
			}
			if slices.Contains(e.fams, windowed) {
				windows = append(windows, e.key.window)
			}
		}
		if !slices.Equal(from, []string{"7d"}) {
			t.Errorf("views %s, %s: the family without a window exported from %v, want 7d alone", views[0].Window, views[1].Window, from)
		}
		slices.Sort(windows)
		if !slices.Equal(windows, []string{"1d", "7d"}) {
			t.Errorf("views %s, %s: the windowed family exported from %v, want 1d and 7d", views[0].Window, views[1].Window, windows)
		}
	}
}
