package tracker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

// promptExcerptLen is how much of a prompt an intent keeps, in runes:
// enough to find the job in the platform's dashboard.
const promptExcerptLen = 120

// CreateRequest is a job to create.
type CreateRequest struct {
	Project string
	Prompt  string
	// IdempotencyKey, when not empty, makes retries safe: a create with a
	// key already used in the project is not sent again (see Create).
	IdempotencyKey string
	// Admit, when not nil, is called once the request is known to be a new
	// create (not a replay, not a conflict), before anything is written or
	// sent; an error from it is returned as it is and nothing is done. The
	// gateway takes its create limit slot here, so replays cost none.
	Admit func() error
}

// Created is the answer to a create.
type Created struct {
	// Job is the job: as the API answered, or for a replay as tracked now.
	Job apiclient.Job
	// Status is the HTTP status of the API's answer to the create (for a
	// replay, of the first answer; 0 when unknown).
	Status int
	// Replayed: the key was used before with the same request; nothing was
	// sent upstream.
	Replayed bool
}

var (
	// ErrIdempotencyKeyReused: the key was used in the project with another
	// request (another prompt). Nothing was sent.
	ErrIdempotencyKeyReused = errors.New("this Idempotency-Key was already used with a different request body")
	// ErrIdempotencyKeyInFlight: a create with the key is under way. Nothing
	// was sent.
	ErrIdempotencyKeyInFlight = errors.New("a request with this Idempotency-Key is still being processed; retry once it has been answered")
	// ErrNoSuchIntent: no create of unknown outcome has that id.
	ErrNoSuchIntent = errors.New("no create of unknown outcome with this id")
)

// IntentError means the create (or message) intent could not be written to
// the state file, so the request was not sent.
type IntentError struct {
	Err error
	// Intent is the id of the intent that was not written.
	Intent string
	// Message: the intent of a follow-up message, not a create.
	Message bool
}

func (e *IntentError) Error() string {
	msg := fmt.Sprintf("the %s could not be recorded in the state file (intent %s), so it was not sent: %v", e.what(), e.Intent, e.Err)
	var te *store.WriteTimeoutError
	if errors.As(e.Err, &te) && !te.Stalled && !e.Message {
		msg += fmt.Sprintf("; should the write still land, %s is listed under unknown-creates after the next start: nothing was sent, dismiss it", e.Intent)
	}
	return msg
}

func (e *IntentError) what() string {
	if e.Message {
		return "follow-up message"
	}
	return "create"
}

func (e *IntentError) Unwrap() error { return e.Err }

// OutcomeUnknownError means a create was (perhaps) sent upstream but its
// outcome is unknown: the exporter stopped before the answer was recorded,
// or the request failed in a way that does not say whether the API created
// the job. The intent is listed by UnknownCreates until it is resolved
// (ResolveIntent) or dismissed (DismissIntent). Err is the failure when it
// happened to this request, nil when the intent is an older one met again
// through its key.
type OutcomeUnknownError struct {
	Intent UnknownCreate
	Err    error
}

func (e *OutcomeUnknownError) Error() string {
	return withCause(fmt.Sprintf("the outcome of create %s (started %s) is unknown: the job may have been created upstream; "+
		"find it in the Mintlify dashboard, then track it with POST /api/v2/agent/%s/job/{jobId}/track?intent=%s, "+
		"or if no job was created dismiss the intent with DELETE /api/v2/agent/%s/unknown-creates/%s",
		e.Intent.ID, e.Intent.StartedAt.UTC().Format(time.RFC3339), e.Intent.Project, e.Intent.ID, e.Intent.Project, e.Intent.ID), e.Err)
}

func (e *OutcomeUnknownError) Unwrap() error { return e.Err }

// UnknownCreate is a create whose outcome is unknown, as listed to
// operators.
type UnknownCreate struct {
	ID             string    `json:"id"`
	Project        string    `json:"project"`
	IdempotencyKey string    `json:"idempotencyKey,omitempty"`
	PromptExcerpt  string    `json:"promptExcerpt"`
	StartedAt      time.Time `json:"startedAt"`
}

