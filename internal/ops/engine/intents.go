package engine

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

// Intents: a start of every kind is an intent written (fsync) before the
// request leaves, deleted with the operation's first write or once the
// API's answer says nothing was started. One left after a restart is a
// start of unknown outcome, listed for an operator to settle (with the id
// of the operation found) or dismiss.

// IntentBase is the engine's part of every kind's intent (embedded: its
// fields are the intent's own in the JSON): its id, project, the
// request's Idempotency-Key and hash, and when it was sent.
type IntentBase struct {
	ID             string    `json:"id"`
	Project        string    `json:"project"`
	IdempotencyKey string    `json:"idempotencyKey,omitempty"`
	RequestHash    string    `json:"requestHash"`
	StartedAt      time.Time `json:"startedAt"`
	// inFlight: this process is sending it (not persisted); otherwise its
	// outcome is unknown.
	inFlight bool
}

// Base is the intent's engine part (Intent.Base).
func (b *IntentBase) Base() *IntentBase { return b }

// whole reports whether the intent has what every kind's needs.
func (b *IntentBase) whole() bool { return b.ID != "" && b.Project != "" && b.RequestHash != "" }

// NewIntent is the engine's part of a new intent, being sent, of the
// kind: of project, with Idempotency-Key key, for the request whose parts
// are request (RequestHash).
func (o *Ops) NewIntent(project, key string, request ...string) IntentBase {
	return IntentBase{ID: newIntentID(o.decl.IntentPrefix), Project: project, IdempotencyKey: key, RequestHash: RequestHash(request...),
		StartedAt: o.e.cfg.Now(), inFlight: true}
}

var (
	// ErrIdempotencyKeyReused: the key was used in the project with another
	// request. Nothing was sent.
	ErrIdempotencyKeyReused = errors.New("this Idempotency-Key was already used with a different request body")
	// ErrIdempotencyKeyInFlight: a request with the key is under way.
	// Nothing was sent.
	ErrIdempotencyKeyInFlight = errors.New("a request with this Idempotency-Key is still being processed; retry once it has been answered")
	// ErrNoSuchIntent: no start of unknown outcome has that id.
	ErrNoSuchIntent = errors.New("no request of unknown outcome with this id")
	// errNotWrittenYet is a replayed start's while its record is not in
	// the state.
	errNotWrittenYet = errors.New("its record is not written yet")
)

// IntentError means an intent could not be written to the state, so its
// request was not sent.
type IntentError struct {
	Err error
	// Intent is the id of the intent that was not written, What its
	// request ("create"), Store the state that refused it (a file, or the
	// replicas' Redis).
	Intent, What, Store string
	// Unknown: should the write still land, the intent is listed as an
	// unknown outcome after the next start (its kind lists them).
	Unknown bool
}

func (e *IntentError) Error() string {
	msg := fmt.Sprintf("the %s could not be recorded in the state %s (intent %s), so it was not sent: %v", e.What, e.Store, e.Intent, e.Err)
	if te, ok := errors.AsType[*store.WriteTimeoutError](e.Err); ok && !te.Stalled && e.Unknown {
		msg += fmt.Sprintf("; should the write still land, %s is listed with the unknown outcomes after the next start: nothing was sent, dismiss it", e.Intent)
	}
	return msg
}

func (e *IntentError) Unwrap() error { return e.Err }

// OutcomeUnknownError: a start was perhaps sent but its answer never
// recorded. Err is the failure that made its outcome unknown, nil when a
// retry met it again through its Idempotency-Key, which answers 409 until
// the start is settled or dismissed (the kind's routes, which the text
// names) or Retention has passed.
type OutcomeUnknownError struct {
	Project, Intent string
	StartedAt       time.Time
	Err             error
	// What names the start ("deployment trigger"); settle says how to
	// settle it, a format of the project (%[1]s) and the intent (%[2]s).
	What, settle string
}

func (e *OutcomeUnknownError) Error() string {
	return withCause(fmt.Sprintf("the outcome of %s %s of project %s (started %s) is unknown: ", e.What, e.Intent, e.Project,
		e.StartedAt.UTC().Format(time.RFC3339))+fmt.Sprintf(e.settle, e.Project, e.Intent), e.Err)
}

func (e *OutcomeUnknownError) Unwrap() error { return e.Err }

// withCause ends an error's text with the failure that caused it (err nil:
// nothing to add).
func withCause(msg string, err error) string {
	if err != nil {
		return msg + ": " + err.Error()
	}
	return msg
}

// StateError means an operation was started (or read) upstream but could
// not be written to the state, so it is not certain to survive a restart.
// It is followed in memory and written again at its next poll.
type StateError struct {
	ID  string
	Err error
	// What names its kind ("deployment"); Intent is its start's intent,
	// left in the state until its write lands ("": none).
	What, Intent string
}

