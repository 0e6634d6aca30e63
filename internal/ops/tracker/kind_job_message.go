package tracker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

// MessageRequest is a follow-up message to send to a job.
type MessageRequest struct {
	Project, JobID, Prompt string
	// IdempotencyKey, when not empty, makes retries safe, as for Create:
	// keys share one namespace per project with creates.
	IdempotencyKey string
	// Admit, when not nil, is called once the request is known to be a new
	// message (not a replay, not a conflict), before anything is sent; an
	// error from it is returned as it is. The gateway takes its message
	// limit slot here.
	Admit func() error
}

// Messaged is the answer to a follow-up message.
type Messaged struct {
	// Job is the job as tracked once the message was accepted: active, in
	// its new turn (for a replay: as tracked now).
	Job JobView
	// Status is the HTTP status of the API's answer (for a replay, of the
	// first answer).
	Status int
	// Replayed: the key was used before with the same request; nothing was
	// sent upstream.
	Replayed bool
}

// NotSentError wraps the failure of a message that certainly reached
// nothing upstream (the job could not be read to track it, the API's
// Retry-After is running, the intent could not be written): the gateway
// gives its limit slot back.
type NotSentError struct{ Err error }

func (e *NotSentError) Error() string { return e.Err.Error() + " (the message was not sent)" }

func (e *NotSentError) Unwrap() error { return e.Err }

// MessageOutcomeUnknownError means a follow-up was (perhaps) sent but its
// outcome is unknown. The job is re-checked at the next poll round: if it
// is active again, the new turn is followed from the time of the message.
// A retry with the message's idempotency key is answered with this error
// (Err nil), never sent again.
type MessageOutcomeUnknownError struct {
	Project, JobID string
	At             time.Time
	Err            error
}

func (e *MessageOutcomeUnknownError) Error() string {
	return withCause(fmt.Sprintf("the outcome of the follow-up message to job %s sent at %s is unknown: it may have reached the job; "+
		"the job is re-checked, GET /api/v2/agent/%s/job/%s shows whether a new turn started (send again, with a new key, if not)",
		e.JobID, e.At.UTC().Format(time.RFC3339), e.Project, e.JobID), e.Err)
}

func (e *MessageOutcomeUnknownError) Unwrap() error { return e.Err }

// messageIntent is a follow-up being sent.
type messageIntent struct {
	ID, Project, JobID, IdemKey, RequestHash string
	StartedAt                                time.Time
	// By is who sends it (the gateway's basic-auth user): the turn it
	// starts is theirs even when its answer is lost.
	By string
}

// messageHash is the request hash of a follow-up: its job and its prompt,
// so that a key reused for another job or another prompt is a conflict,
// and never equal to a create's.
func messageHash(jobID, prompt string) string {
	return requestHash("message", jobID, prompt)
}

// unkeyedMessagesKept is how long a message without a key stays on its
// job's record: long enough to seed the gateway's hourly limit.
const unkeyedMessagesKept = time.Hour

