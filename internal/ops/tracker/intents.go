package tracker

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

// The engine's intents, for every kind of operation: an intent is written
// (fsync, or MULTI/EXEC in Redis) before a request leaves, and deleted in
// the write that records the API's answer, or once the answer says nothing
// was started. One left behind (a kill -9, a dropped connection, an id the
// API answered that cannot be kept) is an outcome unknown: listed, counted
// in the kind's gauge, answered 409 through its Idempotency-Key, until an
// operator settles it with the operation's real id or dismisses it. A kind
// declares its intents with an intentKind; the functions below are the
// one implementation of that path (before issue 36 each kind had its copy).

// pending is what the engine needs of a kind's intent.
type pending interface {
	comparable
	intentID() string
	intentProject() string
	intentStart() time.Time
	intentKey() string // its Idempotency-Key, "" without one
	requestHash() string
	// sending: this process is sending it; otherwise its outcome is
	// unknown. sent marks it sent without a recorded answer.
	sending() bool
	sent()
}

// intentKind declares one kind's intents to the engine.
type intentKind[I pending] struct {
	// what names the request in errors and logs ("create").
	what string
	// bucket is where its intents are in the state.
	bucket string
	// all is the tracker's map of them, by storeKey(project, id).
	all func(s *Tracker) map[string]I
	// ref is the key reference of an intent; refers reports whether a
	// key reference is to in.
	ref    func(in I) keyRef
	refers func(ref keyRef, in I) bool
	// encode is an intent's record in the state.
	encode func(in I) ([]byte, error)
}

// openIntent is the first half of a request of any kind, before it leaves
// for endpoint: its Idempotency-Key is checked (a key known already is
// answered by replay, under s.mu, and done is true), admit takes the
// gateway's local limit slot, the intent claims the key, an endpoint whose
// Retry-After still runs refuses at once, and the intent is written (fsync)
// before anything is sent. The key's check, the admission and the claim
// are one step under s.mu, so two requests with one key cannot both pass.
// On an error nothing was sent and nothing of the intent is left.
func openIntent[I pending, R any](s *Tracker, k intentKind[I], ikey string, in I, admit func() error, replay func(ref keyRef) (R, error),
	throttledUntil func(endpoint string) time.Time, endpoint string) (answer R, done bool, err error) {
	s.mu.Lock()
	if key := in.intentKey(); key != "" {
		if ref, ok := s.keys[storeKey(in.intentProject(), key)]; ok {
			answer, err = replay(ref)
			s.mu.Unlock()
			return answer, true, err
		}
	}
	if admit != nil {
		if err := admit(); err != nil {
			s.mu.Unlock()
			return answer, false, err
		}
	}
	addIntentLocked(s, k, ikey, in)
	s.mu.Unlock()

	if until := throttledUntil(endpoint); !until.IsZero() {
		// Answer at once instead of holding the client until the API's
		// Retry-After has passed.
		dropIntent(s, k, ikey, in, false)
		return answer, false, &apiclient.ThrottledError{Endpoint: endpoint, Until: until}
	}
	data, err := k.encode(in)
	if err == nil {
		err = s.store.Apply(store.Op{Bucket: k.bucket, Key: ikey, Value: data})
	}
	if err != nil {
		s.writeFailed(err)
		level.Error(s.logger).Log("msg", "could not record a "+k.what+" intent; not sent", "project", in.intentProject(), "err", err)
		dropIntent(s, k, ikey, in, false)
		return answer, false, &IntentError{Err: err, Intent: in.intentID()}
	}
	return answer, false, nil
}

// addIntentLocked adds in (and claims its key). s.mu is held.
func addIntentLocked[I pending](s *Tracker, k intentKind[I], ikey string, in I) {
	k.all(s)[ikey] = in
	if key := in.intentKey(); key != "" {
		s.keys[storeKey(in.intentProject(), key)] = k.ref(in)
	}
}

// removeIntentLocked forgets in (and frees its key). s.mu is held.
func removeIntentLocked[I pending](s *Tracker, k intentKind[I], ikey string, in I) {
	if m := k.all(s); m[ikey] == in {
		delete(m, ikey)
	}
	if key := in.intentKey(); key != "" {
		sk := storeKey(in.intentProject(), key)
		if k.refers(s.keys[sk], in) {
			delete(s.keys, sk)
		}
	}
}