func (e *StateError) Error() string {
	if e.Intent == "" {
		return fmt.Sprintf("%s %s could not be saved to the state (it is followed, and written again at its next poll): %v", e.What, e.ID, e.Err)
	}
	return fmt.Sprintf("%s %s was started upstream but could not be saved to the state (it is followed, written again at its next poll, "+
		"or handed with its id to the replica that runs the gateway next; until then its intent %s stays in the state, and a retry with its "+
		"Idempotency-Key is never sent again): %v", e.What, e.ID, e.Intent, e.Err)
}

func (e *StateError) Unwrap() error { return e.Err }

// NotDone reports whether a request that failed with err certainly
// started nothing upstream: the API answered (with an error), or nothing
// was sent.
func NotDone(err error) bool {
	_, apiErr := errors.AsType[*apiclient.APIError](err)
	_, throttled := errors.AsType[*apiclient.ThrottledError](err)
	return apiErr || throttled
}

// openIntent is the first half of a start of any kind, before it leaves
// for endpoint: its Idempotency-Key is checked (a key known already is
// answered by replay, under e.mu, and done is true), admit takes the
// gateway's local limit slot, the intent claims the key, an endpoint whose
// Retry-After still runs (until) refuses at once, and the intent is
// written (fsync) before anything is sent. The key's check, the admission
// and the claim are one step under e.mu, so two requests with one key
// cannot both pass. On an error nothing was sent and nothing of the
// intent is left.
func (o *Ops) openIntent(ikey string, in Intent, admit func() error, replay func(ref Ref) (Started, error), endpoint string,
	until time.Time) (answer Started, done bool, err error) {
	e, b := o.e, in.Base()
	e.mu.Lock()
	if b.IdempotencyKey != "" {
		if ref, ok := e.keys[storeKey(b.Project, b.IdempotencyKey)]; ok {
			answer, err = replay(ref)
			e.mu.Unlock()
			return answer, true, err
		}
	}
	if admit != nil {
		if err := admit(); err != nil {
			e.mu.Unlock()
			return answer, false, err
		}
	}
	e.addIntentLocked(o, ikey, in)
	e.mu.Unlock()

	if !until.IsZero() {
		// Answer at once instead of holding the client until the API's
		// Retry-After has passed.
		o.dropIntent(ikey, in, false)
		return answer, false, &apiclient.ThrottledError{Endpoint: endpoint, Until: until}
	}
	data, err := encodeState(in, o.decl.Request+" intent", b.Project, b.ID)
	if err == nil {
		err = e.Apply(store.Op{Bucket: o.decl.Intents, Key: ikey, Value: data})
	}
	if err != nil {
		level.Error(e.logger).Log("msg", "could not record a "+o.decl.Request+" intent; not sent", "project", b.Project, "store", e.store.Path(), "err", err)
		o.dropIntent(ikey, in, false)
		return answer, false, &IntentError{Err: err, Intent: b.ID, What: o.decl.Request, Store: e.store.Path(), Unknown: true}
	}
	return answer, false, nil
}

// addIntentLocked adds in (and claims its key). e.mu is held.
func (e *Engine) addIntentLocked(o *Ops, ikey string, in Intent) {
	o.intents[ikey] = in
	if b := in.Base(); b.IdempotencyKey != "" {
		e.keys[storeKey(b.Project, b.IdempotencyKey)] = Ref{Ops: o, In: in}
	}
}

// removeIntentLocked forgets in (and frees its key). e.mu is held.
func (e *Engine) removeIntentLocked(o *Ops, ikey string, in Intent) {
	if o.intents[ikey] == in {
		delete(o.intents, ikey)
	}
	if b := in.Base(); b.IdempotencyKey != "" {
		if sk := storeKey(b.Project, b.IdempotencyKey); e.keys[sk].In == in {
			delete(e.keys, sk)
		}
	}
}

// dropIntent forgets an intent whose request certainly started nothing,
// deleting it from the state when written already. Should that delete
// fail the intent stays, and shows as an unknown outcome after a restart:
// a false alarm, never a lost operation.
func (o *Ops) dropIntent(ikey string, in Intent, written bool) {
	e := o.e
	if written {
		if err := e.Apply(store.Op{Bucket: o.decl.Intents, Key: ikey}); err != nil {
			level.Error(e.logger).Log("msg", "could not delete a "+o.decl.Request+" intent from the state", "project", in.Base().Project, "intent", in.Base().ID, "err", err)
		}
	}
	e.mu.Lock()
	e.removeIntentLocked(o, ikey, in)
	e.mu.Unlock()
}