// Message sends a follow-up message to a job and starts its new turn,
// crash-safely, as Create does for a job:
//
//  1. a job this tracker does not track yet is tracked first (one get
//     upstream; a job the API does not know fails here, with nothing
//     sent);
//  2. a message intent is written (fsync) before the message is sent;
//  3. on the API's answer the job's new turn (active, started now, its
//     terminal statuses not yet counted) is written and the intent deleted
//     in one transaction, before Message returns.
//
// A crash between 2 and 3 leaves the intent: the next start re-checks the
// job, and follows its new turn if it is active again. A failure that does
// not say whether the API got the message does the same at once and
// returns *MessageOutcomeUnknownError. Failures that certainly sent nothing
// are *NotSentError. Idempotency keys work as for Create.
func (s *Tracker) Message(ctx context.Context, req MessageRequest) (Messaged, error) {
	s.inflight.Add(1)
	defer s.inflight.Done()
	project, id, key := req.Project, req.JobID, req.IdempotencyKey
	if err := checkIdempotencyKey(key); err != nil {
		return Messaged{}, &NotSentError{Err: err}
	}
	at := s.cfg.Now()
	mi := &messageIntent{ID: newIntentID("ci_"), Project: project, JobID: id, IdemKey: key,
		RequestHash: messageHash(id, req.Prompt), StartedAt: at, By: userFrom(ctx)}

	s.mu.Lock()
	if key != "" {
		if ref, ok := s.keys[storeKey(project, key)]; ok {
			m, err := s.replayMessageLocked(ref, key, mi.RequestHash)
			s.mu.Unlock()
			return m, err
		}
	}
	if req.Admit != nil {
		if err := req.Admit(); err != nil {
			s.mu.Unlock()
			return Messaged{}, err
		}
	}
	if key != "" {
		s.keys[storeKey(project, key)] = keyRef{msgIntent: mi}
	}
	s.mu.Unlock()

	if err := s.prepareMessage(ctx, mi); err != nil {
		s.releaseMessageKey(mi)
		return Messaged{}, err
	}
	job, code, err := s.api.SendMessage(ctx, project, id, req.Prompt)
	if err != nil {
		return Messaged{}, s.messageFailed(mi, err)
	}
	return s.recordMessage(ctx, mi, job, code)
}

// releaseMessageKey forgets the idempotency key reserved for mi, when it
// still is (nothing was sent: a retry with the key may send again).
func (s *Tracker) releaseMessageKey(mi *messageIntent) {
	if mi.IdemKey == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := storeKey(mi.Project, mi.IdemKey)
	if ref := s.keys[k]; ref.msgIntent == mi {
		delete(s.keys, k)
	}
}

// prepareMessage does what comes before sending mi's message: the job is
// tracked, the endpoint not throttled, and the intent written. Its errors
// are *NotSentError.
func (s *Tracker) prepareMessage(ctx context.Context, mi *messageIntent) error {
	project, id := mi.Project, mi.JobID
	if _, ok := s.Job(project, id); !ok {
		if _, _, err := s.Track(ctx, project, id); err != nil {
			var stateErr *StateError
			if !errors.As(err, &stateErr) {
				return &NotSentError{Err: err}
			}
			// Tracked in memory only: the message's own write retries it.
		}
	}
	if until := s.api.ThrottledUntil(apiclient.EndpointSendMessage); !until.IsZero() {
		return &NotSentError{Err: &apiclient.ThrottledError{Endpoint: apiclient.EndpointSendMessage, Until: until}}
	}
	data, err := encodeMessageIntent(mi)
	if err == nil {
		err = s.store.Apply(store.Op{Bucket: bucketMessageIntents, Key: storeKey(project, mi.ID), Value: data})
	}
	if err != nil {
		s.writeFailed(err)
		level.Error(s.logger).Log("msg", "could not record a message intent; message not sent", "project", project, "job", id, "err", err)
		return &NotSentError{Err: &IntentError{Err: err, Intent: mi.ID, Message: true}}
	}
	return nil
}

// messageFailed handles a send that failed: one that certainly sent
// nothing deletes the intent and releases the key; one of unknown outcome
// becomes a message of unknown outcome on the job
// (*MessageOutcomeUnknownError).
func (s *Tracker) messageFailed(mi *messageIntent, err error) error {
	project, id := mi.Project, mi.JobID
	ikey := storeKey(project, mi.ID)
	if createNotDone(err) {
		if derr := s.store.Apply(store.Op{Bucket: bucketMessageIntents, Key: ikey}); derr != nil {
			s.writeFailed(derr)
			level.Error(s.logger).Log("msg", "could not delete a message intent from the state file; the job is re-checked at the next start",
				"project", project, "job", id, "err", derr)
		}
		s.releaseMessageKey(mi)
		return fmt.Errorf("sending a message to job %s/%s: %w", project, id, err)
	}
	level.Warn(s.logger).Log("msg", "follow-up message of unknown outcome: the job is re-checked", "project", project, "job", id,
		"idempotency_key", mi.IdemKey, "err", err)
	s.settleUnknownMessage(ikey, mi)
	return &MessageOutcomeUnknownError{Project: project, JobID: id, At: mi.StartedAt, Err: fmt.Errorf("sending a message to job %s/%s: %w", project, id, err)}
}

