package apiclient

import (
	"encoding/json"
	"time"
)

// Job statuses the API documents. The API may add others; callers must treat
// any other value as not terminal (see IsTerminal).
const (
	StatusActive    = "active"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusArchived  = "archived"
)

// KnownStatuses lists the documented job statuses in a stable order.
var KnownStatuses = []string{StatusActive, StatusCompleted, StatusFailed, StatusArchived}

// IsTerminal reports whether a job in this status will not be worked on
// again. Unknown statuses are not terminal: polling them further is the safe
// choice, since stopping early would lose the job's real outcome.
func IsTerminal(status string) bool {
	switch status {
	case StatusCompleted, StatusFailed, StatusArchived:
		return true
	}
	return false
}

// Source is the repository an agent job works on.
type Source struct {
	// Repository is the repository URL.
	Repository string `json:"repository"`
	// Ref is the branch the changes are made on.
	Ref string `json:"ref"`
}

// Job is the agent job object returned by create-job and get-job.
type Job struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Source Source `json:"source"`
	Model  string `json:"model"`
	// PRLink is nil while the job is active or when no files were changed.
	PRLink    *string   `json:"prLink"`
	CreatedAt time.Time `json:"createdAt"`
	// ArchivedAt is nil until the job is archived.
	ArchivedAt *time.Time `json:"archivedAt"`
}

// CreateJobRequest is the body of create-job.
type CreateJobRequest struct {
	Prompt string `json:"prompt"`
}

// TrafficCounts are counts split by human and AI traffic, with the API's
// own total (visitors and views share the shape).
type TrafficCounts struct {
	Human int64 `json:"human"`
	AI    int64 `json:"ai"`
	Total int64 `json:"total"`
}

// countsWire is TrafficCounts as the reference types them.
type countsWire struct {
	Human Count `json:"human"`
	AI    Count `json:"ai"`
	Total Count `json:"total"`
}

func (w countsWire) counts() TrafficCounts {
	return TrafficCounts{Human: int64(w.Human), AI: int64(w.AI), Total: int64(w.Total)}
}

// pathCountsWire is a row of visitors or views: a path and its counts.
// The path is required: a row without one is skipped (SkipMalformed).
type pathCountsWire struct {
	Path *string `json:"path"`
	countsWire
}

// pathCounts is the row's path and counts; a row without a path is
// skipped.
func (w pathCountsWire) pathCounts() (string, TrafficCounts, error) {
	if w.Path == nil {
		return "", TrafficCounts{}, rowError(SkipMalformed)
	}
	return *w.Path, w.counts(), nil
}

// visitorsRow is a row of /visitors as the reference types it (rowsOf).
type visitorsRow struct{ pathCountsWire }

func (w visitorsRow) row() (PathVisitors, error) {
	path, c, err := w.pathCounts()
	return PathVisitors{path, c}, err
}

// VisitorCounts are unique visitor counts. Total is deduplicated across
// human and AI traffic, so it is not necessarily Human+AI.
type VisitorCounts = TrafficCounts

// PathVisitors are the counts of one page.
type PathVisitors struct {
	Path string `json:"path"`
	VisitorCounts
}

// VisitorsPage is one page of the unique visitors endpoint.
type VisitorsPage struct {
	Totals VisitorCounts `json:"totals"`
	// TotalsSkipped is why the totals could not be read ("": they were).
	TotalsSkipped string         `json:"-"`
	Rows          []PathVisitors `json:"visitors"`
	HasMore       bool           `json:"hasMore"`
	// Skipped counts the rows that could not be read, by reason.
	Skipped Skips `json:"-"`
}

// UnmarshalJSON reads the rows one by one (rowsOf), and the totals as
// lenient.
func (p *VisitorsPage) UnmarshalJSON(b []byte) error {
	var w struct {
		Totals  lenient[countsWire]               `json:"totals"`
		Rows    rowsOf[PathVisitors, visitorsRow] `json:"visitors"`
		HasMore bool                              `json:"hasMore"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*p = VisitorsPage{Totals: w.Totals.v.counts(), TotalsSkipped: w.Totals.skip, Rows: w.Rows.rows, HasMore: w.HasMore, Skipped: w.Rows.skipped}
	return nil
}

// VisitorsQuery selects the date range and page of a visitors request.
type VisitorsQuery struct {
	// DateFrom and DateTo are YYYY-MM-DD; DateTo is exclusive. Empty means
	// the API's default.
	DateFrom string
	DateTo   string
	Limit    int
	Offset   int
}

func (p PathVisitors) pathAndCounts() (string, TrafficCounts) { return p.Path, p.VisitorCounts }

// VisitorsReport is the result of walking every page of the visitors endpoint.
type VisitorsReport struct {
	Totals VisitorCounts
	// Paths has one entry per distinct path, in the order first seen.
	Paths []PathVisitors
	// Requests is how many pages were fetched.
	Requests int
	// DuplicatePaths counts rows dropped because their path was already seen.
	DuplicatePaths int
	// Skipped counts the rows that could not be read, by reason.
	Skipped Skips
}
