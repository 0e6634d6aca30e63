package sources

import (
	"cmp"
	"container/heap"
	"hash/maphash"
	"slices"
	"strings"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
)

// pathBuilder reduces a walk to a snapshot as its pages arrive, keeping only
// what will be exported: the MaxPaths best paths so far (a heap, each path
// cut to bounded.MaxLabelBytes before it is stored), and of every path met
// an 8-byte hash, to tell a later copy of a path from a new one. A walk's
// memory then follows paths.max and the page in flight, not the site: a
// site of 100,000 paths of 12 KB costs a thousand paths of at most 256
// bytes and 100,000 hashes (BENCHMARKS.md).
//
// The result is buildTraffic's over the whole report: the same paths, order,
// and drop count.
type pathBuilder struct {
	p    analytics.PathPolicy
	seed maphash.Seed
	// seen holds the hash of the label value of every path met: the first
	// row of a path wins, as in apiclient. Two distinct paths whose hashes
	// collide (odds of about 1 in 10^9 for 500,000 paths) would lose the
	// second as a duplicate.
	seen    map[uint64]struct{}
	top     worstFirst
	dropped int
}

// newPathBuilder returns an empty pathBuilder of p.
func newPathBuilder(p analytics.PathPolicy) *pathBuilder {
	return &pathBuilder{p: p, seed: maphash.MakeSeed(), seen: map[uint64]struct{}{}}
}

// Add takes one page of rows, in the API's order.
func (b *pathBuilder) Add(rows []apiclient.PathVisitors) {
	for _, row := range rows {
		path := strings.ToValidUTF8(row.Path, "\uFFFD")
		if b.p.Redact != nil {
			path = b.p.Redact(path)
		}
		label := bounded.Label(path)
		h := maphash.String(b.seed, label)
		if _, dup := b.seen[h]; dup {
			continue
		}
		b.seen[h] = struct{}{}
		// The filters see the whole path, as written in the configuration.
		if (b.p.Include != nil && !b.p.Include.MatchString(path)) || (b.p.Exclude != nil && b.p.Exclude.MatchString(path)) {
			b.dropped++
			continue
		}
		pc := analytics.PathCounts{Path: label, Counts: countsOf(row.VisitorCounts)}
		switch {
		case b.p.MaxPaths <= 0 || len(b.top) < b.p.MaxPaths:
			heap.Push(&b.top, pc)
		case ranksBefore(pc, b.top[0]):
			b.top[0] = pc // the worst kept path is dropped
			heap.Fix(&b.top, 0)
			b.dropped++
		default:
			b.dropped++
		}
	}
}

// Snapshot returns the snapshot of the rows added: paths sorted by total
// descending then path.
func (b *pathBuilder) Snapshot(totals apiclient.VisitorCounts, requests int, from, to string, at time.Time) *analytics.Snapshot {
	paths := slices.Clone([]analytics.PathCounts(b.top))
	if paths == nil {
		paths = []analytics.PathCounts{} // a walk of paths that found none: not a totals-only snapshot
	}
	slices.SortFunc(paths, comparePaths)
	return &analytics.Snapshot{At: at, DateFrom: from, DateTo: to, Site: countsOf(totals), Paths: paths, Dropped: b.dropped, Requests: requests}
}

// comparePaths is the export's order: total descending, then path.
func comparePaths(a, b analytics.PathCounts) int {
	return cmp.Or(cmp.Compare(b.Total, a.Total), strings.Compare(a.Path, b.Path))
}

func ranksBefore(a, b analytics.PathCounts) bool { return comparePaths(a, b) < 0 }

// worstFirst is a heap of paths with the one that ranks last on top.
type worstFirst []analytics.PathCounts

func (h worstFirst) Len() int           { return len(h) }
func (h worstFirst) Less(i, j int) bool { return ranksBefore(h[j], h[i]) }
func (h worstFirst) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *worstFirst) Push(x any)        { *h = append(*h, x.(analytics.PathCounts)) }
func (h *worstFirst) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