// recordMessage writes the job's new turn after the API took mi's message
// (answering code, and the job when it gave one) and deletes the intent,
// in one transaction.
func (s *Tracker) recordMessage(ctx context.Context, mi *messageIntent, job *apiclient.Job, code int) (Messaged, error) {
	project, id, key := mi.Project, mi.JobID, mi.IdemKey
	jkey := storeKey(project, id)
	at := s.cfg.Now()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	e := s.entries[jkey]
	if e == nil {
		// Forgotten while the message was under way (it had passed its
		// retention): track it again as it is now.
		e = &entry{rec: record{Project: project, Origin: OriginTrack, TrackedAt: at, Job: apiclient.Job{ID: id}}}
		s.entries[jkey] = e
	}
	rec := e.rec
	rec.Messages = append(keptMessages(rec.Messages, at), messageRecord{IdemKey: key, RequestHash: mi.RequestHash, At: at, Status: code, By: userFrom(ctx)})
	startTurn(&rec, at)
	rec.Messages[len(rec.Messages)-1].Turn = rec.Turns
	j := jobAfterMessage(rec.Job, job, id)
	// The turn has started already: what transition sees is its first
	// status, not a job seen active again.
	rec.Job = j
	rec, ev := transition(rec, j, at, seenLive, time.Time{})
	// With the job's create intent, when its first write failed.
	extra := append([]store.Op{{Bucket: bucketMessageIntents, Key: storeKey(project, mi.ID)}}, e.intentOps(bucketIntents)...)
	s.mu.Unlock()

	perr := s.persist(jkey, &rec, extra...)
	s.mu.Lock()
	e.rec = rec
	e.recheck = false
	e.errors, e.notFound = 0, 0
	s.schedule(e, &rec, at, at)
	if key != "" {
		s.keys[storeKey(project, key)] = keyRef{msgJob: jkey}
	}
	e.written(perr)
	v := e.view(at, &s.cfg)
	// Counted with the turn it shows (applyJob).
	s.metrics.messageSent(project)
	s.metrics.count(project, ev)
	s.mu.Unlock()
	if perr != nil {
		return Messaged{Job: v, Status: code}, &StateError{JobID: id, Err: perr, Message: true}
	}
	return Messaged{Job: v, Status: code}, nil
}

// jobAfterMessage is the job as a message left it: as the API answered,
// or when it did not say, known active again without a pull request.
func jobAfterMessage(known apiclient.Job, answered *apiclient.Job, id string) apiclient.Job {
	j := known
	if answered != nil && answered.Status != "" {
		j = *answered
		j.ID = id
	} else {
		j.Status, j.PRLink, j.ArchivedAt = apiclient.StatusActive, nil, nil
	}
	boundJob(&j)
	return j
}

// keptMessages drops the messages without a key older than
// unkeyedMessagesKept at now.
func keptMessages(ms []messageRecord, now time.Time) []messageRecord {
	out := make([]messageRecord, 0, len(ms)+1)
	for _, m := range ms {
		if m.IdemKey != "" || now.Sub(m.At) < unkeyedMessagesKept {
			out = append(out, m)
		}
	}
	return out
}

// replayMessageLocked answers a follow-up whose key is known. s.mu is held.
func (s *Tracker) replayMessageLocked(ref keyRef, key, hash string) (Messaged, error) {
	switch {
	case ref.msgIntent != nil:
		if ref.msgIntent.RequestHash != hash {
			return Messaged{}, ErrIdempotencyKeyReused
		}
		return Messaged{}, ErrIdempotencyKeyInFlight
	case ref.msgJob == "":
		// The key of a create (or a create intent): another request.
		return Messaged{}, ErrIdempotencyKeyReused
	}
	e := s.entries[ref.msgJob]
	if e == nil {
		return Messaged{}, ErrIdempotencyKeyInFlight
	}
	for _, m := range e.rec.Messages {
		if m.IdemKey != key {
			continue
		}
		if m.RequestHash != hash {
			return Messaged{}, ErrIdempotencyKeyReused
		}
		if m.Status == 0 {
			return Messaged{}, &MessageOutcomeUnknownError{Project: e.rec.Project, JobID: e.rec.Job.ID, At: m.At}
		}
		return Messaged{Job: e.view(s.cfg.Now(), &s.cfg), Status: m.Status, Replayed: true}, nil
	}
	return Messaged{}, ErrIdempotencyKeyInFlight
}

