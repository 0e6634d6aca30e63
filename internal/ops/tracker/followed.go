package tracker

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
)

// The engine's one implementation of a kind whose record embeds opState
// (deployments, static exports): a kind declares itself with an opKind,
// and the engine does the rest. The opKind is its part of the rounds
// (kindEngine: due, read, apply, backoff, loss, load, retention, the
// metrics' and the status page's views), and its methods are the paths
// every such kind shares: following one handed over by its id (track),
// starting one (start, in started.go), writing, listing and settling one
// of unknown outcome (adoptKey). Before issue 36 each kind had its copy
// of each of them.

// followed is a followed operation in memory, of a kind declared by an
// opKind: its record (R, embedding opState) and its polling state.
type followed[R any] struct {
	rec R
	polling
	// queuedPolls counts the polls in a row that found it queued, for a
	// kind whose schedule backs off while it is (deployments).
	queuedPolls int
	// unwritten is the event of the read that made the record, when its
	// first write failed: counted once a write of the record lands (a
	// record final at once is written again by the rounds for it: due).
	unwritten finishEvent
}

// seen is what one read of an operation upstream makes of its record
// (old), read at at, seen how, and the event it counts.
type seen[R any] func(old R, at time.Time, how sighting) (R, finishEvent)

// opRecord is what the engine needs of the record R of an op kind (*R
// has it): its engine part (state: the opState it embeds), its id
// upstream, whether it is final (it will not change any more), whether one
// read from the state has what the kind needs beside its project and id
// (valid), and its view V, with its polling state.
type opRecord[R, V any] interface {
	*R
	state() *opState
	opID() string
	final() bool
	valid() bool
	view(p *polling) V
}

// opSpec is what an op kind declares of itself once (kind_<name>.go): its
// names, its state, and what only it knows of its operations. The engine
// derives the rest; opKind adds what each tracker has of it.
type opSpec[R comparable, P opRecord[R, V], V any, I pending] struct {
	// name is the kind (Kind.Name, Unsaved.Kind, keyRef.kind); what names
	// one in logs and errors ("static export"), idKey is its id's key in
	// log lines, idName what its id is called ("job id").
	name, what, idKey, idName string
	// bucket holds its records in the state; intents are its intents,
	// decodeIntent reads one.
	bucket       string
	intents      intentKind[I]
	decodeIntent func(data []byte) (I, error)
	// missing names what valid checks, in the error of a record read
	// without it.
	missing string
	// orgWide: the API's ids are the organization's, not a project's (its
	// paths name no project), so one id is followed for one project only:
	// followed under two it would be counted twice.
	orgWide bool
	// settle says how an operator settles a start of unknown outcome: a
	// format of the project (%[1]s) and the intent (%[2]s), for
	// StartOutcomeUnknownError.
	settle string
	// base is the record, before its first read, of the operation id that
	// an operator found the start in of unknown outcome started; adopt,
	// when not nil, copies the start's own fields into the record once
	// it is settled.
	base  func(in I, id string) R
	adopt func(r *R, in I)
	// further reports whether version b of a record got further than a
	// (nil: neither does; the state tools' pick).
	further func(a, b R) bool
	// endpoint is the read's.
	endpoint string
	// schedule sets e's next poll after a read of rec at at.
	schedule func(cfg *Config, e *followed[R], rec *R, at time.Time)
	// metrics are the kind's counters of what finished (opMetrics, or a
	// kind's own: automations), labels the values of its labels beside
	// project of rec; finishKV adds to the log line of one finished.
	metrics  func(m *metrics) opCounter
	labels   func(rec *R) []string
	finishKV func(rec *R) []any
	// addTo adds a followed operation to its project's scrape-time state,
	// unknownTo an intent of unknown outcome.
	addTo     func(pj *projectJobs, e *followed[R])
	unknownTo func(pj *projectJobs, in I)
	// rows sets the kind's rows of the status page from newest, the
	// operations of the followed projects, newest first (view is the
	// engine's view of one, dressed).
	rows func(out *status.Jobs, newest []*followed[R], now time.Time, view func(*followed[R]) V)
	// gone, when not nil, is what the kind makes of an operation the API
	// answered 404 for repeatedly, and the event it counts, instead of
	// marking it lost (automations: a run get-job does not know is not
	// followed, and counted so).
	gone func(r *R, at time.Time) finishEvent
	// dress, when not nil, completes a view with what the tracker knows
	// beside the record (automations: the status of the agent job a run
	// is). s.mu is held.
	dress func(s *Tracker, v *V)
}

