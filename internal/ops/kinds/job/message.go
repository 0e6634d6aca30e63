package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

// Follow-up messages: what agent jobs add to the engine's parts. A
// follow-up starts a new turn of its job, crash-safely, as a create starts
// a job: its intent written before it leaves (in its own bucket), the
// job's new turn written (and the intent deleted) before it is
// acknowledged, its Idempotency-Key kept on the job; one of unknown
// outcome makes the job re-checked, and its new turn followed from the
// time of the message if it is active again.

// MessageRequest is a follow-up message to send to a job.
type MessageRequest struct {
	Project, JobID, Prompt string
	// IdempotencyKey, when not empty, makes retries safe, as for creates:
	// keys share one namespace per project with creates.
	IdempotencyKey string
	// Admit is the gateway's message limit, called once the request is
	// known to be a new message, before anything is sent.
	Admit func() error
}

// Messaged is the answer to a follow-up: the job as followed once the
// message was accepted (active, in its new turn; for a replay, as now),
// the HTTP status of the API's answer (for a replay, of the first), and
// whether it is a replay (nothing was sent).
type Messaged struct {
	Job      View
	Status   int
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
// outcome is unknown. The job is re-checked at the next round: if it is
// active again, the new turn is followed from the time of the message. A
// retry with the message's Idempotency-Key is answered with this error
// (Err nil), never sent again.
type MessageOutcomeUnknownError struct {
	Project, JobID string
	At             time.Time
	Err            error
}

func (e *MessageOutcomeUnknownError) Error() string {
	msg := fmt.Sprintf("the outcome of the follow-up message to job %s sent at %s is unknown: it may have reached the job; "+
		"the job is re-checked, GET /api/v2/agent/%s/job/%s shows whether a new turn started (send again, with a new key, if not)",
		e.JobID, e.At.UTC().Format(time.RFC3339), e.Project, e.JobID)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *MessageOutcomeUnknownError) Unwrap() error { return e.Err }

// messageIntent is a follow-up's intent: its own state form (version 3,
// messageIntentV3), keyed by its project and id: the engine's and the job
// and sender (absent in files of earlier builds: the turn's sender is then
// unknown).
type messageIntent struct {
	engine.IntentBase
	JobID string `json:"jobId"`
	By    string `json:"by,omitempty"`
}

func (mi *messageIntent) Valid() bool              { return mi.JobID != "" }
func (*messageIntent) Record(string) engine.Record { return nil }

// NewExtra is an empty follow-up's intent (engine.Extras).
func (*Kind) NewExtra(string) engine.Intent { return &messageIntent{} }

// messageHash is the request hash of a follow-up: its job and its prompt,
// so that a key reused for another job or another prompt is a conflict,
// and never equal to a create's.
func messageHash(jobID, prompt string) string { return engine.RequestHash("message", jobID, prompt) }

// unkeyedMessagesKept is how long a message without a key stays on its
// job's record: long enough to seed the gateway's hourly limit.
const unkeyedMessagesKept = time.Hour

// Message sends a follow-up to a job and starts its new turn:
//
//  1. a job not followed yet is followed first (one read upstream; a job
//     the API does not know fails here, with nothing sent);
//  2. the message's intent is written (fsync) before it is sent;
//  3. on the API's answer the job's new turn (active, started now, its
//     terminal statuses not yet counted) is written and the intent
//     deleted in one transaction, before Message returns.
//
// A crash between 2 and 3 leaves the intent: the next start re-checks the
// job (Resume). A failure that does not say whether the API got the
// message does the same at once and returns *MessageOutcomeUnknownError.
// Failures that certainly sent nothing are *NotSentError.
func (k *Kind) Message(ctx context.Context, req MessageRequest) (Messaged, error) {
	e := k.ops.Engine()
	if k.api == nil {
		return Messaged{}, &NotSentError{Err: engine.ErrNoClient}
	}
	if req.IdempotencyKey != "" && !engine.ValidIdempotencyKey(req.IdempotencyKey) {
		return Messaged{}, &NotSentError{Err: errors.New("invalid idempotency key: 1 to 255 printable ASCII characters")}
	}
	mi := &messageIntent{IntentBase: k.ops.NewIntent(req.Project, req.IdempotencyKey), JobID: req.JobID, By: engine.UserFrom(ctx)}
	mi.RequestHash = messageHash(req.JobID, req.Prompt)
	var answer Messaged
	replay := func(ref engine.Ref, it engine.Item, found bool) (err error) {
		answer, err = k.replayMessage(ref, it, found, req.IdempotencyKey, mi.RequestHash)
		return err
	}
	if done, err := k.ops.Claim(req.Project, req.IdempotencyKey, mi, req.Admit, replay); done || err != nil {
		return answer, err
	}
	if err := k.prepareMessage(ctx, mi); err != nil {
		k.ops.Unclaim(req.Project, req.IdempotencyKey, mi)
		return Messaged{}, err
	}
	job, code, err := k.api.SendMessage(ctx, req.Project, req.JobID, req.Prompt)
	if err != nil {
		return Messaged{}, k.messageFailed(mi, err)
	}
	at := e.Now()
	fresh := &Record{Op: engine.Op{Project: req.Project, Origin: engine.OriginTrack, TrackedAt: at}, Job: apiclient.Job{ID: req.JobID}}
	it, _, err := k.ops.Modify(req.Project, req.JobID, fresh, at, req.IdempotencyKey, func(rec engine.Record) ([]store.Op, engine.Event) {
		r := rec.(*Record)
		r.Messages = append(keptMessages(r.Messages, at), message{IdemKey: req.IdempotencyKey, RequestHash: mi.RequestHash, At: at, Status: code, By: mi.By})
		r.startTurn(at)
		r.Messages[len(r.Messages)-1].Turn = r.Turns
		// The turn has started already: what transition sees is its
		// first status, not a job seen active again.
		j := jobAfterMessage(r.job(), job, req.JobID)
		r.setJob(j)
		ev := r.transition(j, at, engine.SeenLive, time.Time{})
		ev.Mark |= markMessage
		return []store.Op{{Bucket: bucketMessageIntents, Key: engine.Key(req.Project, mi.ID)}}, ev
	})
	m := Messaged{Job: k.viewOf(it), Status: code}
	if err != nil {
		return m, fmt.Errorf("job %s accepted the follow-up message upstream, but its new turn could not be saved: %w", req.JobID,
			&engine.StateError{ID: req.JobID, Err: err, What: "agent job"})
	}
	return m, nil
}

// prepareMessage does what comes before sending mi: the job is followed,
// the endpoint not throttled, and the intent written. Its errors are
// *NotSentError.
func (k *Kind) prepareMessage(ctx context.Context, mi *messageIntent) error {
	if _, ok := k.ops.One(mi.Project, mi.JobID); !ok {
		if _, _, err := k.Track(ctx, mi.Project, mi.JobID); err != nil && !errors.As(err, new(*engine.StateError)) {
			return &NotSentError{Err: err} // tracked in memory only is fine: the message's own write retries it
		}
	}
	if until := k.api.ThrottledUntil(apiclient.EndpointSendMessage); !until.IsZero() {
		return &NotSentError{Err: &apiclient.ThrottledError{Endpoint: apiclient.EndpointSendMessage, Until: until}}
	}
	e := k.ops.Engine()
	data, err := engine.Encode(mi, "message intent", mi.Project, mi.ID)
	if err == nil {
		err = e.Apply(store.Op{Bucket: bucketMessageIntents, Key: engine.Key(mi.Project, mi.ID), Value: data})
	}
	if err != nil {
		level.Error(e.Logger()).Log("msg", "could not record a message intent; message not sent", "project", mi.Project, "job", mi.JobID,
			"store", e.Store().Path(), "err", err)
		return &NotSentError{Err: &engine.IntentError{Err: err, Intent: mi.ID, What: "follow-up message", Store: e.Store().Path()}}
	}
	return nil
}

// messageFailed handles a send that failed: one that certainly sent
// nothing deletes the intent and frees the key; one of unknown outcome
// becomes a message of unknown outcome on the job
// (*MessageOutcomeUnknownError).
func (k *Kind) messageFailed(mi *messageIntent, err error) error {
	e := k.ops.Engine()
	err = fmt.Errorf("sending a message to job %s/%s: %w", mi.Project, mi.JobID, err)
	if engine.NotDone(err) {
		if derr := e.Apply(store.Op{Bucket: bucketMessageIntents, Key: engine.Key(mi.Project, mi.ID)}); derr != nil {
			level.Error(e.Logger()).Log("msg", "could not delete a message intent from the state; the job is re-checked at the next start",
				"project", mi.Project, "job", mi.JobID, "err", derr)
		}
		k.ops.Unclaim(mi.Project, mi.IdempotencyKey, mi)
		return err
	}
	level.Warn(e.Logger()).Log("msg", "follow-up message of unknown outcome: the job is re-checked", "project", mi.Project, "job", mi.JobID,
		"idempotency_key", mi.IdempotencyKey, "err", err)
	k.settleUnknown(engine.Key(mi.Project, mi.ID), mi)
	return &MessageOutcomeUnknownError{Project: mi.Project, JobID: mi.JobID, At: mi.StartedAt, Err: err}
}

// settleUnknown turns a follow-up's intent whose outcome is unknown into a
// message of unknown outcome on its job (so that its key is answered,
// never sent again, and the job re-checked at the next round: Polled), in
// one write that deletes the intent. Should that write fail, the intent
// stays and the next start settles it.
func (k *Kind) settleUnknown(ikey string, mi *messageIntent) {
	e := k.ops.Engine()
	_, followed, _ := k.ops.Modify(mi.Project, mi.JobID, nil, e.Now(), mi.IdempotencyKey, func(rec engine.Record) ([]store.Op, engine.Event) {
		r := rec.(*Record)
		r.Messages = append(keptMessages(r.Messages, e.Now()), message{IdemKey: mi.IdempotencyKey, RequestHash: mi.RequestHash, At: mi.StartedAt, By: mi.By})
		return []store.Op{{Bucket: bucketMessageIntents, Key: ikey}}, engine.Event{}
	})
	if !followed {
		_ = e.Apply(store.Op{Bucket: bucketMessageIntents, Key: ikey})
	}
}

// Resume settles a follow-up's intent left by an earlier run (the engine
// hands them over once it has loaded the jobs: engine.Resumer).
func (k *Kind) Resume(bucket, key string, value []byte) {
	var mi messageIntent
	if bucket != bucketMessageIntents || json.Unmarshal(value, &mi) != nil {
		return
	}
	level.Warn(k.ops.Engine().Logger()).Log("msg", "follow-up message of unknown outcome from an earlier run: the job is re-checked now",
		"project", mi.Project, "job", mi.JobID, "sent_at", mi.StartedAt)
	k.settleUnknown(key, &mi)
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
func keptMessages(ms []message, now time.Time) []message {
	out := make([]message, 0, len(ms)+1)
	for _, m := range ms {
		if m.IdemKey != "" || now.Sub(m.At) < unkeyedMessagesKept {
			out = append(out, m)
		}
	}
	return out
}

// replayMessage answers a follow-up whose key is known (ref; it is the
// job it refers to, when found): another request with it, the first still
// under way, one of unknown outcome, or the first answer. Under the
// engine's lock.
func (k *Kind) replayMessage(ref engine.Ref, it engine.Item, found bool, key, hash string) (Messaged, error) {
	if mi, ok := ref.Note.(*messageIntent); ok {
		if mi.RequestHash != hash {
			return Messaged{}, engine.ErrIdempotencyKeyReused
		}
		return Messaged{}, engine.ErrIdempotencyKeyInFlight
	}
	if !ref.More {
		return Messaged{}, engine.ErrIdempotencyKeyReused // the key of a create, or of another kind's
	}
	if !found {
		return Messaged{}, engine.ErrIdempotencyKeyInFlight
	}
	r := it.Rec.(*Record)
	for _, m := range r.Messages {
		switch {
		case m.IdemKey != key:
		case m.RequestHash != hash:
			return Messaged{}, engine.ErrIdempotencyKeyReused
		case m.Status == 0:
			return Messaged{}, &MessageOutcomeUnknownError{Project: r.Project, JobID: r.Job.ID, At: m.At}
		default:
			return Messaged{Job: k.viewOf(it), Status: m.Status, Replayed: true}, nil
		}
	}
	return Messaged{}, engine.ErrIdempotencyKeyInFlight
}

// RecentMessages is when follow-ups were sent through the gateway within
// window of now, per project, oldest first: what the local message limit
// counts after a restart.
func (k *Kind) RecentMessages(window time.Duration) map[string][]time.Time {
	now := k.ops.Engine().Now()
	out := map[string][]time.Time{}
	for _, it := range k.ops.List("") {
		r := it.Rec.(*Record)
		for _, m := range r.Messages {
			if now.Sub(m.At) < window {
				out[r.Project] = append(out[r.Project], m.At)
			}
		}
	}
	for _, ts := range out {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	}
	return out
}