// dropIntent forgets an intent whose request certainly started nothing,
// deleting it from the state when written already. Should that delete
// fail the intent stays, and shows as an unknown outcome after a restart:
// a false alarm, never a lost operation.
func dropIntent[I pending](s *Tracker, k intentKind[I], ikey string, in I, written bool) {
	if written {
		if err := s.store.Apply(store.Op{Bucket: k.bucket, Key: ikey}); err != nil {
			s.writeFailed(err)
			level.Error(s.logger).Log("msg", "could not delete a "+k.what+" intent from the state", "project", in.intentProject(), "intent", in.intentID(), "err", err)
		}
	}
	s.mu.Lock()
	removeIntentLocked(s, k, ikey, in)
	s.mu.Unlock()
}

// sentFailed settles a request of any kind that failed once sent, and
// reports whether its outcome is unknown: the API answered an error (or
// nothing left), so nothing was started and the intent goes; or the
// request failed in a way that does not say (a dropped connection, a
// timeout, an id answered that cannot be kept), so the intent stays,
// listed as an unknown outcome for an operator. kv adds to its log line.
func sentFailed[I pending](s *Tracker, k intentKind[I], ikey string, in I, err error, kv ...any) (unknown bool) {
	if createNotDone(err) {
		dropIntent(s, k, ikey, in, true)
		return false
	}
	s.mu.Lock()
	in.sent()
	s.mu.Unlock()
	level.Warn(s.logger).Log(append(append([]any{"msg", k.what + " of unknown outcome: the operation may have started upstream; listed until settled",
		"project", in.intentProject(), "intent", in.intentID(), "idempotency_key", in.intentKey()}, kv...), "err", err)...)
	return true
}

// replayIntentLocked answers a retry whose Idempotency-Key an intent of
// any kind holds: another request with the key (422), the first still
// being sent (409), or an outcome unknown (unknown, 409 naming how to
// settle it). Nothing is sent again. s.mu is held.
func replayIntentLocked[I pending](in I, hash string, unknown func() error) error {
	switch {
	case in.requestHash() != hash:
		return ErrIdempotencyKeyReused
	case in.sending():
		return ErrIdempotencyKeyInFlight
	}
	return unknown()
}

// replayRecordLocked checks a retry whose Idempotency-Key an operation's
// record holds (found: the record is there; record gives its request hash
// and the intent key of a record not written yet): nil to replay the
// first answer, else why not. A record not in the state yet is answered
// as its request was (notWritten), never acknowledged, since a restart or
// another replica taking the gateway over would not know it. s.mu is held.
func replayRecordLocked(found bool, record func() (hash, intentKey string), hash string, notWritten func() error) error {
	if !found {
		// Forgotten between the index and the records: cannot happen
		// (both change under s.mu), but never send a duplicate.
		return ErrIdempotencyKeyInFlight
	}
	switch recHash, ikey := record(); {
	case recHash != hash:
		return ErrIdempotencyKeyReused
	case ikey != "":
		return notWritten()
	}
	return nil
}

