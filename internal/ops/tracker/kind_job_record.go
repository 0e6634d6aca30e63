package tracker

import (
	"slices"
	"time"
	"unique"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
)

// Origins of a tracked job (Tracking.Origin).
const (
	OriginGateway = "gateway" // created through the gateway (Create)
	OriginTrack   = "track"   // created elsewhere, tracked with Track
	// OriginAutomation (kind_automation.go): the run of an automation.
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

// record is a tracked job as the tracker works with it; recordV1 is its
// form in the state file.
type record struct {
	Project   string
	Job       apiclient.Job
	Origin    string
	TrackedAt time.Time
	// TerminalAt is when the job was first seen terminal or declared lost.
	TerminalAt time.Time
	// Counted holds the terminal statuses already counted (or deliberately
	// not counted because the job was terminal when first seen).
	Counted counted
	// PRCounted: the job's pull request was counted (or deliberately not).
	PRCounted bool
	// Lost: the API answered 404 repeatedly; no longer polled.
	Lost bool
	// WatchEnded: the archive watch of a completed job ended early (the API
	// no longer knows the job).
	WatchEnded bool
	// IdemKey is the Idempotency-Key the job was created with, RequestHash
	// the hash of that request (requestHash) and CreateStatus the HTTP
	// status of the API's first answer: what a retry with the key is
	// answered with.
	IdemKey      string
	RequestHash  string
	CreateStatus int
	// Turns is how many turns the job has had: 1 from its creation (or
	// first sighting), one more for each follow-up message (sent through
	// the gateway, or noticed as the job turning active again after it
	// ended). 0 in records written before turns existed means 1.
	Turns int
	// TurnStartedAt is when the current turn started: zero for the first
	// turn (its start is the job's createdAt), else the time of the
	// follow-up (or when the job was first seen active again).
	TurnStartedAt time.Time
	// SubmittedBy is who created the job through the gateway, or tracked
	// it: the gateway's basic-auth user, empty without one.
	SubmittedBy string
	// Messages are the follow-ups sent through the gateway: every one with
	// an idempotency key (kept as long as the job, for replays), and the
	// others of the last hour (for the local message limit after a
	// restart).
	Messages []messageRecord
	// Rebuilt: state salvage rebuilt the record from the key of an
	// unreadable one; its idempotency keys, turns and submitter are lost.
	Rebuilt bool
}

// messageRecord is a follow-up message sent through the gateway.
type messageRecord struct {
	IdemKey, RequestHash string
	At                   time.Time
	// Status is the HTTP status of the API's answer; 0 when the outcome is
	// unknown (the exporter stopped, or the request failed, before the
	// answer was recorded).
	Status int
	// Turn is the turn the message started; 0 when unknown (for a message
	// of unknown outcome: not yet re-checked), turnNotSeen when its
	// re-check found no turn it could have started.
	Turn int
	// By is who sent it (the gateway's basic-auth user).
	By string
}

// turnNotSeen is the Turn of a follow-up of unknown outcome whose
// re-check found the job ended: no turn is known to be its.
const turnNotSeen = -1

// pendingMessage returns when the follow-up of unknown outcome was sent
// that may have started a turn the tracker has not seen yet: one without
// an answer (Status 0) and not yet re-checked (Turn 0), sent after the
// current turn started. Kept in the record, so a restart re-checks it.
func (r *record) pendingMessage() (time.Time, bool) {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m := &r.Messages[i]
		if m.Status == 0 && m.Turn == 0 && m.At.After(r.turnStart()) {
			return m.At, true
		}
	}
	return time.Time{}, false
}

// turn is the number of the current turn.
func (r *record) turn() int { return max(r.Turns, 1) }

// turnStart is when the current turn started, zero when unknown.
func (r *record) turnStart() time.Time {
	if !r.TurnStartedAt.IsZero() {
		return r.TurnStartedAt
	}
	return r.Job.CreatedAt
}

// startTurn makes rec a job whose new turn started at: active again, its
// terminal statuses not yet counted for this turn.
func startTurn(rec *record, at time.Time) {
	rec.Turns = rec.turn() + 1
	rec.TurnStartedAt = at
	rec.TerminalAt = time.Time{}
	rec.Counted = 0
	rec.WatchEnded = false
	// The API took a follow-up for it: it knows the job.
	rec.Lost = false
}

func storeKey(project, id string) string { return project + "\x00" + id }

// entry is a tracked job in memory: its record plus scheduling state that
// is not worth persisting.
type entry struct {
	rec record
	polling
	// recheck: poll the job at the next round even though it is no longer
	// polled (a follow-up of unknown outcome may have made it active
	// again, or it was tracked again).
	recheck bool
}

// intern shares the strings that repeat across jobs (status, model,
// repository), which is most of a job's memory after its id and ref.
func intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}

// boundJob bounds every string of a job the API answered (bounded.Text:
// a 1 MB status is kept, written and served as a few hundred bytes) and
// interns those that repeat. Its id is checked where it enters (Create,
// Track): polls and follow-ups keep the id they asked for.
func boundJob(j *apiclient.Job) {
	j.Status = intern(bounded.Text(j.Status))
	j.Model = intern(bounded.Text(j.Model))
	j.Source.Repository = intern(bounded.Text(j.Source.Repository))
	j.Source.Ref = bounded.Text(j.Source.Ref)
	if j.PRLink != nil {
		pr := bounded.Text(*j.PRLink)
		j.PRLink = &pr
	}
}

// viewStatus is the status Job, Jobs and the jobs gauge show.
func (r *record) viewStatus() string {
	if r.Lost {
		return StatusLost
	}
	return r.Job.Status
}

