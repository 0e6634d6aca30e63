package tracker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
)

// Starting an operation of a kind declared by an opKind, with the engine's
// guarantees: an intent written before the request leaves, the operation
// written (and the intent deleted) before it is acknowledged,
// Idempotency-Key replays, and an outcome unknown listed for an operator.

// Started is the answer to a start of an op kind: the operation's view
// (Op), the HTTP status of the API's answer (for a replay, of the first
// answer), and whether it is a replay (nothing was sent).
type Started[V any] struct {
	Op       V
	Code     int
	Replayed bool
}

// startReq is a start of a kind's operation: its intent (in), the
// gateway's admission (admit, as openIntent's), the endpoint it is sent
// to, send, which sends it and makes the record of the operation the API
// started (with the event its answer counts), verb, which names it in the
// error of one refused ("starting a static export"), and kv, which adds to
// the log line of one of unknown outcome.
type startReq[R any, I pending] struct {
	in       I
	admit    func() error
	endpoint string
	send     func() (R, finishEvent, int, error)
	verb     string
	kv       []any
}

// start sends a start and follows the operation it started. The record
// send makes has the kind's fields; its project, origin, time, key, hash,
// answer and user are the engine's.
func (k *opKind[R, P, V, I]) start(ctx context.Context, req startReq[R, I]) (Started[V], error) {
	s := k.s
	s.inflight.Add(1)
	defer s.inflight.Done()
	if !k.on() {
		return Started[V]{}, k.off()
	}
	in := req.in
	project := in.intentProject()
	ikey := storeKey(project, in.intentID())
	replay := func(ref keyRef) (Started[V], error) { return k.replayLocked(ref, in.requestHash()) }
	if a, done, err := openIntent(s, k.intents, ikey, in, req.admit, replay, k.throttled, req.endpoint); done || err != nil {
		return a, err
	}
	rec, ev, code, err := req.send()
	if err = cmp.Or(err, unkeepableID(k.idName, k.id(&rec))); err != nil {
		if sentFailed(s, k.intents, ikey, in, err, req.kv...) {
			return Started[V]{}, k.unknownStart(in, err)
		}
		return Started[V]{}, fmt.Errorf("%s of project %s: %w", req.verb, project, err)
	}
	op := k.op(&rec)
	op.Project, op.Origin, op.TrackedAt, op.SubmittedBy = project, OriginGateway, s.cfg.Now(), userFrom(ctx)
	op.IdemKey, op.RequestHash, op.Code = in.intentKey(), in.requestHash(), code
	v, err := k.followStarted(ikey, in, &followed[R]{rec: rec}, ev)
	return Started[V]{Op: v, Code: code}, err
}

// followStarted is the second half of a start the API acknowledged: the
// operation e is written with its intent's deletion (one transaction) and
// followed from the next round (one followed already, handed over while
// the start was answered, is kept); the intent leaves memory, and the
// Idempotency-Key refers to the operation, also when its write failed (a
// retry is answered as this start was, never sent again).
func (k *opKind[R, P, V, I]) followStarted(ikey string, in I, e *followed[R], ev finishEvent) (V, error) {
	s := k.s
	key := storeKey(in.intentProject(), k.id(&e.rec))
	v, _, err := k.follow(key, e, ev, ikey)
	s.mu.Lock()
	removeIntentLocked(s, k.intents, ikey, in)
	var stateErr *StateError
	if idem := in.intentKey(); idem != "" && (err == nil || errors.As(err, &stateErr)) {
		s.keys[storeKey(in.intentProject(), idem)] = k.ref(key)
	}
	s.mu.Unlock()
	return v, err
}

// replayLocked answers a start whose key is known: through its intent,
// else through its operation (replayIntentLocked, replayRecordLocked);
// the key of another kind's request is another request. s.mu is held.
func (k *opKind[R, P, V, I]) replayLocked(ref keyRef, hash string) (Started[V], error) {
	if in, ok := ref.opIntent.(I); ok && ref.kind == k.name {
		return Started[V]{}, replayIntentLocked(in, hash, func() error { return k.unknownStart(in, nil) })
	}
	key := k.recordOf(ref)
	if key == "" {
		return Started[V]{}, ErrIdempotencyKeyReused
	}
	e := k.records[key]
	record := func() (string, string) { return k.op(&e.rec).RequestHash, e.intentKey }
	notWritten := func() error { return k.stateErr(k.id(&e.rec), e.intentKey, errNotWrittenYet) }
	if err := replayRecordLocked(e != nil, record, hash, notWritten); err != nil {
		return Started[V]{}, err
	}
	return Started[V]{Op: k.view(e), Code: k.op(&e.rec).Code, Replayed: true}, nil
}

// unknownStart is the error of the start of intent in of unknown outcome
// (err: why, nil when a retry met it again through its key).
func (k *opKind[R, P, V, I]) unknownStart(in I, err error) error {
	return &StartOutcomeUnknownError{Project: in.intentProject(), Intent: in.intentID(), StartedAt: in.intentStart(), Err: err,
		what: k.intents.what, settle: k.settle}
}