// settleUnknownMessage turns a message intent whose outcome is unknown into
// a message of unknown outcome on its job (so that its key is answered,
// never sent again) and a re-check of the job at the next round, in one
// write that deletes the intent. Should that write fail, the intent stays
// and the next start settles it.
func (s *Tracker) settleUnknownMessage(ikey string, mi *messageIntent) {
	jkey := storeKey(mi.Project, mi.JobID)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	e := s.entries[jkey]
	if e == nil {
		s.mu.Unlock()
		if err := s.store.Apply(store.Op{Bucket: bucketMessageIntents, Key: ikey}); err != nil {
			s.writeFailed(err)
		}
		return
	}
	rec := e.rec
	rec.Messages = append(keptMessages(rec.Messages, s.cfg.Now()), messageRecord{IdemKey: mi.IdemKey, RequestHash: mi.RequestHash, At: mi.StartedAt, By: mi.By})
	e.recheck, e.nextPoll = true, time.Time{}
	if mi.IdemKey != "" {
		s.keys[storeKey(mi.Project, mi.IdemKey)] = keyRef{msgJob: jkey}
	}
	e.rec.Messages = rec.Messages
	s.mu.Unlock()
	if err := s.persist(jkey, &rec, store.Op{Bucket: bucketMessageIntents, Key: ikey}); err != nil {
		s.mu.Lock()
		e.dirty = true
		s.mu.Unlock()
	}
}

// pendingMessageIntent is a message intent left by an earlier run, as
// read from the state.
type pendingMessageIntent struct {
	key string
	mi  messageIntent
}

// readMessageIntents reads the message intents of the projects want
// accepts, left by an earlier run: load settles them (see
// settleUnknownMessage) once everything it reads has been read.
func (s *Tracker) readMessageIntents(want func(project string) bool) ([]pendingMessageIntent, error) {
	var all []pendingMessageIntent
	err := s.store.ForEachIn(bucketMessageIntents, func(k, v []byte) error {
		mi, err := decodeMessageIntent(v)
		if err != nil {
			level.Warn(s.logger).Log("msg", "skipping unreadable message intent in the agent state file", "err", err)
			return nil
		}
		if want(mi.Project) {
			all = append(all, pendingMessageIntent{key: string(k), mi: mi})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("agent state file %s: reading message intents: %w", s.store.Path(), err)
	}
	return all, nil
}

// settleMessageIntents settles the message intents of an earlier run,
// before polling starts (or, for projects a reload adds, their first poll).
func (s *Tracker) settleMessageIntents(all []pendingMessageIntent) {
	for _, p := range all {
		level.Warn(s.logger).Log("msg", "follow-up message of unknown outcome from an earlier run: the job is re-checked now",
			"project", p.mi.Project, "job", p.mi.JobID, "sent_at", p.mi.StartedAt)
		s.settleUnknownMessage(p.key, &p.mi)
	}
}

// RecentMessages returns, per project, when follow-ups were sent through
// the gateway within window of now, oldest first: what a local message
// limit must count after a restart.
func (s *Tracker) RecentMessages(window time.Duration) map[string][]time.Time {
	now := s.cfg.Now()
	out := map[string][]time.Time{}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, e := range s.entries {
		for _, m := range e.rec.Messages {
			if now.Sub(m.At) < window {
				out[e.rec.Project] = append(out[e.rec.Project], m.At)
			}
		}
	}
	for _, ts := range out {
		sortTimes(ts)
	}
	return out
}

func sortTimes(ts []time.Time) {
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
}