// polled reports whether the job is still polled at all at now.
func (e *entry) polled(now time.Time, cfg *Config) bool {
	r := &e.rec
	switch {
	case e.recheck:
		return true
	case r.Lost:
		return false
	case !apiclient.IsTerminal(r.Job.Status):
		return true
	case r.Job.Status == apiclient.StatusCompleted:
		return !r.WatchEnded && cfg.ArchiveWatch > 0 && now.Before(r.TerminalAt.Add(cfg.ArchiveWatch))
	}
	return false
}

func (e *entry) view(now time.Time, cfg *Config) JobView {
	r := &e.rec
	v := JobView{Job: r.Job, Tracking: Tracking{
		Followed: Followed{Origin: r.Origin, TrackedAt: r.TrackedAt, LastError: e.lastErr, SubmittedBy: r.SubmittedBy},
		Turn:     r.turn(),
		Rebuilt:  r.Rebuilt,
	}}
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if m := r.Messages[i]; m.Turn == r.turn() && m.Turn > 1 {
			v.Tracking.TurnStartedBy = m.By
			v.Tracking.TurnInferred = m.Status == 0
			break
		}
	}
	if !r.TurnStartedAt.IsZero() {
		t := r.TurnStartedAt
		v.Tracking.TurnStartedAt = &t
	}
	if r.Lost {
		v.Status = StatusLost
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

// sighting says how the tracker came to know a job's current state, which
// decides whether what the state shows is counted.
type sighting int

const (
	// seenLive: the job was created or polled by this tracker, so a
	// terminal status or pull request it shows is news and is counted.
	seenLive sighting = iota
	// seenAfterTheFact: the job was first seen now, tracked after it was
	// created elsewhere; whatever it already reached is recorded as
	// counted without counting it (this tracker did not see it happen).
	seenAfterTheFact
)

// events are the metric updates of one state change, applied only after
// the change is persisted.
type events struct {
	finished string
	// duration, when observed, is the turn's start (createdAt for the
	// first) to the turn's first terminal poll.
	duration   time.Duration
	observeDur bool
	pr         bool
	lost       bool
	// newTurn: the job was seen active again after it ended (a follow-up
	// sent elsewhere), or after a follow-up of unknown outcome (inferred).
	newTurn, inferred bool
}

// transition computes the record after seeing job at time at, and the
// events to count. A job seen live in a non-terminal status starts a new
// turn when its last turn had ended (a follow-up sent elsewhere, or one of
// unknown outcome), or when sentAt is not zero: a follow-up of unknown
// outcome was sent then, and the job is running after it, whatever the
// tracker believed before (a turn that ended unseen, or one still
// running, which the follow-up ended). The turn starts at sentAt when
// given, else at. That follow-up's Turn is set either way: the turn it
// started, or turnNotSeen.
func transition(old record, job apiclient.Job, at time.Time, how sighting, sentAt time.Time) (record, events) {
	rec := old
	rec.Job = job
	var ev events
	if startsTurn(old, job, how, sentAt) {
		start := at
		if !sentAt.IsZero() && sentAt.Before(at) {
			start = sentAt
		}
		startTurn(&rec, start)
		ev.newTurn = true
		ev.inferred = !sentAt.IsZero()
	}
	if !sentAt.IsZero() {
		rec.settleFollowUp(sentAt, ev.newTurn)
	}
	rec.countTerminal(job.Status, at, how, &ev)
	if prFinished(job) && !rec.PRCounted {
		rec.PRCounted = true
		ev.pr = how == seenLive
	}
	return rec, ev
}

// startsTurn reports whether job, seen running live, starts a new turn:
// its last turn had ended, or a follow-up of unknown outcome was sent at
// sentAt (not zero).
func startsTurn(old record, job apiclient.Job, how sighting, sentAt time.Time) bool {
	running := how == seenLive && job.Status != "" && !apiclient.IsTerminal(job.Status)
	ended := old.Counted != 0 || apiclient.IsTerminal(old.Job.Status)
	return running && (ended || !sentAt.IsZero())
}

// settleFollowUp sets the Turn of the follow-up of unknown outcome sent at
// sentAt: the turn it started, or turnNotSeen. Messages is copied first:
// the old record shares it.
func (rec *record) settleFollowUp(sentAt time.Time, startedTurn bool) {
	rec.Messages = slices.Clone(rec.Messages)
	for i := range rec.Messages {
		if m := &rec.Messages[i]; m.Status == 0 && m.Turn == 0 && m.At.Equal(sentAt) {
			m.Turn = turnNotSeen
			if startedTurn {
				m.Turn = rec.Turns
			}
		}
	}
}

// countTerminal records a terminal status not counted yet, and when it
// was seen live, the events that count it (and the turn's duration on the
// turn's first terminal poll).
func (rec *record) countTerminal(status string, at time.Time, how sighting, ev *events) {
	bit := countedBit(status)
	if bit == 0 || rec.Counted&bit != 0 {
		return
	}
	rec.Counted |= bit
	firstTerminal := rec.TerminalAt.IsZero()
	if firstTerminal {
		rec.TerminalAt = at
	}
	if how != seenLive {
		return
	}
	ev.finished = status
	if start := rec.turnStart(); firstTerminal && !start.IsZero() {
		ev.observeDur = true
		ev.duration = at.Sub(start)
	}
}

// prFinished: a PR counts once its job completed (or was archived after
// that); a link on a job that is active or failed is not a finished change.
func prFinished(job apiclient.Job) bool {
	done := job.Status == apiclient.StatusCompleted || job.Status == apiclient.StatusArchived
	return done && job.PRLink != nil && *job.PRLink != ""
}
