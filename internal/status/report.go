// Package status serves the exporter's status page: for the person who asks
// "is it working and what is it spending", one screen with each
// organization's analytics budget, each refresh demand's last and next
// refresh, the tracked agent jobs and the process itself. It only reads: the
// caller hands it a Report (built from the plan, the budget and the tracker)
// on every request; the same Report is served as JSON for scripts.
package status

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"
)

// Report is everything the status page shows. The JSON names are part of the
// exporter's interface (README, "Status page"): add fields, never rename.
//
// Fields documented as derived are filled in by the handler from the others
// and the report's time; a source leaves them zero.
type Report struct {
	// GeneratedAt is the time the report describes (zero = the handler's
	// clock at the request).
	GeneratedAt time.Time `json:"generated_at"`
	Exporter    Exporter  `json:"exporter"`
	// Organizations are the analytics budgets, one per organization (one
	// admin key).
	Organizations []Organization `json:"organizations"`
	// Demands are the refresh plan's (project, source, window)s, in the
	// plan's priority order.
	Demands []Demand `json:"demands"`
	// Jobs are the operations followed, every kind's; nil when the
	// gateway is off.
	Jobs *Jobs `json:"jobs"`
	// Links are the exporter's pages for this configuration, shown in the
	// page's header: metrics, health, each agent project's jobs (nil =
	// DefaultLinks).
	Links []Link `json:"links"`
}

// Exporter describes the process.
type Exporter struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	// StartedAt is when the process started.
	StartedAt time.Time `json:"started_at"`
	// Uptime is derived: GeneratedAt - StartedAt.
	Uptime Duration `json:"uptime_seconds"`
	// Sandbox is true when the exporter reads its built-in simulated API.
	Sandbox bool `json:"sandbox"`
	// Config is the configuration file's reload state; nil when the
	// exporter is configured by flags only.
	Config *Config `json:"config"`
	// Cluster is this replica's place among the replicas sharing a Redis;
	// nil for a single process.
	Cluster *Cluster `json:"cluster,omitempty"`
}

// Cluster is a replica's view of the replicas it shares a Redis with.
type Cluster struct {
	// Owner is this replica's id in the leases it holds.
	Owner string `json:"owner"`
	// Primary: this replica exports the data every replica shares.
	Primary bool `json:"primary"`
	// RedisUp: the last call to Redis succeeded.
	RedisUp bool `json:"redis_up"`
}

// Config is the state of the configuration file, as the
// mintlify_exporter_config_last_reload_* metrics tell it.
type Config struct {
	// File is the configuration file's path.
	File string `json:"file"`
	// LastReloadSuccessful tells whether the last (re)load succeeded.
	LastReloadSuccessful bool `json:"last_reload_successful"`
	// LastReloadAt is when the file was last read, successfully or not.
	LastReloadAt time.Time `json:"last_reload_at,omitzero"`
	// LastSuccessAt is when the file was last read successfully: the
	// configuration in force is from then.
	LastSuccessAt time.Time `json:"last_reload_success_at,omitzero"`
}

// Organization is one organization's analytics budget: the requests its key
// may send to the analytics endpoints in any rolling window.
type Organization struct {
	Name string `json:"name"`
	// Projects are the organization's configured project ids.
	Projects []string `json:"projects"`
	// Limit is the configured budget per window.
	Limit int `json:"limit"`
	// EffectiveLimit is the limit in force: Limit, or half of it for a
	// window after the API answered 429.
	EffectiveLimit int `json:"effective_limit"`
	// ReducedUntil is when a halved limit ends (zero: none).
	ReducedUntil time.Time `json:"reduced_until,omitzero"`
	// Window is the budget's rolling window (an hour).
	Window Duration `json:"window_seconds"`
	// Spent is how many requests were sent in the last Window.
	Spent int `json:"spent"`
	// Planned is how many requests per Window the refresh plan intends to
	// spend (0: not known).
	Planned float64 `json:"planned"`
	// NextRequestAt is when the next request may leave (at or before
	// GeneratedAt: now).
	NextRequestAt time.Time `json:"next_request_at"`
	// PausedUntil is when the pause after a 429 ends (zero: not paused).
	PausedUntil time.Time `json:"paused_until,omitzero"`
	// Rejections counts the API's 429 answers since the start.
	Rejections int `json:"rejections"`
	// KeyExpiresAt is when the organization's API key expires, as the
	// configuration says (api_key_expires; zero: not given).
	KeyExpiresAt time.Time `json:"key_expires_at,omitzero"`
	// Notice is the plan's one sentence on refreshes it plans less often
	// than the maximum staleness allows, and what would change that ("":
	// none). It names no project: the log lists them.
	Notice string `json:"notice,omitempty"`
}

