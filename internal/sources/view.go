package sources

import "time"

// Scopes of a walk: a whole walk of the source (every page), or a walk of
// the site totals alone (one request, limit=1) for the sources that can.
const (
	ScopePages = "pages"
	ScopeSite  = "site"
)

// View is one demand of the refresh plan as the collector and the status
// page read it: a project, source, window and scope, its last walk and the
// snapshot to export now.
type View struct {
	Project string
	// Source is the analytics source; Scope is ScopePages or ScopeSite.
	Source, Scope string
	// Window is the window label value ("1d", "30d", "yesterday").
	Window string
	// Attempted is false until the first walk ended; OK tells whether the
	// last one succeeded, Duration how long it took.
	Attempted, OK bool
	// Failures counts the walks that failed (an error of the API, a page
	// or cursor loop that did not end, a budget that could not pay).
	Failures int
	Duration time.Duration
	// Interval is the planned interval (0 for the final day, walked once
	// a day).
	Interval time.Duration
	// LastSuccess is the end of the last good walk (zero before one).
	LastSuccess time.Time
	// LastAttempt is when the last walk ended, good or not; Err is its
	// error when it failed.
	LastAttempt time.Time
	Err         error
	// Running: a walk is in flight. NextDue is when the next is planned
	// (zero: at once, or not yet planned).
	Running bool
	NextDue time.Time
	// Cost is the requests a walk takes: learned from the last good walk
	// when CostKnown, else an estimate.
	Cost      int
	CostKnown bool
	// Data is the snapshot to export now, nil when there is none or it is
	// stale, or of other dates than the window's at now.
	Data Snapshot
	// SharedVersion is the version of the snapshot that replicas share
	// (0: none, or not shared): replicas that show the same version serve
	// the same data.
	SharedVersion int64
}
