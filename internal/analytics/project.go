package analytics

import (
	"fmt"
	"regexp"
	"slices"
	"time"
)

// Project is what one project's visitor walks ask of the API: which windows,
// whose calendar, which paths. The live plan (internal/refresh) and the
// backfill (internal/history) both read it, so a project is configured once.
type Project struct {
	ID      string
	Windows []Window
	// Location is the time zone whose calendar defines "today" (nil = UTC).
	Location *time.Location
	Paths    PathPolicy
}

// Loc is p's time zone, UTC when none is set.
func (p *Project) Loc() *time.Location {
	if p.Location == nil {
		return time.UTC
	}
	return p.Location
}

// SameWalks reports whether p and q walk the API alike and build the same
// snapshots from it: a reload that keeps this keeps the project's data.
func (p *Project) SameWalks(q *Project) bool {
	return p.ID == q.ID && p.Loc().String() == q.Loc().String() &&
		slices.Equal(p.Windows, q.Windows) && p.Paths.Equal(q.Paths)
}

// Equal reports whether two policies keep the same paths.
func (p PathPolicy) Equal(q PathPolicy) bool { return p.Key() == q.Key() }

// Key names the policy: equal policies have equal keys (Redact aside,
// which is the process's own and the same for every policy).
func (p PathPolicy) Key() string {
	return fmt.Sprintf("%d|%q|%q", p.MaxPaths, pattern(p.Include), pattern(p.Exclude))
}

func pattern(re *regexp.Regexp) string {
	if re == nil {
		return ""
	}
	return re.String()
}