// opCounter counts what a kind's operations finished (event ev of one of
// project, with the kind's label values lv); has says whether project is
// a label value.
type opCounter interface {
	count(has func(string) bool, ev finishEvent, project string, lv ...string)
}

// everyInterval schedules an operation's next read a poll interval after
// at while it is not final, the schedule of a kind with no backoff of its
// own (static exports, automations).
func everyInterval[R any, P interface {
	*R
	final() bool
}](cfg *Config, e *followed[R], r *R, at time.Time) {
	e.nextPoll = time.Time{}
	if !P(r).final() {
		e.nextPoll = at.Add(cfg.PollInterval)
	}
}

// opKind is an op kind (its opSpec) in a tracker: its operations, and
// its upstream's endpoints. The engine's methods below use nothing else.
type opKind[R comparable, P opRecord[R, V], V any, I pending] struct {
	*opSpec[R, P, V, I]
	s *Tracker
	// records are the followed operations, by storeKey(project, id).
	records map[string]*followed[R]
	// on reports whether the upstream has the kind's endpoints (none is
	// polled, started or followed without them).
	on func() bool
	// throttled is the upstream's Retry-After of an endpoint; get reads
	// one operation upstream.
	throttled func(endpoint string) time.Time
	get       func(ctx context.Context, project, id string, how sighting) (seen[R], error)
}

func (k *opSpec[R, P, V, I]) op(r *R) *opState      { return P(r).state() }
func (k *opSpec[R, P, V, I]) id(r *R) string        { return P(r).opID() }
func (k *opSpec[R, P, V, I]) final(r *R) bool       { return P(r).final() }
func (k *opSpec[R, P, V, I]) view(e *followed[R]) V { return P(&e.rec).view(&e.polling) }

// view is e's view, dressed by the kind (dress). s.mu is held.
func (k *opKind[R, P, V, I]) view(e *followed[R]) V {
	v := k.opSpec.view(e)
	if k.dress != nil {
		k.dress(k.s, &v)
	}
	return v
}
func (k *opSpec[R, P, V, I]) stateErr(id, intent string, err error) error {
	return &StateError{JobID: id, Err: err, Intent: intent, Op: k.what}
}

// encode is the state's value of a record: the record itself (its JSON
// tags are its state form: the engine's opState, and the kind's fields).
func (k *opSpec[R, P, V, I]) encode(r *R) ([]byte, error) {
	return encodeState(r, k.what, k.op(r).Project, k.id(r))
}

// decode reads a record from the state: one without its project, its id
// or what the kind needs (valid) is unreadable.
func (k *opSpec[R, P, V, I]) decode(data []byte) (R, error) {
	return decodeState(data, k.what, func(r *R) bool { return k.op(r).Project != "" && k.id(r) != "" && P(r).valid() },
		"project, "+k.idName+" or "+k.missing)
}

// pick prefers, of two versions of a record in the state, the readable
// one, then the final one (its count is written with it), then the one
// further along (further), else the first (pickRecord).
func (k *opSpec[R, P, V, I]) pick(a, b []byte) []byte {
	further := k.further
	if further == nil {
		further = func(R, R) bool { return false }
	}
	return pickRecord(a, b, k.decode, func(r R) bool { return k.op(&r).Counted || k.op(&r).Lost }, further)
}

