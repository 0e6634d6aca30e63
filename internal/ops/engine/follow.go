package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

// The paths of every kind's routes: starting an operation, following one
// handed over by its id, settling a start of unknown outcome with the
// operation an operator found, and reading those followed.

// Start is a start of a kind's operation: its intent (In), the gateway's
// admission (Admit, called once the request is known to be a new start,
// before anything is written or sent; its error is returned as it is),
// the endpoint it is sent to and the end of that endpoint's Retry-After
// pause (Until, zero: none), Send, which sends it and makes the record of
// the operation the API started (the kind's fields, with the event its
// answer counts and the answer's status), Verb, which names it in the
// error of one refused ("triggering a deployment"), and KV, which adds to
// the log line of one of unknown outcome.
type Start struct {
	In       Intent
	Admit    func() error
	Endpoint string
	Until    time.Time
	Send     func() (Record, Event, int, error)
	Verb     string
	KV       []any
}

// Started is the answer to a start: the operation, the HTTP status of the
// API's answer (for a replay, of the first answer), and whether it is a
// replay (nothing was sent).
type Started struct {
	Item     Item
	Code     int
	Replayed bool
}

// Start starts an operation upstream and follows it, crash-safely: the
// intent is written (fsync) before anything is sent, so a start whose
// outcome a crash hides is found at the next start instead of running
// unfollowed; on the API's answer the operation is written and the intent
// deleted in one transaction, before Start returns, so an operation
// acknowledged survives kill -9. A key used before is not sent again: the
// same request gets the first answer (Replayed), another one
// ErrIdempotencyKeyReused, one while the first is under way
// ErrIdempotencyKeyInFlight, one whose outcome is unknown an
// *OutcomeUnknownError. A start refused because the API's Retry-After
// still runs returns an *apiclient.ThrottledError without sending
// anything. The record Send makes has the kind's fields; its project,
// origin, time, key, hash, answer and user are the engine's.
func (o *Ops) Start(ctx context.Context, req Start) (Started, error) {
	e := o.e
	e.inflight.Add(1)
	defer e.inflight.Done()
	if err := checkIdempotencyKey(req.In.Base().IdempotencyKey); err != nil {
		return Started{}, err
	}
	in, b := req.In, req.In.Base()
	ikey := storeKey(b.Project, b.ID)
	replay := func(ref Ref) (Started, error) { return o.replayLocked(ref, b.RequestHash) }
	if a, done, err := o.openIntent(ikey, in, req.Admit, replay, req.Endpoint, req.Until); done || err != nil {
		return a, err
	}
	rec, ev, code, err := req.Send()
	if err == nil {
		// An operation was started, but an id that cannot be kept (too
		// long, not printable) cannot be followed, written or answered:
		// the start stays of unknown outcome for an operator.
		err = unkeepableID(o.decl.IDName, rec.ID())
	}
	if err != nil {
		if o.sentFailed(ikey, in, err, req.KV...) {
			return Started{}, o.unknownStart(in, err)
		}
		return Started{}, fmt.Errorf("%s of project %s: %w", req.Verb, b.Project, err)
	}
	op := rec.Base()
	op.Project, op.Origin, op.TrackedAt, op.SubmittedBy = b.Project, OriginGateway, e.cfg.Now(), UserFrom(ctx)
	op.IdemKey, op.RequestHash, op.Code = b.IdempotencyKey, b.RequestHash, code
	key := storeKey(b.Project, rec.ID())
	it, old, err := o.follow(key, rec, ev, ikey, b.StartedAt, Polling{})
	if old {
		// Followed concurrently (and written) already: only the intent
		// goes.
		o.dropIntent(ikey, in, true)
		return Started{Item: it, Code: code}, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if collision, ok := errors.AsType[*CollisionError](err); ok {
		// Never an acknowledgement for an operation that is not
		// followed: the intent stays, listed with the unknown outcomes.
		b.inFlight = false
		collision.Intent = b.ID
		return Started{}, err
	}
	e.removeIntentLocked(o, ikey, in)
	if _, stateErr := errors.AsType[*StateError](err); b.IdempotencyKey != "" && (err == nil || stateErr) {
		// Also when its write failed: a retry is answered as this start
		// was, never sent again.
		e.keys[storeKey(b.Project, b.IdempotencyKey)] = Ref{Ops: o, Rec: key}
	}
	return Started{Item: it, Code: code}, err
}

// CollisionError means the API answered a start with the id of an
// operation that is followed and still running, so the new one could not
// be followed. Its intent is kept, listed with the unknown outcomes.
type CollisionError struct {
	What, ID, Intent string
}

func (e *CollisionError) Error() string {
	return fmt.Sprintf("the Mintlify API started %s %s, but a followed %s that is still running has that id: the new one is not followed "+
		"(its intent %s is listed with the unknown outcomes)", e.What, e.ID, e.What, e.Intent)
}

// follow adds rec under key to the followed operations and writes it; ikey
// is its start's intent, deleted in the same write (and kept in its entry
// while the write has not landed: Unsaved), "" for one handed over. The
// event ev of the read that made it is counted once it is written. One
// followed under key already is answered as it is (old) when it is this
// operation (followed at or after since, or of the same createdAt); an
// older one that had the same id (an API that reused ids) is replaced when
// final, and refused (*CollisionError) when still running. e.wmu is
// taken: no poll writes it in between.
func (o *Ops) follow(key string, rec Record, ev Event, ikey string, since time.Time, p Polling) (it Item, old bool, err error) {
	e := o.e
	e.wmu.Lock()
	defer e.wmu.Unlock()
	e.mu.Lock()
	if en := o.records[key]; en != nil {
		was := en.rec.Base()
		switch created := rec.Base().CreatedAt; {
		case !was.TrackedAt.Before(since) || (!created.IsZero() && was.CreatedAt.Equal(created)):
			it := en.item()
			e.mu.Unlock()
			return it, true, nil
		case !en.rec.Final():
			e.mu.Unlock()
			level.Error(e.logger).Log("msg", "the API answered a new "+o.decl.What+" with the id of a followed one that is still running; the new one is not followed",
				"project", was.Project, o.decl.IDKey, rec.ID())
			return Item{}, false, &CollisionError{What: o.decl.What, ID: rec.ID()}
		}
		level.Warn(e.logger).Log("msg", "the API reused the id of a final "+o.decl.What+": its old record is replaced by the new one",
			"project", was.Project, o.decl.IDKey, rec.ID(), "old_status", was.ViewStatus(""))
		o.forgetKeysLocked(key, en.rec)
	}
	if other := o.followedElsewhereLocked(rec); other != "" {
		e.mu.Unlock()
		return Item{}, false, fmt.Errorf("%s %s is followed for project %s: %w", o.decl.What, bounded.Label(rec.ID()), other, apiclient.ErrOtherProject)
	}
	en := &entry{rec: rec, Polling: p}
	en.pending = true
	o.records[key] = en
	e.mu.Unlock()
	var extra []store.Op
	if ikey != "" {
		extra = append(extra, store.Op{Bucket: o.decl.Intents, Key: ikey})
	}
	err = o.write(key, rec, extra...)
	e.mu.Lock()
	en.pending, en.intentKey = false, ikey
	en.written(err)
	if err != nil {
		en.unwritten = ev
		it = en.item()
		e.mu.Unlock()
		return it, false, &StateError{ID: rec.ID(), Err: err, What: o.decl.What, Intent: idOf(rec.Base().Project, ikey)}
	}
	log := o.countLocked(rec, ev) // after the write, under the lock that shows it
	it = en.item()
	e.mu.Unlock()
	log()
	return it, false, nil
}

// followedElsewhereLocked is the project under which an operation of an
// OrgWide kind with rec's id is followed already, other than rec's; "" for
// none. e.mu is held.
func (o *Ops) followedElsewhereLocked(rec Record) string {
	if !o.decl.OrgWide {
		return ""
	}
	for _, en := range o.records {
		if p := en.rec.Base().Project; p != rec.Base().Project && en.rec.ID() == rec.ID() {
			return p
		}
	}
	return ""
}

// Track follows an operation started elsewhere (its id handed over, in
// base: the record before its first read, its project and the kind's
// fields) after one read upstream. how is SeenLive for one started
// through the gateway and never counted (a settle), whose final status is
// then counted even at this first read; SeenAfterTheFact for one handed
// over, final when first seen: kept, not counted. One followed already is
// returned as it is, AlreadyTracked, without asking upstream. With a
// *StateError it is followed (in memory) and its item valid.
func (o *Ops) Track(ctx context.Context, base Record, how Sighting) (Item, TrackResult, error) {
	e := o.e
	e.inflight.Add(1)
	defer e.inflight.Done()
	project, id := base.Base().Project, base.ID()
	if err := bounded.CheckID(o.decl.IDName, id); err != nil {
		return Item{}, NewlyTracked, &BadIDError{Err: err}
	}
	if it, ok := o.One(project, id); ok {
		return it, AlreadyTracked, nil
	}
	base.Base().SubmittedBy = UserFrom(ctx)
	read, err := o.kind.Read(ctx, base, how)
	gone := err != nil && o.decl.SettleGone && how == SeenLive && apiclient.StatusCode(err) == http.StatusNotFound
	if err != nil && !gone {
		return Item{}, NewlyTracked, fmt.Errorf("reading %s %s of project %s to follow it: %w", o.decl.What, id, project, err)
	}
	if gone {
		// The settle of one started here that the API does not know: as
		// the kind records one gone, not refused, so that a handover
		// between replicas does not leave it an unknown outcome.
		read = nil
	}
	return o.Adopt(base, read, how)
}

// Adopt follows the operation base (its project, id, origin and user
// set: OriginTrack when none) just read upstream (read; nil: the API does
// not know it, and Record.Missing says what that makes of it), as Track
// does after its read: the door of a kind whose operations are another
// kind's (an automation's run is an agent job).
func (o *Ops) Adopt(base Record, read any, how Sighting) (Item, TrackResult, error) {
	e := o.e
	at := e.cfg.Now()
	op := base.Base()
	if op.Origin == "" {
		op.Origin = OriginTrack
	}
	op.TrackedAt = at
	var ev Event
	if read == nil {
		ev, _ = base.Missing(LostAfter404s, at)
	} else {
		ev, _ = base.Saw(read, at, at, how)
	}
	p := Polling{lastPolled: at, nextPoll: base.Next(at, at, &e.cfg)}
	it, old, err := o.follow(storeKey(op.Project, base.ID()), base, ev, "", time.Time{}, p)
	if old {
		return it, AlreadyTracked, nil // followed concurrently
	}
	return it, NewlyTracked, err
}

// Resolve settles project's start of unknown outcome intentID with the
// operation id the operator found it started: followed as one started
// here (SeenLive: its final status counted even when it is final at this
// first read), then given the start's Idempotency-Key, so that a retry
// with the key is answered with it, and the intent deleted, in one write.
func (o *Ops) Resolve(ctx context.Context, project, intentID, id string) (Item, TrackResult, error) {
	ikey, in, err := o.unknownIntent(project, intentID)
	if err != nil {
		return Item{}, NewlyTracked, err
	}
	base := in.Record(id)
	base.Base().Project = project
	it, res, err := o.Track(ctx, base, SeenLive)
	if err != nil {
		return it, res, err
	}
	o.e.wmu.Lock()
	defer o.e.wmu.Unlock()
	settled, err := o.adoptKey(ikey, in, id)
	if err != nil {
		return it, res, err
	}
	return settled, res, nil
}

// adoptKey gives the followed operation id the Idempotency-Key of the
// intent in (under ikey), and writes it with the intent's deletion. e.wmu
// is held.
func (o *Ops) adoptKey(ikey string, in Intent, id string) (Item, error) {
	e, b := o.e, in.Base()
	key := storeKey(b.Project, id)
	e.mu.Lock()
	en := o.records[key]
	if en == nil || (en.rec.Base().IdemKey != "" && en.rec.Base().IdemKey != b.IdempotencyKey) {
		e.mu.Unlock()
		return Item{}, fmt.Errorf("%s %s has another idempotency key already", o.decl.What, id)
	}
	rec := en.rec.Clone()
	rec.Base().IdemKey, rec.Base().RequestHash = b.IdempotencyKey, b.RequestHash
	e.mu.Unlock()
	if err := o.write(key, rec, store.Op{Bucket: o.decl.Intents, Key: ikey}); err != nil {
		return Item{}, &StateError{ID: id, Err: err, What: o.decl.What}
	}
	e.mu.Lock()
	en.rec = rec // e.wmu is held: nothing wrote it in between
	en.gen++
	e.removeIntentLocked(o, ikey, in)
	if b.IdempotencyKey != "" {
		e.keys[storeKey(b.Project, b.IdempotencyKey)] = Ref{Ops: o, Rec: key}
	}
	it := en.item()
	e.mu.Unlock()
	level.Info(e.logger).Log("msg", o.decl.Request+" of unknown outcome resolved", "project", b.Project, "intent", b.ID, o.decl.IDKey, id)
	return it, nil
}

// item is the entry's item: a copy of its record and its polling state.
func (en *entry) item() Item { return Item{Rec: en.rec.Clone(), Poll: en.Polling} }

// One is project's followed operation id.
func (o *Ops) One(project, id string) (Item, bool) {
	o.e.mu.RLock()
	defer o.e.mu.RUnlock()
	if en := o.records[storeKey(project, id)]; en != nil {
		return en.item(), true
	}
	return Item{}, false
}

// Find is the newest followed operation match accepts, of any project.
func (o *Ops) Find(match func(rec Record) bool) (Item, bool) {
	var found *entry
	o.e.mu.RLock()
	defer o.e.mu.RUnlock()
	for _, en := range o.records {
		if match(en.rec) && (found == nil || cmpNewest(en.rec, found.rec) < 0) {
			found = en
		}
	}
	if found == nil {
		return Item{}, false
	}
	return found.item(), true
}

// List is project's followed operations, newest first (followed last,
// then id); all projects' for "".
func (o *Ops) List(project string) []Item {
	o.e.mu.RLock()
	out := make([]Item, 0, len(o.records))
	for _, en := range o.records {
		if project == "" || en.rec.Base().Project == project {
			out = append(out, en.item())
		}
	}
	o.e.mu.RUnlock()
	slices.SortFunc(out, func(a, b Item) int { return cmpNewest(a.Rec, b.Rec) })
	return out
}

// Newest are the n operations followed last of the projects that are
// label values (Labelled), newest first: a status page section's rows.
func (o *Ops) Newest(n int) []Item {
	out := slices.DeleteFunc(o.List(""), func(it Item) bool { return !o.Labelled(it.Rec.Base().Project) })
	return out[:min(n, len(out))]
}

// Each calls fn with every followed operation of a followed project and
// its polling state, under the engine's read lock (fn must not call the
// engine): what the metrics read at scrape time.
func (o *Ops) Each(fn func(rec Record, p *Polling)) {
	o.e.mu.RLock()
	defer o.e.mu.RUnlock()
	for _, en := range o.records {
		if o.e.projects[en.rec.Base().Project] {
			fn(en.rec, &en.Polling)
		}
	}
}

// EachUnknown calls fn with every start of unknown outcome of a followed
// project, under the engine's read lock (fn must not call the engine).
func (o *Ops) EachUnknown(fn func(in Intent)) {
	o.e.mu.RLock()
	defer o.e.mu.RUnlock()
	for _, in := range o.intents {
		if b := in.Base(); !b.inFlight && o.e.projects[b.Project] {
			fn(in)
		}
	}
}

// Recent returns, per project, when the kind's operations which accepts
// (nil: all) were started through the gateway within window, and when
// its intents which accepts were sent (of unknown outcome: they may have
// reached the API), oldest first: what the gateway's local limits count
// after a restart or a takeover.
func (o *Ops) Recent(window time.Duration, which func(Record) bool, whichIntent func(Intent) bool) map[string][]time.Time {
	now := o.e.cfg.Now()
	out := map[string][]time.Time{}
	o.e.mu.RLock()
	defer o.e.mu.RUnlock()
	for _, en := range o.records {
		if op := en.rec.Base(); op.Origin == OriginGateway && now.Sub(op.TrackedAt) < window && (which == nil || which(en.rec)) {
			out[op.Project] = append(out[op.Project], op.TrackedAt)
		}
	}
	for _, in := range o.intents {
		if b := in.Base(); now.Sub(b.StartedAt) < window && (whichIntent == nil || whichIntent(in)) {
			out[b.Project] = append(out[b.Project], b.StartedAt)
		}
	}
	for _, ts := range out {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	}
	return out
}

// Update writes a kind's own change of project's followed operation id
// (change, on a copy of its record in memory: a bundle made), and shows it
// once written; false when it is not followed.
func (o *Ops) Update(project, id string, change func(rec Record)) (bool, error) {
	e := o.e
	key := storeKey(project, id)
	e.wmu.Lock()
	defer e.wmu.Unlock()
	e.mu.Lock()
	en := o.records[key]
	if en == nil {
		e.mu.Unlock()
		return false, nil
	}
	rec := en.rec.Clone()
	change(rec)
	e.mu.Unlock()
	if err := o.write(key, rec); err != nil {
		return true, err
	}
	e.mu.Lock()
	en.rec, en.dirty = rec, false
	en.gen++
	e.mu.Unlock()
	return true, nil
}

// Recheck polls project's followed operation id at the next round, even
// when it is no longer polled: handing it over again is how a client says
// it may have changed (an agent job sent a follow-up elsewhere).
func (o *Ops) Recheck(project, id string) {
	o.e.mu.Lock()
	defer o.e.mu.Unlock()
	if en := o.records[storeKey(project, id)]; en != nil && !en.polled(o.e.cfg.Now(), &o.e.cfg) {
		en.recheck, en.nextPoll = true, time.Time{}
	}
}

// Claim is the first step of a kind's own request on its operations (an
// agent job's follow-up): project's Idempotency-Key key, when known
// already, is answered by replay (under the engine's lock, with the
// operation the key refers to, found or not; done is true); otherwise
// admit takes the gateway's slot and the key is claimed for note (Ref.Note)
// until the request is answered (Modify) or given up (Unclaim). The key's
// check, the admission and the claim are one step, so two requests with
// one key cannot both pass.
func (o *Ops) Claim(project, key string, note any, admit func() error, replay func(ref Ref, it Item, found bool) error) (done bool, err error) {
	e := o.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if key != "" {
		if ref, ok := e.keys[storeKey(project, key)]; ok {
			var it Item
			en := o.records[ref.Rec]
			if en != nil {
				it = en.item()
			}
			return true, replay(ref, it, en != nil && ref.Ops == o)
		}
	}
	if admit != nil {
		if err := admit(); err != nil {
			return false, err
		}
	}
	if key != "" {
		e.keys[storeKey(project, key)] = Ref{Ops: o, Note: note}
	}
	return false, nil
}

// Unclaim frees project's key claimed for note, when it still is (nothing
// was sent: a retry with the key may send again).
func (o *Ops) Unclaim(project, key string, note any) {
	if key == "" {
		return
	}
	o.e.mu.Lock()
	defer o.e.mu.Unlock()
	if sk := storeKey(project, key); o.e.keys[sk].Note == note {
		delete(o.e.keys, sk)
	}
}

// Modify writes a kind's own change of project's operation id (a
// follow-up), derived by change from a copy of its record in memory (or,
// when it is not followed, from fresh; nil: not followed, false), with
// extra operations in the same write (and the deletion of its start's
// intent, should its first write have failed), and counts ev; key, when
// not empty, then refers to the operation (Ref.More). The change is shown
// at once, and kept in memory when its write fails (written again at its
// next poll: the error is returned). Its polls start over from the record
// (Record.Next at at), and a poll that read before the change is read
// again.
func (o *Ops) Modify(project, id string, fresh Record, at time.Time, key string, change func(rec Record) ([]store.Op, Event)) (Item, bool, error) {
	e := o.e
	k := storeKey(project, id)
	e.wmu.Lock()
	defer e.wmu.Unlock()
	e.mu.Lock()
	en := o.records[k]
	if en == nil && fresh == nil {
		e.mu.Unlock()
		return Item{}, false, nil
	}
	if en == nil {
		// Forgotten while the request was under way (it had passed its
		// retention): followed again as it is now.
		en = &entry{rec: fresh}
		o.records[k] = en
	}
	rec := en.rec.Clone()
	extra, ev := change(rec)
	extra = append(extra, en.intentOps(o.decl.Intents)...)
	en.rec = rec
	en.gen++
	en.recheck, en.errors, en.notFound = false, 0, 0
	en.nextPoll = rec.Next(at, at, &e.cfg)
	if key != "" {
		e.keys[storeKey(project, key)] = Ref{Ops: o, Rec: k, More: true}
	}
	e.mu.Unlock()
	err := o.write(k, rec, extra...)
	e.mu.Lock()
	en.written(err)
	log := o.countLocked(rec, ev)
	it := en.item()
	e.mu.Unlock()
	log()
	return it, true, err
}