// unknownIntents are project's intents of unknown outcome, oldest first,
// as the kind lists them (view): the unknown-outcome list of every kind.
func unknownIntents[I pending, V any](s *Tracker, k intentKind[I], project string, view func(I) V) []V {
	s.mu.RLock()
	var found []I
	for _, in := range k.all(s) {
		if !in.sending() && in.intentProject() == project {
			found = append(found, in)
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(found, func(a, b I) int {
		return cmp.Or(a.intentStart().Compare(b.intentStart()), cmp.Compare(a.intentID(), b.intentID()))
	})
	out := make([]V, 0, len(found)) // an empty list is [], never null
	for _, in := range found {
		out = append(out, view(in))
	}
	return out
}

// unknownIntent returns project's intent of unknown outcome id.
func unknownIntent[I pending](s *Tracker, k intentKind[I], project, id string) (string, I, error) {
	ikey := storeKey(project, id)
	s.mu.RLock()
	defer s.mu.RUnlock()
	in, ok := k.all(s)[ikey]
	if !ok || in.sending() {
		var none I
		return "", none, ErrNoSuchIntent
	}
	return ikey, in, nil
}

// dismissIntent deletes an intent of unknown outcome: the operator found
// that nothing was started (or gives it up). Its Idempotency-Key is free
// again: a retry with it is sent.
func dismissIntent[I pending](s *Tracker, k intentKind[I], project, id string) error {
	ikey, in, err := unknownIntent(s, k, project, id)
	if err != nil {
		return err
	}
	if err := s.store.Apply(store.Op{Bucket: k.bucket, Key: ikey}); err != nil {
		s.writeFailed(err)
		return fmt.Errorf("dismissing %s %s: %w", k.what, id, err)
	}
	s.mu.Lock()
	removeIntentLocked(s, k, ikey, in)
	s.mu.Unlock()
	level.Info(s.logger).Log("msg", k.what+" of unknown outcome dismissed", "project", project, "intent", id)
	return nil
}

// The kinds' intents.
var (
	createIntents = intentKind[*intent]{what: "create", bucket: bucketIntents,
		all:    func(s *Tracker) map[string]*intent { return s.intents },
		ref:    func(in *intent) keyRef { return keyRef{intent: in} },
		refers: func(ref keyRef, in *intent) bool { return ref.intent == in },
		encode: func(in *intent) ([]byte, error) { return encodeIntent(&in.rec) }}
	triggerIntents = opIntents(OpDeployment, "deployment trigger", bucketDeployIntents,
		func(s *Tracker) map[string]*deployIntent { return s.deployIntents }, triggerCodec.encode)
	startIntents = opIntents(OpExport, "static export start", bucketExportIntents,
		func(s *Tracker) map[string]*exportIntent { return s.exportIntents }, startCodec.encode)
)

func (in *intent) intentID() string       { return in.rec.ID }
func (in *intent) intentProject() string  { return in.rec.Project }
func (in *intent) intentStart() time.Time { return in.rec.StartedAt }
func (in *intent) intentKey() string      { return in.rec.IdemKey }
func (in *intent) requestHash() string    { return in.rec.RequestHash }
func (in *intent) sending() bool          { return in.inFlight }
func (in *intent) sent()                  { in.inFlight = false }

// opIntent is an intent of an op kind (opKind) as the engine keeps it:
// its state form's engine part (intentV, whose methods it has) and whether
// this process is sending it. The kind's intent embeds it and adds its
// own fields.
type opIntent struct {
	intentV
	// inFlight: this process is sending it (not persisted).
	inFlight bool
}

// newOpIntent is a new intent, being sent, of an op kind whose intent ids
// start with prefix: of project, with Idempotency-Key key, for the request
// whose parts are request (requestHash).
func newOpIntent(s *Tracker, prefix, project, key string, request ...string) opIntent {
	return opIntent{intentV: intentV{ID: newIntentID(prefix), Project: project, IdempotencyKey: key, RequestHash: requestHash(request...),
		StartedAt: s.cfg.Now()}, inFlight: true}
}

func (in *opIntent) sending() bool { return in.inFlight }
func (in *opIntent) sent()         { in.inFlight = false }

// UnknownIntent is what every op kind lists of an intent of unknown
// outcome (the kind's listing embeds it and adds its own fields).
type UnknownIntent struct {
	ID             string    `json:"id"`
	Project        string    `json:"project"`
	IdempotencyKey string    `json:"idempotencyKey,omitempty"`
	StartedAt      time.Time `json:"startedAt"`
}

// unknownOf is the listing of in, an intent of unknown outcome.
func unknownOf(in *opIntent) UnknownIntent {
	return UnknownIntent{ID: in.ID, Project: in.Project, IdempotencyKey: in.IdempotencyKey, StartedAt: in.StartedAt}
}

// keyRef is what an idempotency key of a project refers to, of any kind:
// a tracked job (by storeKey) or an intent of a create, or a follow-up: of
// a tracked job (msgJob, by storeKey) or a message intent in flight; or an
// operation or an intent of an op kind (kind, op, opIntent).
type keyRef struct {
	job    string
	intent *intent

	msgJob    string
	msgIntent *messageIntent

	// kind names the kind (opKind) of an operation followed (op, by
	// storeKey) or of an intent under way or of unknown outcome
	// (opIntent) that holds the key: a deployment, a static export.
	kind     string
	op       string
	opIntent any
}

// readOnce reads an operation of any kind upstream once (to track it, or
// to settle an outcome unknown with it), unless the endpoint's Retry-After
// still runs: then nothing is sent and a *apiclient.ThrottledError says
// until when. what names the operation in the error.
func readOnce[T any](throttledUntil func(endpoint string) time.Time, endpoint, what string, read func() (T, error)) (T, error) {
	var none T
	if until := throttledUntil(endpoint); !until.IsZero() {
		return none, &apiclient.ThrottledError{Endpoint: endpoint, Until: until}
	}
	v, err := read()
	if err != nil {
		return none, fmt.Errorf("reading %s to follow it: %w", what, err)
	}
	return v, nil
}

// withCause ends the text of an unknown-outcome error, of any kind, with
// the failure that made the outcome unknown; err is nil when the operation
// was met again through its key, and the text then says only what to do.
func withCause(msg string, err error) string {
	if err != nil {
		return msg + ": " + err.Error()
	}
	return msg
}

// settledLocked ends the settle of an intent of unknown outcome, of any
// kind, once the operation's record, with the intent's Idempotency-Key
// (idemKey), is written with the intent's deletion: the intent leaves
// memory, and a retry with the key is answered with the operation (ref).
// s.mu is held.
func settledLocked[I pending](s *Tracker, k intentKind[I], ikey string, in I, project, idemKey string, ref keyRef) {
	removeIntentLocked(s, k, ikey, in)
	if idemKey != "" {
		s.keys[storeKey(project, idemKey)] = ref
	}
}

// errOtherKey: the operation the operator names to settle an intent
// already answers another Idempotency-Key (what is its kind, id its id).
func errOtherKey(what, id string) error {
	return fmt.Errorf("%s %s has another idempotency key already", what, id)
}

// settleIntent settles an intent of unknown outcome, of any kind, with the
// operation the operator found it started: follow follows the operation
// (as the kind's track route does), then adopt gives its record the
// intent's Idempotency-Key and writes it with the intent's deletion
// (settledLocked), returning its view. adopt runs under the write lock: a
// poll or a follow-up must not write an older record over the one it
// writes.
func settleIntent[I pending, V any](s *Tracker, k intentKind[I], project, intentID string,
	follow func(in I) (V, TrackResult, error), adopt func(ikey string, in I) (V, error)) (V, TrackResult, error) {
	ikey, in, err := unknownIntent(s, k, project, intentID)
	if err != nil {
		var none V
		return none, NewlyTracked, err
	}
	v, res, err := follow(in)
	if err != nil {
		return v, res, err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	settled, err := adopt(ikey, in)
	if err != nil {
		return v, res, err
	}
	return settled, res, nil
}

// StartOutcomeUnknownError: a start of an op kind (a deployment trigger,
// a static export start) was perhaps sent but its answer never recorded.
// Err is the failure that made its outcome unknown, nil when a retry met
// it again through its Idempotency-Key, which answers 409 until the start
// is settled or dismissed (the kind's routes, which the text names) or
// Retention has passed.
type StartOutcomeUnknownError struct {
	Project, Intent string
	StartedAt       time.Time
	Err             error
	// what names the start ("deployment trigger"); settle says how to
	// settle it, a format of the project (%[1]s) and the intent (%[2]s).
	what, settle string
}

func (e *StartOutcomeUnknownError) Error() string {
	return withCause(fmt.Sprintf("the outcome of %s %s of project %s (started %s) is unknown: ", e.what, e.Intent, e.Project,
		e.StartedAt.UTC().Format(time.RFC3339))+fmt.Sprintf(e.settle, e.Project, e.Intent), e.Err)
}

func (e *StartOutcomeUnknownError) Unwrap() error { return e.Err }