// forms are the state tools' tests of the kind's values by bucket: a
// record or an intent that decodes, under its own key.
func (k *opSpec[R, P, V, I]) forms() map[string]func(key, value []byte) bool {
	return map[string]func(key, value []byte) bool{
		k.bucket: func(key, v []byte) bool {
			r, err := k.decode(v)
			return err == nil && storeKey(k.op(&r).Project, k.id(&r)) == string(key)
		},
		k.intents.bucket: func(key, v []byte) bool {
			in, err := k.decodeIntent(v)
			return err == nil && storeKey(in.intentProject(), in.intentID()) == string(key)
		},
	}
}

// count applies the event ev of a persisted change of rec to the kind's
// metrics.
func (k *opKind[R, P, V, I]) count(rec *R, ev finishEvent) {
	m := k.s.metrics
	k.metrics(m).count(m.has, ev, k.op(rec).Project, k.labels(rec)...)
}

// ref is the key reference of the operation at key.
func (k *opSpec[R, P, V, I]) ref(key string) keyRef { return keyRef{kind: k.name, op: key} }

// recordOf is the key of the operation ref refers to, "" when ref is not
// to one of the kind's.
func (k *opSpec[R, P, V, I]) recordOf(ref keyRef) string {
	if ref.kind != k.name {
		return ""
	}
	return ref.op
}

// opIntents declares the intents of an op kind named name (intentKind):
// what names a request, bucket holds them, all is the tracker's map, and
// encode their state form.
func opIntents[I pending](name, what, bucket string, all func(s *Tracker) map[string]I, encode func(in I) ([]byte, error)) intentKind[I] {
	return intentKind[I]{what: what, bucket: bucket, all: all, encode: encode,
		ref:    func(in I) keyRef { return keyRef{kind: name, opIntent: in} },
		refers: func(ref keyRef, in I) bool { return ref.kind == name && ref.opIntent == any(in) }}
}

// The kind's part of the engine's rounds (kindEngine).

func (k *opKind[R, P, V, I]) dueLocked(_, limit time.Time) []pollTask {
	if !k.on() {
		return nil
	}
	var tasks []pollTask
	for key, e := range k.records {
		// A final record is not read again, unless its write failed: the
		// round writes it (read) and counts it then.
		if e.pollPending || (k.final(&e.rec) && !e.dirty) || e.nextPoll.After(limit) {
			continue
		}
		e.pollPending = true
		tasks = append(tasks, pollTask{kind: k, key: key, project: k.op(&e.rec).Project, id: k.id(&e.rec), due: e.nextPoll})
	}
	return tasks
}

func (k *opKind[R, P, V, I]) pollingLocked(key string) *polling {
	if e, ok := k.records[key]; ok {
		return &e.polling
	}
	return nil
}

func (k *opKind[R, P, V, I]) throttledUntil() time.Time { return k.throttled(k.endpoint) }

func (k *opKind[R, P, V, I]) read(ctx context.Context, t pollTask) (func(at, roundStart time.Time), error) {
	if k.finalUnwritten(t.key) {
		// Nothing to ask upstream: write the record as it is.
		return func(at, _ time.Time) {
			k.applyRead(t, func(old R, _ time.Time, _ sighting) (R, finishEvent) { return old, finishEvent{} }, at)
		}, nil
	}
	seen, err := k.get(ctx, t.project, t.id, seenLive)
	if err != nil {
		return nil, err
	}
	return func(at, _ time.Time) { k.applyRead(t, seen, at) }, nil
}

// finalUnwritten reports whether the operation at key is final in memory
// and its write has not landed.
func (k *opKind[R, P, V, I]) finalUnwritten(key string) bool {
	k.s.mu.RLock()
	defer k.s.mu.RUnlock()
	e := k.records[key]
	return e != nil && e.dirty && k.final(&e.rec)
}

