package sources

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
)

// Labels whose values come from the API are bounded in count per project
// and window: the documented values, the MaxUnknownValues largest others,
// and the rest summed under "other" (bounded.Fold), with the number of
// values summed so reported (mintlify_analytics_label_values_folded).
// Their length is bounded by labelValue. Paths and search queries are
// bounded by their own caps (paths.max, top queries, feedback pages).

// Folded is how many distinct values of one label a walk summed under
// "other".
type Folded struct {
	// Label is the label's name ("caller", "status", ...).
	Label string
	// Values is how many distinct values were summed under "other".
	Values int
}

// FoldReporter is a snapshot that folds label values from the API: the
// collector exports FoldedValues as mintlify_analytics_label_values_folded.
type FoldReporter interface {
	// FoldedValues has an entry per folded label, in the order of the
	// family's labels; a label without folding reads 0.
	FoldedValues() []Folded
}

// FoldedValues implements FoldReporter.
func (s *AssistantSnapshot) FoldedValues() []Folded { return s.folded }

// FoldedValues implements FoldReporter.
func (s *FeedbackItemsSnapshot) FoldedValues() []Folded { return s.folded }

// foldByLabel is byLabel with the count of distinct values bounded
// (bounded.Fold): counts keyed by the API's values, made label values by
// label (merged when two meet), known always present.
func foldByLabel(counts map[string]int64, known []string, label func(string) string) ([]labelCount, int) {
	merged := make(map[string]int64, min(len(counts), 1024))
	for k, v := range counts {
		merged[label(k)] += v
	}
	kept, folded := bounded.Fold(merged, known, bounded.MaxUnknownValues)
	return byLabel(kept, known, func(s string) string { return s }), folded
}

// topCategories orders categories largest first (ties by name) and keeps
// the n largest; the rest are summed as other categories, and counted.
func topCategories(category map[string]int64, n int, label func(string) string) (kept []labelCount, other float64, folded int) {
	cats := byLabel(category, nil, label)
	slices.SortFunc(cats, func(a, b labelCount) int {
		return cmp.Or(cmp.Compare(b.value, a.value), strings.Compare(a.label, b.label))
	})
	if n = max(n, 0); len(cats) > n {
		for _, c := range cats[n:] {
			other += c.value
		}
		folded = len(cats) - n
		cats = cats[:n]
	}
	return slices.Clip(cats), other, folded
}

// maxDayValues bounds the distinct unknown values of a label that the
// assistant's state keeps per day; beyond it, a day's values are summed
// under "other" (categories: into the day's other categories) as they are
// read. A hundred is far beyond what the API documents, so the exported
// window is exact for any API that is not answering garbage.
const maxDayValues = 100

// bound folds each day's counts to the documented values and maxDayValues
// others, values made label values first: an API that answers a distinct
// response type per conversation grows neither the state (in memory and
// on disk) nor the series. Values folded are counted per day.
func (st *assistantState) bound(label func(string) string, topCategories int) {
	for _, d := range st.Days {
		if len(d.Resolution) <= len(apiclient.Resolutions)+maxDayValues &&
			len(d.ResponseType) <= len(apiclient.ResponseTypes)+maxDayValues &&
			len(d.Category) <= max(topCategories, maxDayValues) {
			continue // the common case: nothing to fold, nothing to relabel
		}
		var n int
		d.Resolution, n = foldDay(d.Resolution, apiclient.Resolutions, maxDayValues, label)
		d.addFolded("resolution", n)
		d.ResponseType, n = foldDay(d.ResponseType, apiclient.ResponseTypes, maxDayValues, label)
		d.addFolded("response_type", n)
		// Categories are free text: a day keeps the largest, the rest are
		// other categories (not a category called "other").
		d.Category, n = foldDay(d.Category, nil, max(topCategories, maxDayValues), label)
		if o, ok := d.Category[bounded.Other]; ok && n > 0 {
			delete(d.Category, bounded.Other)
			d.OtherCategories += o
		}
		d.addFolded("category", n)
	}
}

func foldDay(m map[string]int64, known []string, maxUnknown int, label func(string) string) (map[string]int64, int) {
	merged := make(map[string]int64, min(len(m), 1024))
	for k, v := range m {
		merged[label(k)] += v
	}
	return bounded.Fold(merged, known, maxUnknown)
}

func (d *dayCounts) addFolded(label string, n int) {
	if n == 0 {
		return
	}
	if d.Folded == nil {
		d.Folded = map[string]int64{}
	}
	d.Folded[label] += int64(n)
}

// foldFeedbackItems bounds the sources and statuses of feedback items:
// each label to its documented values and a few others, the rest under
// "other", every documented pair present.
func foldFeedbackItems(byPair map[[2]string]int64) ([]sourceStatusCount, []Folded) {
	bySource, byStatus := map[string]int64{}, map[string]int64{}
	for p, n := range byPair {
		bySource[p[0]] += n
		byStatus[p[1]] += n
	}
	keptSources, fs := bounded.Fold(bySource, apiclient.FeedbackSources, bounded.MaxUnknownValues)
	keptStatuses, ft := bounded.Fold(byStatus, apiclient.FeedbackStatuses, bounded.MaxUnknownValues)
	out := map[[2]string]int64{}
	for _, src := range apiclient.FeedbackSources {
		for _, st := range apiclient.FeedbackStatuses {
			out[[2]string{src, st}] = 0
		}
	}
	for p, n := range byPair {
		if _, ok := keptSources[p[0]]; !ok {
			p[0] = bounded.Other
		}
		if _, ok := keptStatuses[p[1]]; !ok {
			p[1] = bounded.Other
		}
		out[p] += n
	}
	counts := make([]sourceStatusCount, 0, len(out))
	for p, n := range out {
		counts = append(counts, sourceStatusCount{p[0], p[1], float64(n)})
	}
	slices.SortFunc(counts, func(a, b sourceStatusCount) int {
		return cmp.Or(strings.Compare(a.source, b.source), strings.Compare(a.status, b.status))
	})
	return counts, []Folded{{"source", fs}, {"status", ft}}
}

// wireFolded is a Folded in the wire form (wire.go).
type wireFolded struct {
	Label  string `json:"label"`
	Values int    `json:"values"`
}

func foldedToWire(in []Folded) []wireFolded {
	out := make([]wireFolded, len(in))
	for i, f := range in {
		out[i] = wireFolded(f)
	}
	return out
}

func foldedFromWire(in []wireFolded) []Folded {
	out := make([]Folded, len(in))
	for i, f := range in {
		out[i] = Folded(f)
	}
	return out
}

// validateFolded refuses what a walk cannot have made: a label given twice
// or a negative count.
func validateFolded(in []wireFolded) error {
	seen := make(uniqueLabels, len(in))
	for i, f := range in {
		if err := seen.add("folded", i, f.Label); err != nil {
			return err
		}
		if f.Values < 0 {
			return fmt.Errorf("folded %d: negative count", i+1)
		}
	}
	return nil
}
