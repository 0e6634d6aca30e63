package tracker

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
)

// Followed is the exporter's own information about an operation it
// follows (an agent job or a deployment), added to the API's object under
// "tracking" (clients of the API ignore unknown fields).
type Followed struct {
	// Origin is OriginGateway or OriginTrack.
	Origin    string    `json:"origin"`
	TrackedAt time.Time `json:"trackedAt"`
	// LastPolledAt is the last successful poll in this process.
	LastPolledAt *time.Time `json:"lastPolledAt,omitempty"`
	// TerminalAt is when the operation was first seen in a terminal status
	// (or declared lost).
	TerminalAt *time.Time `json:"terminalAt,omitempty"`
	// LastUpstreamStatus is the last status the API reported, set when the
	// status is the exporter's own StatusLost.
	LastUpstreamStatus string `json:"lastUpstreamStatus,omitempty"`
	// LastError is the last poll error, cleared by a successful poll.
	LastError string `json:"lastError,omitempty"`
	// NextCheckAt is when it will be polled next (for a completed job: its
	// next archive re-check); absent when it is due at the next poll round
	// or no longer polled.
	NextCheckAt *time.Time `json:"nextCheckAt,omitempty"`
	// SubmittedBy is the basic-auth user who created or triggered it
	// through the gateway (origin gateway) or tracked it (origin track);
	// absent without basic auth.
	SubmittedBy string `json:"submittedBy,omitempty"`
}

// Tracking is what the exporter knows of a tracked job: what it knows of
// every operation it follows, and the job's turns.
type Tracking struct {
	Followed
	// Turn is the job's current turn: 1 from its creation, one more for
	// each follow-up message.
	Turn int `json:"turn"`
	// TurnStartedAt is when the current turn started, absent for the first
	// turn (it started at createdAt).
	TurnStartedAt *time.Time `json:"turnStartedAt,omitempty"`
	// TurnStartedBy is the basic-auth user whose follow-up message started
	// the current turn, when it was sent through the gateway.
	TurnStartedBy string `json:"turnStartedBy,omitempty"`
	// TurnInferred: the current turn is the one a follow-up of unknown
	// outcome started (its answer was lost to a crash or a dropped
	// connection), inferred from the job running after it was sent.
	TurnInferred bool `json:"turnInferred,omitempty"`
	// Rebuilt: the job's record in the state file was unreadable and
	// `state salvage` rebuilt it from the job's id: its idempotency keys,
	// earlier turns and submitter are lost.
	Rebuilt bool `json:"rebuilt,omitempty"`
}

type userKey struct{}

// WithUser returns ctx carrying the user on whose behalf the gateway calls
// the tracker (its basic-auth user): Create, Track and Message record it
// on the job.
func WithUser(ctx context.Context, user string) context.Context {
	return context.WithValue(ctx, userKey{}, user)
}

// UserFrom returns the user WithUser put in ctx ("" when none).
func UserFrom(ctx context.Context) string { return userFrom(ctx) }

func userFrom(ctx context.Context) string {
	u, _ := ctx.Value(userKey{}).(string)
	return u
}

// JobView is a tracked job as shown to clients: the API's job object (same
// field names) plus "tracking". Its status is the API's latest, or
// StatusLost when the API no longer knows the job.
type JobView struct {
	apiclient.Job
	Tracking Tracking `json:"tracking"`
}

// StateError means a job was created (or read) upstream but could not be
// written to the state file, so it is not certain to survive a restart. It
// is tracked in memory and written again at its next poll.
type StateError struct {
	JobID string
	Err   error
	// Message: the write of a follow-up's new turn failed.
	Message bool
	// Intent is the create's intent, left in the state file until the
	// job's write lands (empty for a track or a follow-up).
	Intent string
	// Op names the op kind (opKind) of JobID, an operation started or
	// handed over that could not be written ("deployment"); "" for a job.
	Op string
}

func (e *StateError) Error() string {
	if e.Op != "" {
		return fmt.Sprintf("%s %s was started upstream but could not be saved to the state (it is followed, written again at its next poll, "+
			"or handed with its id to the replica that runs the gateway next; a retry with its Idempotency-Key is never sent again, and is answered "+
			"with this %s once saved): %v", e.Op, e.JobID, e.Op, e.Err)
	}
	if e.Message {
		return fmt.Sprintf("job %s accepted the follow-up message upstream, but its new turn could not be saved to the state file "+
			"(it is followed in memory and written again at its next poll): %v", e.JobID, e.Err)
	}
	if e.Intent != "" {
		return fmt.Sprintf("job %s was created upstream but could not be saved to the state (it is tracked, written again at its next poll, "+
			"or handed with its id to the replica that runs the gateway next; until then its create intent %s stays in the state, listed under "+
			"unknown-creates should the exporter restart first): %v", e.JobID, e.Intent, e.Err)
	}
	return fmt.Sprintf("job %s was created upstream but could not be saved to the state file: %v", e.JobID, e.Err)
}

func (e *StateError) Unwrap() error { return e.Err }

// TrackResult says what Track did.
type TrackResult int

const (
	// NewlyTracked: the job was read upstream and is tracked from now on.
	NewlyTracked TrackResult = iota
	// AlreadyTracked: the job was tracked before; nothing was sent upstream.
	AlreadyTracked
)