// applyRead records a successful read: the record it makes written before
// it is counted (a crash between the two under-counts, never counts
// twice), and an operation that finished logged. s.wmu is held (pollOne).
func (k *opKind[R, P, V, I]) applyRead(t pollTask, seen seen[R], at time.Time) {
	s := k.s
	e := lockFollowed(s, k.records, t.key)
	if e == nil {
		return
	}
	e.polledOK(at)
	rec, ev := seen(e.rec, at, seenLive)
	k.schedule(&k.s.cfg, e, &rec, at)
	if rec == e.rec && !e.dirty {
		s.mu.Unlock()
		return
	}
	write := func(extra ...store.Op) error { return k.persist(t.key, &rec, extra...) }
	if !s.writePolledLocked(&e.polling, k.intents.bucket, write, at.Add(s.cfg.PollInterval)) {
		s.mu.Unlock()
		return // memory unchanged
	}
	e.rec, e.dirty = rec, false
	k.count(&rec, e.unwritten) // the first read's, whose write failed
	k.count(&rec, ev)          // under the lock that shows it
	e.unwritten = finishEvent{}
	s.mu.Unlock()
	if ev.finished == "" {
		return
	}
	kv := append([]any{"msg", k.what + " finished", "project", t.project, k.idKey, bounded.Label(t.id), "status", ev.finished}, k.finishKV(&rec)...)
	if ev.observeDur {
		kv = append(kv, "duration", ev.duration)
	}
	level.Info(s.logger).Log(kv...)
}

// applyError records a failed read: the backoff, and after repeated 404s
// the operation lost (written, then shown). s.wmu is held (pollOne).
func (k *opKind[R, P, V, I]) applyError(t pollTask, err error, at time.Time) {
	s := k.s
	e := lockFollowed(s, k.records, t.key)
	if e == nil {
		return
	}
	_, lost := s.pollFailed(&e.polling, err, at)
	rec, n := e.rec, e.errors
	extra := e.intentOps(k.intents.bucket) // an intent whose record's first write failed goes with it
	s.mu.Unlock()
	level.Debug(s.logger).Log("msg", "polling "+k.what+" failed", "project", t.project, k.idKey, t.id, "consecutive_errors", n, "err", err)
	if !lost {
		return
	}
	op := k.op(&rec)
	last := op.Status
	var ev finishEvent
	if k.gone != nil {
		ev = k.gone(&rec, at)
	} else {
		op.Lost, op.TerminalAt = true, at
	}
	if k.persist(t.key, &rec, extra...) != nil {
		return // retried at the next poll, which will 404 again
	}
	s.mu.Lock()
	e.rec, e.dirty = rec, false
	e.landed(extra)
	k.count(&rec, e.unwritten)
	k.count(&rec, ev)
	e.unwritten = finishEvent{}
	s.mu.Unlock()
	level.Warn(s.logger).Log("msg", k.what+" "+cmp.Or(ev.finished, "lost")+": the API no longer knows it", "project", t.project, k.idKey, bounded.Label(t.id),
		"last_status", last)
}

// snapshotLocked adds the operations and the intents of unknown outcome to
// the projects of by. s.mu is held.
func (k *opKind[R, P, V, I]) snapshotLocked(by map[string]*projectJobs, now time.Time) {
	for _, in := range k.intents.all(k.s) {
		if pj := by[in.intentProject()]; pj != nil && !in.sending() {
			k.unknownTo(pj, in)
		}
	}
	for _, e := range k.records {
		pj := by[k.op(&e.rec).Project]
		if pj == nil {
			continue
		}
		k.addTo(pj, e)
		if !e.nextPoll.IsZero() && !k.final(&e.rec) {
			pj.maxOverdue = max(pj.maxOverdue, now.Sub(e.nextPoll))
		}
	}
}