// intentRecord is a create intent.
type intentRecord struct {
	ID, Project, IdemKey, RequestHash, PromptExcerpt string
	StartedAt                                        time.Time
}

// intent is a create intent in memory.
type intent struct {
	rec intentRecord
	// inFlight: this process is sending it; otherwise its outcome is
	// unknown.
	inFlight bool
}

func (in *intent) view() UnknownCreate {
	r := &in.rec
	return UnknownCreate{ID: r.ID, Project: r.Project, IdempotencyKey: r.IdemKey, PromptExcerpt: r.PromptExcerpt, StartedAt: r.StartedAt}
}

func excerpt(prompt string) string {
	prompt = strings.ToValidUTF8(strings.TrimSpace(prompt), "\uFFFD")
	if utf8.RuneCountInString(prompt) <= promptExcerptLen {
		return prompt
	}
	r := []rune(prompt)
	return string(r[:promptExcerptLen]) + "…"
}

// Create creates a job upstream and records it, crash-safely:
//
//  1. a create intent is written (fsync) before anything is sent, so a
//     create whose outcome a crash hides is found at the next start
//     (UnknownCreates) instead of running untracked;
//  2. on the API's answer the job is written and the intent deleted in one
//     transaction, before Create returns, so a 2xx answered for a job
//     means it survives kill -9.
//
// With an idempotency key, a key already used in the project is not sent
// again: the same request gets the job (Replayed), another request
// ErrIdempotencyKeyReused, a request while the first is under way
// ErrIdempotencyKeyInFlight, and a key whose create has an unknown outcome
// *OutcomeUnknownError. Keys are kept as long as their job.
//
// If the job's write fails it is still tracked in memory (and written
// again at its next poll) and a *StateError is returned. A create refused
// because the API's Retry-After is still running returns
// *apiclient.ThrottledError without sending anything.
func (s *Tracker) Create(ctx context.Context, req CreateRequest) (Created, error) {
	s.inflight.Add(1)
	defer s.inflight.Done()
	project, key := req.Project, req.IdempotencyKey
	if err := checkIdempotencyKey(key); err != nil {
		return Created{}, err
	}
	at := s.cfg.Now()
	in := &intent{inFlight: true, rec: intentRecord{ID: newIntentID("ci_"), Project: project, IdemKey: key,
		RequestHash: requestHash(req.Prompt), PromptExcerpt: excerpt(req.Prompt), StartedAt: at}}
	ikey := storeKey(project, in.rec.ID)

	replay := func(ref keyRef) (Created, error) { return s.replayLocked(ref, in.rec.RequestHash) }
	if c, done, err := openIntent(s, createIntents, ikey, in, req.Admit, replay, s.api.ThrottledUntil, apiclient.EndpointCreateJob); done || err != nil {
		return c, err
	}

	job, code, err := s.api.CreateJobWithStatus(ctx, project, req.Prompt)
	if err == nil {
		// A job was created, but an id that cannot be kept (too long, not
		// printable) cannot be tracked, written or answered: the create
		// stays of unknown outcome for an operator.
		err = unkeepableID("job id", job.ID)
	}
	if err != nil {
		err = fmt.Errorf("creating a job of project %s: %w", project, err)
		if sentFailed(s, createIntents, ikey, in, err) {
			return Created{}, &OutcomeUnknownError{Intent: in.view(), Err: err}
		}
		return Created{}, err
	}
	at = s.cfg.Now()
	j := *job
	boundJob(&j)
	rec, ev := transition(record{Project: project, Origin: OriginGateway, TrackedAt: at, SubmittedBy: userFrom(ctx),
		IdemKey: key, RequestHash: in.rec.RequestHash, CreateStatus: code}, j, at, seenLive, time.Time{})
	jkey := storeKey(project, j.ID)
	s.metrics.submittedJob(project)
	e := &entry{rec: rec, polling: polling{intentKey: ikey}}
	// A poll of a stale record being replaced must not write over the new
	// job's first record.
	s.wmu.Lock()
	defer s.wmu.Unlock()
	old, stale := s.claimNew(jkey, e, in.rec.StartedAt)
	switch {
	case old != nil && stale:
		// Never a 2xx for a job that is not tracked: the intent stays,
		// listed with the creates of unknown outcome.
		s.mu.Lock()
		in.inFlight = false
		s.mu.Unlock()
		level.Error(s.logger).Log("msg", "the API answered a new job with the id of a tracked job that is still running; the new job is not tracked",
			"project", project, "job", j.ID, "intent", in.rec.ID)
		return Created{}, &IDCollisionError{JobID: j.ID, Intent: in.view()}
	case old != nil:
		// Tracked concurrently (and written) already: only the intent goes.
		dropIntent(s, createIntents, ikey, in, true)
		return Created{Job: *job, Status: code}, nil
	}
	s.mu.Lock()
	removeIntentLocked(s, createIntents, ikey, in)
	if key != "" {
		s.keys[storeKey(project, key)] = keyRef{job: jkey}
	}
	s.mu.Unlock()
	perr := s.persist(jkey, &rec, store.Op{Bucket: bucketIntents, Key: ikey})
	s.release(e, perr)
	if perr != nil {
		return Created{}, &StateError{JobID: j.ID, Err: perr, Intent: in.rec.ID}
	}
	s.mu.Lock()
	e.intentKey = ""
	s.metrics.count(project, ev) // under the lock, as applyJob
	s.mu.Unlock()
	return Created{Job: *job, Status: code}, nil
}

