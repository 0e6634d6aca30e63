package agent

import (
	"time"
	"unique"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/collector"
	"github.com/mintlify-exporter/mintlify_exporter/internal/gateway"
)

// Origins of a tracked job.
const (
	originGateway = "gateway" // created through the gateway
	originTrack   = "track"   // created elsewhere, tracked via the track endpoint
)

// counted is a bit set of the terminal statuses already counted for a job
// (finished_total). It is persisted with the status that set it, so a
// restart never counts a transition again.
type counted uint8

const (
	countedCompleted counted = 1 << iota
	countedFailed
	countedArchived
)

func countedBit(status string) counted {
	switch status {
	case apiclient.StatusCompleted:
		return countedCompleted
	case apiclient.StatusFailed:
		return countedFailed
	case apiclient.StatusArchived:
		return countedArchived
	}
	return 0
}

// record is the persisted form of a tracked job: one JSON value per job in
// the state file, keyed by project + "\x00" + id.
type record struct {
	Project   string        `json:"project"`
	Job       apiclient.Job `json:"job"`
	Origin    string        `json:"origin"`
	TrackedAt time.Time     `json:"trackedAt"`
	// TerminalAt is when the job was first seen terminal or declared lost.
	TerminalAt time.Time `json:"terminalAt,omitzero"`
	// Counted holds the terminal statuses already counted (or deliberately
	// not counted because the job was terminal when first seen).
	Counted counted `json:"counted,omitempty"`
	// PRCounted: the job's pull request was counted (or deliberately not).
	PRCounted bool `json:"prCounted,omitempty"`
	// Lost: the API answered 404 repeatedly; no longer polled.
	Lost bool `json:"lost,omitempty"`
	// WatchEnded: the archive watch of a completed job ended early (the API
	// no longer knows the job).
	WatchEnded bool `json:"watchEnded,omitempty"`
}

func storeKey(project, id string) string { return project + "\x00" + id }

// entry is a tracked job in memory: its record plus scheduling state that
// is not worth persisting.
type entry struct {
	rec record

	// dirty: the record differs from the state file (a write failed); the
	// next poll writes it again.
	dirty bool
	// nextPoll: not polled before this; zero means the next round.
	nextPoll    time.Time
	lastPolled  time.Time
	errors      int // consecutive poll errors
	notFound    int // consecutive 404s
	lastErr     string
	pollPending bool // picked by a round that has not applied its result yet
}

// intern shares the strings that repeat across jobs (status, model,
// repository), which is most of a job's memory after its id and ref.
func intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

func internJob(j *apiclient.Job) {
	j.Status = intern(j.Status)
	j.Model = intern(j.Model)
	j.Source.Repository = intern(j.Source.Repository)
}

// viewStatus is the status the gateway and the jobs gauge show.
func (r *record) viewStatus() string {
	if r.Lost {
		return collector.AgentStatusLost
	}
	return r.Job.Status
}

// polled reports whether the job is still polled at all at now.
func (e *entry) polled(now time.Time, cfg *Config) bool {
	r := &e.rec
	switch {
	case r.Lost:
		return false
	case !apiclient.IsTerminal(r.Job.Status):
		return true
	case r.Job.Status == apiclient.StatusCompleted:
		return !r.WatchEnded && cfg.ArchiveWatch > 0 && now.Before(r.TerminalAt.Add(cfg.ArchiveWatch))
	}
	return false
}

func (e *entry) view(now time.Time, cfg *Config) gateway.JobView {
	r := &e.rec
	v := gateway.JobView{Job: r.Job, Tracking: gateway.Tracking{
		Origin:    r.Origin,
		TrackedAt: r.TrackedAt,
		LastError: e.lastErr,
	}}
	if r.Lost {
		v.Status = collector.AgentStatusLost
		v.Tracking.LastUpstreamStatus = r.Job.Status
	}
	if !e.lastPolled.IsZero() {
		t := e.lastPolled
		v.Tracking.LastPolledAt = &t
	}
	if !r.TerminalAt.IsZero() {
		t := r.TerminalAt
		v.Tracking.TerminalAt = &t
	}
	if e.polled(now, cfg) && !e.nextPoll.IsZero() {
		t := e.nextPoll
		v.Tracking.NextCheckAt = &t
	}
	return v
}