// Demand is one (project, source, window) of the refresh plan.
type Demand struct {
	Organization string `json:"organization"`
	Project      string `json:"project"`
	// Source is the analytics source ("visitors", "views", ...).
	Source string `json:"source"`
	// Window is the window label ("1d", "30d", "yesterday").
	Window string `json:"window"`
	// LastRefreshAt is when the last refresh ended, good or not (zero:
	// none yet).
	LastRefreshAt time.Time `json:"last_refresh_at,omitzero"`
	// Result is the last refresh's outcome: "" before the first, ResultOK,
	// or an error category (Classify). Only a category is ever shown: a
	// value that is not one (free text) is shown as ResultError.
	Result string `json:"result"`
	// Duration is how long the last refresh took.
	Duration Duration `json:"duration_seconds"`
	// Running is true while a refresh is in flight.
	Running bool `json:"running"`
	// NextRefreshAt is when the next refresh is planned (zero: not planned).
	NextRefreshAt time.Time `json:"next_refresh_at,omitzero"`
	// Overdue is derived: how long NextRefreshAt has passed while no
	// refresh runs (0: not late).
	Overdue Duration `json:"overdue_seconds"`
	// Cost is what one refresh costs in requests: learned from the last
	// good refresh when CostKnown, an estimate before.
	Cost      int  `json:"cost"`
	CostKnown bool `json:"cost_known"`
	// Interval is the planned time between refreshes (0: not planned
	// periodically, e.g. the final day, once a day).
	Interval Duration `json:"interval_seconds"`
	// LastSuccessAt is the time of the data exported (zero: none yet).
	LastSuccessAt time.Time `json:"last_success_at,omitzero"`
	// DataAge is derived: GeneratedAt - LastSuccessAt (0 without data).
	DataAge Duration `json:"data_age_seconds"`
	// Exported tells whether the data is on /metrics now: false before
	// the first good refresh and once the data is too stale to serve.
	Exported bool `json:"exported"`
	// SharedVersion is the version of the snapshot replicas share (0:
	// not shared): replicas showing one version serve the same data.
	SharedVersion int64 `json:"shared_version,omitempty"`
	// SkippedRows is how many rows of the API's answers the refresh of the
	// data exported could not read and skipped (0: none, or no data).
	SkippedRows int `json:"skipped_rows,omitempty"`
	// TotalsSkipped: the API's site totals in that refresh were none an
	// answer can mean, and are not exported (its pages are).
	TotalsSkipped bool `json:"totals_skipped,omitempty"`
}

// Jobs are the operations the gateway follows: each kind's section (its
// package makes it), and the poll furthest past its time.
type Jobs struct {
	// Sections are the kinds' parts of the page, in the kinds' order; the
	// JSON shows each one's rows under its Key.
	Sections []Section `json:"-"`
	// MostOverduePoll is the scheduled poll furthest past its time (nil:
	// none is late).
	MostOverduePoll *Poll `json:"most_overdue_poll"`
	// raw are the sections' rows of a report read from JSON, by key.
	raw map[string]json.RawMessage
}

// MaxRows is how many rows a section lists (the newest).
const MaxRows = 10

// Section is one kind of operation's part of the status page: a heading
// (with its link in the page's header), a table, and what the JSON shows
// of it under Key.
type Section struct {
	// Key is its key in the JSON's jobs, and its anchor on the page.
	Key string
	// Title is its heading ("Deployments"), Note a sentence under it ("":
	// none), Empty what the table says without a row.
	Title, Note, Empty string
	Columns            []Column
	Rows               []Row
	// JSON is what the JSON shows under Key: the rows in the kind's own
	// words (its fields are part of the exporter's interface: add fields,
	// never rename).
	JSON any
}

// Column is one column of a section's table: its name, and whether its
// cells are numbers (right-aligned).
type Column struct {
	Name string
	Num  bool
}

// Row is one line of a section's table, of a project.
type Row struct {
	Project string
	Cells   []Cell
}