// statusLocked adds the kind's rows to the status page. s.mu is held.
func (k *opKind[R, P, V, I]) statusLocked(out *status.Jobs, now time.Time) {
	k.rows(out, k.newestLocked(func(project string) bool { return k.s.projects[project] }), now, k.view)
}

// unsavedLocked adds the operations acknowledged upstream whose record is
// not written yet. s.mu is held.
func (k *opKind[R, P, V, I]) unsavedLocked(out []Unsaved) []Unsaved {
	for _, e := range k.records {
		if e.intentKey != "" {
			project := k.op(&e.rec).Project
			out = append(out, Unsaved{Kind: k.name, Project: project, ID: k.id(&e.rec), Intent: intentID(project, e.intentKey)})
		}
	}
	return out
}

// The paths of the kind's routes.

// track follows an operation started elsewhere (its id handed over) after
// one read upstream: base is its record before that read (the kind's
// fields; its project, origin and user are the engine's). how is seenLive
// for one started through the gateway and never counted (a settle), whose
// final status is then counted even at this first read. One followed
// already is returned as it is, AlreadyTracked, without asking upstream.
func (k *opKind[R, P, V, I]) track(ctx context.Context, project, id string, base R, how sighting) (V, TrackResult, error) {
	s := k.s
	s.inflight.Add(1)
	defer s.inflight.Done()
	var none V
	if !k.on() {
		return none, NewlyTracked, k.off()
	}
	if err := bounded.CheckID(k.idName, id); err != nil {
		return none, NewlyTracked, &BadIDError{Err: err}
	}
	key := storeKey(project, id)
	if v, ok := k.one(key); ok {
		return v, AlreadyTracked, nil
	}
	seen, err := readOnce(k.throttled, k.endpoint, k.what+" "+id+" of project "+project,
		func() (seen[R], error) { return k.get(ctx, project, id, how) })
	if err != nil && k.gone != nil && how == seenLive && apiclient.StatusCode(err) == http.StatusNotFound {
		// The settle of one started here that the API does not know (an
		// automation run that is no agent job, or has no job): recorded as
		// its kind records one gone, not refused, so that a handover
		// between replicas does not leave it an unknown outcome.
		seen, err = func(old R, at time.Time, _ sighting) (R, finishEvent) { return old, k.gone(&old, at) }, nil
	}
	if err != nil {
		return none, NewlyTracked, err
	}
	at := s.cfg.Now()
	op := k.op(&base)
	op.Project, op.Origin, op.TrackedAt, op.SubmittedBy = project, OriginTrack, at, userFrom(ctx)
	rec, ev := seen(base, at, how)
	e := &followed[R]{rec: rec, polling: polling{lastPolled: at}}
	k.schedule(&k.s.cfg, e, &rec, at)
	v, old, err := k.follow(key, e, ev, "")
	if old {
		return v, AlreadyTracked, nil // followed concurrently
	}
	return v, NewlyTracked, err
}

// off is the error of a call of the kind on an upstream without its
// endpoints.
func (k *opKind[R, P, V, I]) off() error {
	return &noEndpointsError{what: k.what}
}

// noEndpointsError: the tracker's upstream has no endpoints of the kind.
type noEndpointsError struct{ what string }

func (e *noEndpointsError) Error() string {
	return "tracker: the upstream has no " + e.what + " endpoints"
}