// IDCollisionError means the API answered a create with the id of a job
// that is tracked and still running, so the new job could not be tracked.
// Its intent is kept, listed by UnknownCreates.
type IDCollisionError struct {
	JobID  string
	Intent UnknownCreate
}

func (e *IDCollisionError) Error() string {
	return fmt.Sprintf("the Mintlify API created job %s, but a tracked job that is still running has that id: the new job is not tracked "+
		"(create %s is listed under unknown-creates)", e.JobID, e.Intent.ID)
}

// claimNew claims key for a job just created upstream (the create started
// at since), like claim. An entry already under the key is either this job,
// tracked concurrently (same createdAt, or tracked since the create
// started), returned with stale false; or an older job that had the same id
// (an API that reused ids, as the sandbox did across restarts): a finished
// or lost one is replaced by e (its idempotency keys go with it), a running
// one is returned with stale true.
func (s *Tracker) claimNew(key string, e *entry, since time.Time) (old *entry, stale bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old = s.entries[key]
	if old != nil {
		r := &old.rec
		if (!r.Job.CreatedAt.IsZero() && r.Job.CreatedAt.Equal(e.rec.Job.CreatedAt)) || !r.TrackedAt.Before(since) {
			return old, false
		}
		if !r.Lost && !apiclient.IsTerminal(r.Job.Status) {
			return old, true
		}
		level.Warn(s.logger).Log("msg", "the API reused the id of a finished tracked job: the old record is replaced by the new job",
			"project", r.Project, "job", r.Job.ID, "old_status", r.viewStatus(), "old_created_at", r.Job.CreatedAt)
		s.forgetKeysLocked(key, old)
	}
	e.pollPending = true
	s.entries[key] = e
	return nil, false
}

// forgetKeysLocked drops the idempotency keys that refer to the job under
// key. s.mu is held.
func (s *Tracker) forgetKeysLocked(key string, e *entry) {
	r := &e.rec
	if r.IdemKey != "" && s.keys[storeKey(r.Project, r.IdemKey)].job == key {
		delete(s.keys, storeKey(r.Project, r.IdemKey))
	}
	for _, m := range r.Messages {
		if m.IdemKey != "" && s.keys[storeKey(r.Project, m.IdemKey)].msgJob == key {
			delete(s.keys, storeKey(r.Project, m.IdemKey))
		}
	}
}