// Cell is one cell of a row: Text (in a code font when Code), or the time
// At when Time (zero: none), marked with Level (LevelWarn).
type Cell struct {
	Text  string
	Code  bool
	Time  bool
	At    time.Time
	Level string
}

// LevelWarn marks a cell (a failed operation, a count that needs an
// operator).
const LevelWarn = levelWarn

// MarshalJSON writes the poll and each section's rows under its key.
func (j Jobs) MarshalJSON() ([]byte, error) {
	m := map[string]any{"most_overdue_poll": j.MostOverduePoll}
	for k, v := range j.raw {
		m[k] = v
	}
	for _, s := range j.Sections {
		m[s.Key] = anySlice(s.JSON)
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads a report's jobs: the poll, and each section's rows
// as they are (Rows decodes them).
func (j *Jobs) UnmarshalJSON(data []byte) error {
	if err := json.Unmarshal(data, &j.raw); err != nil {
		return err
	}
	if p, ok := j.raw["most_overdue_poll"]; ok {
		delete(j.raw, "most_overdue_poll")
		return json.Unmarshal(p, &j.MostOverduePoll)
	}
	return nil
}

// Rows decodes the rows of the section key of a report read from JSON
// into v.
func (j *Jobs) Rows(key string, v any) error {
	raw, ok := j.raw[key]
	if !ok {
		return fmt.Errorf("no section %q in the report", key)
	}
	return json.Unmarshal(raw, v)
}

// anySlice is v, a slice (nil: an empty one: a list is [] in the JSON,
// never null).
func anySlice(v any) any {
	if v == nil {
		return []any{}
	}
	return v
}

// Poll is one scheduled poll of an operation, of any kind.
type Poll struct {
	Project string `json:"project"`
	// Kind is the operation's kind, JobID its id.
	Kind  string `json:"kind"`
	JobID string `json:"job_id"`
	// DueAt is when the poll was due.
	DueAt time.Time `json:"due_at"`
	// Overdue is derived: GeneratedAt - DueAt.
	Overdue Duration `json:"overdue_seconds"`
}

// Duration is a time.Duration that JSON carries as a number of seconds, the
// unit of everything else a script reads from the exporter.
type Duration time.Duration

// MarshalJSON writes the duration in seconds.
func (d Duration) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, time.Duration(d).Seconds(), 'f', -1, 64), nil
}

// UnmarshalJSON reads a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s float64
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration in seconds: %w", err)
	}
	if math.IsNaN(s) || math.Abs(s*1e9) > math.MaxInt64 {
		return fmt.Errorf("duration of %g seconds out of range", s)
	}
	*d = Duration(math.Round(s * 1e9))
	return nil
}

// derive fills in the derived fields and GeneratedAt (when zero, from now).
// It copies what it changes: a source may hand out the same slices twice.
func (r *Report) derive(now time.Time) {
	// Lists are [] in the JSON, never null: one shape for scripts.
	r.Organizations = orEmpty(slices.Clone(r.Organizations))
	for i := range r.Organizations {
		r.Organizations[i].Projects = orEmpty(r.Organizations[i].Projects)
	}
	r.Demands = orEmpty(slices.Clone(r.Demands))
	if r.Jobs != nil {
		jobs := *r.Jobs
		jobs.Sections = slices.Clone(jobs.Sections)
		if jobs.MostOverduePoll != nil {
			poll := *jobs.MostOverduePoll
			jobs.MostOverduePoll = &poll
		}
		r.Jobs = &jobs
	}
	r.bound()
	if r.GeneratedAt.IsZero() {
		r.GeneratedAt = now
	}
	at := r.GeneratedAt
	since := func(t time.Time) Duration {
		if t.IsZero() || !at.After(t) {
			return 0
		}
		return Duration(at.Sub(t))
	}
	r.Exporter.Uptime = since(r.Exporter.StartedAt)
	for i := range r.Demands {
		d := &r.Demands[i]
		d.Result = category(d.Result)
		d.DataAge = since(d.LastSuccessAt)
		d.Overdue = 0
		if !d.Running {
			d.Overdue = since(d.NextRefreshAt)
		}
	}
	if r.Jobs != nil && r.Jobs.MostOverduePoll != nil {
		r.Jobs.MostOverduePoll.Overdue = since(r.Jobs.MostOverduePoll.DueAt)
	}
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