// follow adds e under key to the followed operations and writes it; ikey
// is its start's intent, deleted in the same write (and kept in e while
// the write has not landed: handoff.go), "" for one handed over. The event
// ev of the read that made it is counted once it is written. One followed
// already is answered as it is (old). s.wmu is taken: no poll writes it
// in between.
func (k *opKind[R, P, V, I]) follow(key string, e *followed[R], ev finishEvent, ikey string) (v V, old bool, err error) {
	s := k.s
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	if o := k.records[key]; o != nil {
		v := k.view(o)
		s.mu.Unlock()
		return v, true, nil
	}
	if other := k.followedElsewhereLocked(&e.rec); other != "" {
		s.mu.Unlock()
		var none V
		return none, false, fmt.Errorf("%s %s is followed for project %s: %w", k.what, bounded.Label(k.id(&e.rec)), other, apiclient.ErrOtherProject)
	}
	e.pollPending = true
	k.records[key] = e
	rec := e.rec
	s.mu.Unlock()
	var extra []store.Op
	if ikey != "" {
		extra = append(extra, store.Op{Bucket: k.intents.bucket, Key: ikey})
	}
	err = k.persist(key, &rec, extra...)
	s.mu.Lock()
	defer s.mu.Unlock()
	e.pollPending, e.intentKey = false, ikey
	e.written(err)
	if err != nil {
		e.unwritten = ev
		return k.view(e), false, k.stateErr(k.id(&rec), ikey, err)
	}
	k.count(&rec, ev) // after the write, under the lock that shows it
	return k.view(e), false, nil
}

// followedElsewhereLocked is the project under which an operation of an
// orgWide kind with rec's id is followed already, other than rec's; "" for
// none. s.mu is held.
func (k *opKind[R, P, V, I]) followedElsewhereLocked(rec *R) string {
	if !k.orgWide {
		return ""
	}
	id, project := k.id(rec), k.op(rec).Project
	for _, o := range k.records {
		if p := k.op(&o.rec).Project; p != project && k.id(&o.rec) == id {
			return p
		}
	}
	return ""
}

// persist writes rec durably, with extra in the same transaction.
func (k *opKind[R, P, V, I]) persist(key string, rec *R, extra ...store.Op) error {
	data, err := k.encode(rec)
	if err == nil {
		err = k.s.store.Apply(append([]store.Op{{Bucket: k.bucket, Key: key, Value: data}}, extra...)...)
	}
	if err != nil {
		k.s.writeFailed(err)
		level.Error(k.s.logger).Log("msg", "could not write a "+k.what+" to the state", "project", k.op(rec).Project, k.idKey, k.id(rec), "err", err)
	}
	return err
}

// one is the view of the operation at key, if followed.
func (k *opKind[R, P, V, I]) one(key string) (V, bool) {
	k.s.mu.RLock()
	defer k.s.mu.RUnlock()
	if e := k.records[key]; e != nil {
		return k.view(e), true
	}
	var none V
	return none, false
}

// list is a project's followed operations, newest first.
func (k *opKind[R, P, V, I]) list(project string) []V {
	k.s.mu.RLock()
	defer k.s.mu.RUnlock()
	newest := k.newestLocked(func(p string) bool { return p == project })
	out := make([]V, 0, len(newest)) // an empty list is [], never null
	for _, e := range newest {
		out = append(out, k.view(e))
	}
	return out
}

// newestLocked are the operations of the projects keep accepts, newest
// first (followed last, then by id). s.mu is held.
func (k *opKind[R, P, V, I]) newestLocked(keep func(project string) bool) []*followed[R] {
	out := make([]*followed[R], 0, len(k.records))
	for _, e := range k.records {
		if keep(k.op(&e.rec).Project) {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b *followed[R]) int {
		return cmp.Or(k.op(&b.rec).TrackedAt.Compare(k.op(&a.rec).TrackedAt), strings.Compare(k.id(&b.rec), k.id(&a.rec)))
	})
	return out
}

// startedRecently returns, per project, when the kind's operations of
// which (nil: all) were started through the gateway within window, and
// when its intents were sent (of unknown outcome: they may have reached
// the API), oldest first: what the gateway's local limits count after a
// restart.
func (k *opKind[R, P, V, I]) startedRecently(window time.Duration, which func(r *R) bool, whichIntent func(in I) bool) map[string][]time.Time {
	now := k.s.cfg.Now()
	out := map[string][]time.Time{}
	k.s.mu.RLock()
	defer k.s.mu.RUnlock()
	for _, e := range k.records {
		if op := k.op(&e.rec); op.Origin == OriginGateway && now.Sub(op.TrackedAt) < window && which(&e.rec) {
			out[op.Project] = append(out[op.Project], op.TrackedAt)
		}
	}
	for _, in := range k.intents.all(k.s) {
		if now.Sub(in.intentStart()) < window && whichIntent(in) {
			out[in.intentProject()] = append(out[in.intentProject()], in.intentStart())
		}
	}
	for _, ts := range out {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	}
	return out
}

