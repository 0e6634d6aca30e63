package analytics

import (
	"regexp"
	"time"
)

// Counts are unique visitor counts as floats, ready to export.
type Counts struct{ Human, AI, Total float64 }

// PathCounts are the counts of one documentation path.
type PathCounts struct {
	Path string
	Counts
}

// Snapshot is one walk of the visitors endpoint for a date range, reduced to
// what is exported. It is immutable once built.
type Snapshot struct {
	// At is when the walk finished.
	At time.Time
	// DateFrom and DateTo are the API's dates (dateTo exclusive).
	DateFrom, DateTo string
	Site             Counts
	// Paths are unique, sorted by total descending then path. Nil in a
	// snapshot of site totals only.
	Paths []PathCounts
	// Dropped counts paths left out by the filters or the cap.
	Dropped int
	// Requests is how many API requests the walk took.
	Requests int
}

// PathPolicy decides which paths are exported.
type PathPolicy struct {
	// MaxPaths keeps the top N paths by deduplicated total, ties broken by
	// path (0 = no cap).
	MaxPaths int
	// Include, when set, keeps only paths it matches (regexp.MatchString:
	// unanchored unless the pattern anchors itself).
	Include *regexp.Regexp
	// Exclude, when set, drops paths it matches. It wins over Include.
	Exclude *regexp.Regexp
	// Redact, when set, rewrites each path before it becomes a label value
	// (and before the filters see it): a visitor's URL can carry a secret,
	// the exporter's own API key included (secrets.Redactor.String).
	Redact func(string) string
}