// Job returns a tracked job.
func (s *Tracker) Job(project, id string) (JobView, bool) {
	now := s.cfg.Now()
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.entries[storeKey(project, id)]
	if e == nil {
		return JobView{}, false
	}
	return e.view(now, &s.cfg), true
}

// Jobs lists a project's tracked jobs, newest first (createdAt, then id),
// only those whose shown status is status unless it is empty.
func (s *Tracker) Jobs(project, status string) []JobView {
	now := s.cfg.Now()
	s.mu.RLock()
	out := []JobView{}
	for _, e := range s.entries {
		if e.rec.Project != project || (status != "" && e.rec.viewStatus() != status) {
			continue
		}
		out = append(out, e.view(now, &s.cfg))
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b JobView) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return out
}

// Track starts tracking a job created elsewhere after one get upstream. A
// job that is already terminal when first seen is stored as such but not
// counted as finished (this exporter did not see it finish). A job tracked
// already is returned as it is, AlreadyTracked, without asking upstream; if
// it is no longer polled it is re-checked at the next poll round.
// With a *StateError the job is tracked (in memory) and its view is valid;
// with any other error nothing is tracked.
func (s *Tracker) Track(ctx context.Context, project, id string) (JobView, TrackResult, error) {
	return s.track(ctx, project, id, seenAfterTheFact)
}

// track is Track; how is seenLive for a job this exporter created and never
// counted (ResolveIntent, a handover of one whose record was not saved),
// whose terminal status and pull request are then counted.
func (s *Tracker) track(ctx context.Context, project, id string, how sighting) (JobView, TrackResult, error) {
	s.inflight.Add(1)
	defer s.inflight.Done()
	if err := bounded.CheckID("job id", id); err != nil {
		return JobView{}, NewlyTracked, &BadIDError{Err: err}
	}
	if v, ok := s.recheckTracked(storeKey(project, id)); ok {
		return v, AlreadyTracked, nil
	}
	job, err := readOnce(s.api.ThrottledUntil, apiclient.EndpointGetJob, "job "+project+"/"+id,
		func() (*apiclient.Job, error) { return s.api.GetJob(ctx, project, id) })
	if err != nil {
		return JobView{}, NewlyTracked, err
	}
	return s.adoptJob(project, id, job, how, OriginTrack, userFrom(ctx))
}

// adoptJob tracks job (id of project), just read upstream, from now on:
// its record (of origin, by user) written before it is counted. One
// tracked concurrently is returned as it is, AlreadyTracked. The job
// kind's door for the operations of other kinds that are agent jobs (an
// automation's run).
func (s *Tracker) adoptJob(project, id string, job *apiclient.Job, how sighting, origin, user string) (JobView, TrackResult, error) {
	key := storeKey(project, id)
	at := s.cfg.Now()
	j := *job
	j.ID = id
	boundJob(&j)
	rec, ev := transition(record{Project: project, Origin: origin, TrackedAt: at, SubmittedBy: user}, j, at, how, time.Time{})
	e := &entry{rec: rec, polling: polling{lastPolled: at}}
	s.schedule(e, &rec, at, at)
	if old := s.claim(key, e); old != nil { // tracked concurrently
		s.mu.RLock()
		defer s.mu.RUnlock()
		return old.view(at, &s.cfg), AlreadyTracked, nil
	}
	perr := s.persist(key, &rec)
	s.release(e, perr)
	s.mu.Lock()
	v := e.view(at, &s.cfg)
	if perr == nil {
		s.metrics.count(project, ev) // after the write, under the lock that shows it (as Create)
	}
	s.mu.Unlock()
	if perr != nil {
		return v, NewlyTracked, &StateError{JobID: id, Err: perr}
	}
	return v, NewlyTracked, nil
}

// recheckTracked returns the view of a tracked job. A job no longer polled
// (failed, archived, lost, or past its archive watch) is re-checked at the
// next poll round: tracking it again is how a client says it may have been
// sent a follow-up elsewhere, and a job found active again starts a new
// turn.
func (s *Tracker) recheckTracked(key string) (JobView, bool) {
	now := s.cfg.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[key]
	if e == nil {
		return JobView{}, false
	}
	if !e.polled(now, &s.cfg) {
		e.recheck, e.nextPoll = true, time.Time{}
	}
	return e.view(now, &s.cfg), true
}

// RecentCreates returns, per project, when jobs were created through the
// gateway within window of now, oldest first: what a local create limit
// must count after a restart.
func (s *Tracker) RecentCreates(window time.Duration) map[string][]time.Time {
	now := s.cfg.Now()
	out := map[string][]time.Time{}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, e := range s.entries {
		if e.rec.Origin == OriginGateway && now.Sub(e.rec.TrackedAt) < window {
			out[e.rec.Project] = append(out[e.rec.Project], e.rec.TrackedAt)
		}
	}
	// Creates of unknown outcome may have reached the API too.
	for _, in := range s.intents {
		if now.Sub(in.rec.StartedAt) < window {
			out[in.rec.Project] = append(out[in.rec.Project], in.rec.StartedAt)
		}
	}
	for _, ts := range out {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	}
	return out
}