// createNotDone reports whether a failed create certainly created nothing:
// the API answered (with an error), or nothing was sent.
func createNotDone(err error) bool {
	var apiErr *apiclient.APIError
	var throttled *apiclient.ThrottledError
	return errors.As(err, &apiErr) || errors.As(err, &throttled)
}

// replayLocked answers a create whose key is known. s.mu is held.
func (s *Tracker) replayLocked(ref keyRef, hash string) (Created, error) {
	if ref.msgJob != "" || ref.msgIntent != nil || ref.kind != "" {
		// The key of a follow-up or of another kind's operation: another
		// request.
		return Created{}, ErrIdempotencyKeyReused
	}
	if ref.intent != nil {
		return Created{}, replayIntentLocked(ref.intent, hash, func() error { return &OutcomeUnknownError{Intent: ref.intent.view()} })
	}
	e := s.entries[ref.job]
	if err := replayRecordLocked(e != nil, func() (string, string) { return e.rec.RequestHash, e.intentKey }, hash,
		func() error { return &StateError{JobID: e.rec.Job.ID, Err: errNotWrittenYet, Intent: e.intentKey} }); err != nil {
		return Created{}, err
	}
	return Created{Job: e.rec.Job, Status: e.rec.CreateStatus, Replayed: true}, nil
}

// errNotWrittenYet is a replayed create's while its job's record is not in
// the state.
var errNotWrittenYet = errors.New("its record is not written yet")

// UnknownCreates lists the project's creates whose outcome is unknown,
// oldest first.
func (s *Tracker) UnknownCreates(project string) []UnknownCreate {
	return unknownIntents(s, createIntents, project, (*intent).view)
}

// DismissIntent deletes a create of unknown outcome: the operator found
// that no job was created (or gives it up). Its idempotency key is free
// again: a retry with it creates a job.
func (s *Tracker) DismissIntent(project, id string) error {
	return dismissIntent(s, createIntents, project, id)
}

// ResolveIntent resolves a create of unknown outcome with the job the
// operator found it created: the job is tracked (as by Track), takes the
// intent's idempotency key, so that a retry with the key gets this job,
// and the intent is deleted, in one write.
func (s *Tracker) ResolveIntent(ctx context.Context, project, intentID, jobID string) (JobView, TrackResult, error) {
	// Created through the gateway and never counted: what it reached by
	// now is counted.
	follow := func(*intent) (JobView, TrackResult, error) { return s.track(ctx, project, jobID, seenLive) }
	return settleIntent(s, createIntents, project, intentID, follow, func(ikey string, in *intent) (JobView, error) {
		return s.adoptCreateKey(ikey, in, project, intentID, jobID)
	})
}

// adoptCreateKey gives the job jobID, followed, the idempotency key of the
// create intent in (under ikey) and writes it with the intent's deletion.
// s.wmu is held (settleIntent).
func (s *Tracker) adoptCreateKey(ikey string, in *intent, project, intentID, jobID string) (JobView, error) {
	jkey := storeKey(project, jobID)
	s.mu.Lock()
	e := s.entries[jkey]
	if e == nil || (e.rec.IdemKey != "" && e.rec.IdemKey != in.rec.IdemKey) {
		s.mu.Unlock()
		return JobView{}, errOtherKey("job", jobID)
	}
	rec := e.rec
	rec.IdemKey, rec.RequestHash = in.rec.IdemKey, in.rec.RequestHash
	s.mu.Unlock()
	if err := s.persist(jkey, &rec, store.Op{Bucket: bucketIntents, Key: ikey}); err != nil {
		return JobView{}, &StateError{JobID: jobID, Err: err}
	}
	s.mu.Lock()
	e.rec.IdemKey, e.rec.RequestHash = rec.IdemKey, rec.RequestHash
	settledLocked(s, createIntents, ikey, in, project, rec.IdemKey, keyRef{job: jkey})
	v := e.view(s.cfg.Now(), &s.cfg)
	s.mu.Unlock()
	level.Info(s.logger).Log("msg", "create of unknown outcome resolved", "project", project, "intent", intentID, "job", jobID)
	return v, nil
}