// sentFailed settles a start that failed once sent, and reports whether
// its outcome is unknown: the API answered an error (or nothing left), so
// nothing was started and the intent goes; or the request failed in a way
// that does not say (a dropped connection, a timeout, an id answered that
// cannot be kept), so the intent stays, listed as an unknown outcome for
// an operator. kv adds to its log line.
func (o *Ops) sentFailed(ikey string, in Intent, err error, kv ...any) (unknown bool) {
	if NotDone(err) {
		o.dropIntent(ikey, in, true)
		return false
	}
	e, b := o.e, in.Base()
	e.mu.Lock()
	b.inFlight = false
	e.mu.Unlock()
	level.Warn(e.logger).Log(append(append([]any{"msg", o.decl.Request + " of unknown outcome: the operation may have started upstream; listed until settled",
		"project", b.Project, "intent", b.ID, "idempotency_key", b.IdempotencyKey}, kv...), "err", err)...)
	return true
}

// unknownStart is the error of the start in of unknown outcome (err: why,
// nil when a retry met it again through its key).
func (o *Ops) unknownStart(in Intent, err error) error {
	b := in.Base()
	return &OutcomeUnknownError{Project: b.Project, Intent: b.ID, StartedAt: b.StartedAt, Err: err, What: o.decl.Request, settle: o.decl.Settle}
}

// replayLocked answers a start whose key is known: another request with
// the key (422), the first still being sent (409), an outcome unknown
// (409 naming how to settle it), or the operation's first answer; the key
// of another kind's request, or of a follow-up, is another request.
// Nothing is sent again. e.mu is held.
func (o *Ops) replayLocked(ref Ref, hash string) (Started, error) {
	switch {
	case ref.Ops != o || ref.More || ref.Note != nil:
		return Started{}, ErrIdempotencyKeyReused
	case ref.In != nil:
		b := ref.In.Base()
		switch {
		case b.RequestHash != hash:
			return Started{}, ErrIdempotencyKeyReused
		case b.inFlight:
			return Started{}, ErrIdempotencyKeyInFlight
		}
		return Started{}, o.unknownStart(ref.In, nil)
	}
	en := o.records[ref.Rec]
	switch {
	case en == nil:
		// Forgotten between the index and the records: cannot happen
		// (both change under e.mu), but never send a duplicate.
		return Started{}, ErrIdempotencyKeyInFlight
	case en.rec.Base().RequestHash != hash:
		return Started{}, ErrIdempotencyKeyReused
	case en.intentKey != "":
		// Not in the state yet: answered as its start was, never
		// acknowledged, since a restart or another replica taking the
		// gateway over would not know it.
		return Started{}, &StateError{ID: en.rec.ID(), Err: errNotWrittenYet, What: o.decl.What, Intent: idOf(en.rec.Base().Project, en.intentKey)}
	}
	return Started{Item: en.item(), Code: en.rec.Base().Code, Replayed: true}, nil
}

// Listed is in as the routes list a start of unknown outcome: its own
// fields less its request hash, or what its Listed says (an intent whose
// state form names a field otherwise).
func Listed(in Intent) any {
	if l, ok := in.(interface{ Listed() any }); ok {
		return l.Listed()
	}
	var m map[string]any
	data, _ := json.Marshal(in)
	_ = json.Unmarshal(data, &m)
	delete(m, "requestHash")
	return m
}

// Unknown are project's starts of unknown outcome, oldest first (those
// under way are not listed).
func (o *Ops) Unknown(project string) []Intent {
	o.e.mu.RLock()
	var found []Intent
	for _, in := range o.intents {
		if b := in.Base(); !b.inFlight && b.Project == project {
			found = append(found, in)
		}
	}
	o.e.mu.RUnlock()
	slices.SortFunc(found, func(a, b Intent) int {
		return cmp.Or(a.Base().StartedAt.Compare(b.Base().StartedAt), cmp.Compare(a.Base().ID, b.Base().ID))
	})
	return found
}

// unknownIntent returns project's intent of unknown outcome id.
func (o *Ops) unknownIntent(project, id string) (string, Intent, error) {
	ikey := storeKey(project, id)
	o.e.mu.RLock()
	defer o.e.mu.RUnlock()
	in, ok := o.intents[ikey]
	if !ok || in.Base().inFlight {
		return "", nil, ErrNoSuchIntent
	}
	return ikey, in, nil
}

// Dismiss deletes a start of unknown outcome: the operator found that
// nothing was started (or gives it up). Its Idempotency-Key is free
// again: a retry with it is sent.
func (o *Ops) Dismiss(project, id string) error {
	ikey, in, err := o.unknownIntent(project, id)
	if err != nil {
		return err
	}
	if err := o.e.Apply(store.Op{Bucket: o.decl.Intents, Key: ikey}); err != nil {
		return fmt.Errorf("dismissing %s %s: %w", o.decl.Request, id, err)
	}
	o.e.mu.Lock()
	o.e.removeIntentLocked(o, ikey, in)
	o.e.mu.Unlock()
	level.Info(o.e.logger).Log("msg", o.decl.Request+" of unknown outcome dismissed", "project", project, "intent", id)
	return nil
}
