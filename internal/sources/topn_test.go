package sources

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
)

// referenceBuild is buildTraffic as it was before walks streamed: every row kept,
// then sorted and capped. The pathBuilder must give the same snapshot.
func referenceBuild(p analytics.PathPolicy, rows []apiclient.PathVisitors) ([]analytics.PathCounts, int) {
	seen := map[string]bool{}
	var paths []analytics.PathCounts
	dropped := 0
	for _, row := range rows {
		path := strings.ToValidUTF8(row.Path, "\uFFFD")
		if seen[path] {
			continue
		}
		seen[path] = true
		if (p.Include != nil && !p.Include.MatchString(path)) || (p.Exclude != nil && p.Exclude.MatchString(path)) {
			dropped++
			continue
		}
		paths = append(paths, analytics.PathCounts{Path: bounded.Label(path), Counts: countsOf(row.VisitorCounts)})
	}
	slices.SortFunc(paths, func(a, b analytics.PathCounts) int {
		return cmp.Or(cmp.Compare(b.Total, a.Total), strings.Compare(a.Path, b.Path))
	})
	if p.MaxPaths > 0 && len(paths) > p.MaxPaths {
		dropped += len(paths) - p.MaxPaths
		paths = paths[:p.MaxPaths]
	}
	return paths, dropped
}

// TestBuilderEqualsSortingEverything: pages of random rows (repeated
// paths, ties, long paths, filtered paths) handed to a Builder as they
// arrive give what sorting every row would, for caps below, at and above
// the site's size.
func TestBuilderEqualsSortingEverything(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(29, 3))
	for round := range 200 {
		n := rng.IntN(300)
		rows := make([]apiclient.PathVisitors, n)
		for i := range rows {
			path := fmt.Sprintf("/p/%d", rng.IntN(n+1))
			if rng.IntN(10) == 0 {
				path += "/" + strings.Repeat("x", 300+rng.IntN(3)) // long, some alike but for the tail
			}
			total := int64(rng.IntN(20))
			rows[i] = apiclient.PathVisitors{Path: path, VisitorCounts: apiclient.VisitorCounts{Human: total, Total: total}}
		}
		p := analytics.PathPolicy{MaxPaths: []int{0, 1, 10, n / 2, n, n + 5}[rng.IntN(6)]}
		if rng.IntN(3) == 0 {
			p.Exclude = regexp.MustCompile(`7`)
		}
		b := newPathBuilder(p)
		for rest := rows; len(rest) > 0; {
			k := min(len(rest), 1+rng.IntN(40))
			b.Add(rest[:k])
			rest = rest[k:]
		}
		got := b.Snapshot(apiclient.VisitorCounts{}, 1, "2026-03-10", "2026-03-11", time.Unix(0, 0))
		want, dropped := referenceBuild(p, rows)
		if !slices.Equal(got.Paths, want) && !(len(got.Paths) == 0 && len(want) == 0) {
			t.Fatalf("round %d (max %d, %d rows): paths\n%v\nwant\n%v", round, p.MaxPaths, n, got.Paths, want)
		}
		if got.Dropped != dropped || got.Paths == nil {
			t.Fatalf("round %d: dropped %d (paths nil: %v), want %d", round, got.Dropped, got.Paths == nil, dropped)
		}
	}
}