// resolve settles the kind's intent of unknown outcome intentID of project
// with the operation id the operator found it started: followed as one
// started here (track, seenLive: counted even if it is final already),
// then given the intent's Idempotency-Key, the intent deleted in the same
// write (adoptKey).
func (k *opKind[R, P, V, I]) resolve(ctx context.Context, project, intentID, id string) (V, TrackResult, error) {
	follow := func(in I) (V, TrackResult, error) { return k.track(ctx, project, id, k.base(in, id), seenLive) }
	return settleIntent(k.s, k.intents, project, intentID, follow, func(ikey string, in I) (V, error) {
		return k.adoptKey(ikey, in, id)
	})
}

// adoptKey gives the followed operation id the Idempotency-Key of the
// intent in (under ikey) and the answer its start would have had, and
// writes it with the intent's deletion. s.wmu is held (settleIntent).
func (k *opKind[R, P, V, I]) adoptKey(ikey string, in I, id string) (V, error) {
	s := k.s
	var none V
	key := storeKey(in.intentProject(), id)
	e := lockFollowed(s, k.records, key)
	if e == nil {
		return none, errOtherKey(k.what, id)
	}
	rec := e.rec
	op := k.op(&rec)
	if op.IdemKey != "" && op.IdemKey != in.intentKey() {
		s.mu.Unlock()
		return none, errOtherKey(k.what, id)
	}
	op.IdemKey, op.RequestHash = in.intentKey(), in.requestHash()
	if op.Code == 0 {
		op.Code = http.StatusAccepted // what the start would have been answered
	}
	if k.adopt != nil {
		k.adopt(&rec, in)
	}
	s.mu.Unlock()
	if err := k.persist(key, &rec, store.Op{Bucket: k.intents.bucket, Key: ikey}); err != nil {
		return none, k.stateErr(id, "", err)
	}
	s.mu.Lock()
	e.rec = rec // s.wmu is held: nothing wrote it in between
	settledLocked(s, k.intents, ikey, in, in.intentProject(), op.IdemKey, k.ref(key))
	v := k.view(e)
	s.mu.Unlock()
	level.Info(s.logger).Log("msg", k.intents.what+" of unknown outcome resolved", "project", in.intentProject(), "intent", in.intentID(), k.idKey, id)
	return v, nil
}

// OpView is what the view of an operation of every op kind shows beside
// the kind's own fields (the view embeds it): its project, the API's
// status (queued, in the kind's word, before the first read; the
// exporter's StatusLost once the API lost it), its createdAt, and how the
// exporter follows it.
type OpView struct {
	ProjectID string            `json:"projectId"`
	Status    string            `json:"status"`
	CreatedAt apiclient.APITime `json:"createdAt"`
	Tracking  Followed          `json:"tracking"`
}

// opView is the OpView of an operation (op, its polling state p; final:
// it will not change any more).
func opView(op *opState, p *polling, final bool, queued string) OpView {
	f := Followed{Origin: op.Origin, TrackedAt: op.TrackedAt, LastError: p.lastErr, SubmittedBy: op.SubmittedBy}
	status := cmp.Or(op.Status, queued)
	if op.Lost {
		status, f.LastUpstreamStatus = StatusLost, op.Status
	}
	return OpView{ProjectID: op.Project, Status: status, CreatedAt: apiclient.APITime{Time: op.CreatedAt}, Tracking: p.tracking(f, op.TerminalAt, final)}
}
