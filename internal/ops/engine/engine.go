// Package engine follows operations of every kind (each a plug-in, Kind,
// in its own package under internal/ops/kinds) to their end. It starts them (for
// the gateway's routes) and follows those started elsewhere, polls every
// one not final, keeps each one's record crash-safely in a bbolt file
// (package store) or the replicas' Redis, and owns the metrics common to
// every kind. It names no kind and knows no HTTP route: the kinds' routes
// are in their packages, served by internal/ops/gateway.
//
// Counting rules, which hold within a process and across restarts:
//   - an intent is written (fsync) before a start is sent upstream, so a
//     start whose answer a crash hides is reported (an unknown outcome)
//     rather than forgotten; an Idempotency-Key is kept with its
//     operation, so a retry with it never starts a second one;
//   - an operation's record is written (fsync) before its start is
//     acknowledged, so an acknowledged operation is never lost;
//   - a final status is written before it is counted, and what was counted
//     is part of the written record, so a crash between the two
//     under-counts by one but never counts twice, and operations final
//     before a restart are not counted again;
//   - it is counted under the lock that makes it visible, so whoever reads
//     an operation final (its view, the gauges) reads it counted.
package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

// Store is the part of *store.Store the engine uses: the bbolt file, or
// the shared Redis of replicas (tests inject a failing one).
type Store interface {
	Apply(ops ...store.Op) error
	ForEachIn(bucket string, fn func(key, value []byte) error) error
	Len() (int, error)
	Path() string
	CheckFile() error
	Replaced() bool
	Stalled() bool
	Close() error
}

// Engine follows the operations of every kind with one state and one set
// of metrics.
type Engine struct {
	cfg     Config
	api     any
	store   Store
	metrics *metrics
	logger  log.Logger
	// kinds are the kinds' operations, in the registry's order.
	kinds []*Ops

	mu sync.RWMutex
	// projects are the projects followed (cfg.Projects, and those a
	// reload added: Follow), as a set and in order.
	projects    map[string]bool
	projectList []string
	// keys are the Idempotency-Keys in use, by storeKey(project, key), of
	// every kind.
	keys map[string]Ref

	// wmu orders the writes that derive a record from the one in memory
	// (polls, follow-ups, settles), so that none writes an older version
	// over a newer one. bbolt serializes writes anyway: this costs no
	// throughput.
	wmu sync.Mutex

	running atomic.Bool
	// started is when the engine opened: no operation's first poll here
	// was due before (entry.dueAt).
	started time.Time
	// fileReplaced is what checkStateFile last logged.
	fileReplaced atomic.Bool
	// inflight counts starts and tracks under way: they outlive their HTTP
	// request (an operation started upstream must be recorded even if the
	// client hangs up), so Close waits for them before closing the store.
	inflight sync.WaitGroup
}

// Ops are one kind's operations in an engine, and the engine's parts a
// kind uses (its starts, tracks, reads): the handle Kind.Open binds a
// kind's part to.
type Ops struct {
	e    *Engine
	kind Kind
	decl *Decl
	// records are the followed operations, by storeKey(project, id);
	// intents the starts under way or of unknown outcome, by
	// storeKey(project, intent id).
	records map[string]*entry
	intents map[string]Intent
}

// Ref is what an Idempotency-Key of a project refers to, of any kind: an
// operation followed (rec, its storeKey) or an intent of a start under way
// or of unknown outcome (in); Note is what a kind keeps there of its own
// (an agent job's follow-up on its way), More a key its record holds
// beside its start's (Record.Keys: a follow-up's).
type Ref struct {
	Ops  *Ops
	Rec  string
	In   Intent
	More bool
	Note any
}

// New validates cfg, opens (or creates) the state file (unless cfg.Store
// is given), loads the operations of cfg.Projects and registers the
// metrics with reg (when not nil). api is what the kinds call (each takes
// the endpoints it needs of it). Polling starts with Run.
func New(api any, reg prometheus.Registerer, cfg Config, logger log.Logger) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("engine config: %w", err)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Kinds == nil {
		cfg.Kinds = Kinds()
	}
	if logger == nil {
		logger = log.NewNopLogger()
	}
	st := cfg.Store
	if st == nil {
		var err error
		if st, err = store.Open(cfg.StatePath, storeOptions(&cfg)); err != nil {
			return nil, err
		}
	}
	e := &Engine{cfg: cfg, api: api, store: st, logger: logger, projects: map[string]bool{}, keys: map[string]Ref{}, started: cfg.Now()}
	for _, k := range cfg.Kinds {
		o := &Ops{e: e, decl: k.Declare(), records: map[string]*entry{}, intents: map[string]Intent{}}
		o.kind = k.Open(o)
		e.kinds = append(e.kinds, o)
	}
	for _, p := range cfg.Projects {
		e.projects[p] = true
	}
	e.projectList = slices.Clone(cfg.Projects)
	if err := e.refuseUnreadable(); err != nil {
		_ = st.Close()
		return nil, err
	}
	if err := e.load(func(p string) bool { return e.projects[p] }); err != nil {
		_ = st.Close()
		return nil, err
	}
	e.metrics = newMetrics(e)
	e.metrics.addProjects(cfg.Projects)
	if reg != nil {
		if err := reg.Register(e.metrics); err != nil {
			_ = st.Close()
			return nil, fmt.Errorf("engine: registering metrics: %w", err)
		}
	}
	return e, nil
}

// API is what the kinds call upstream (New's api).
func (e *Engine) API() any { return e.api }

// Config is the engine's configuration.
func (e *Engine) Config() *Config { return &e.cfg }

// Logger is the engine's logger.
func (e *Engine) Logger() log.Logger { return e.logger }

// Now is the engine's clock.
func (e *Engine) Now() time.Time { return e.cfg.Now() }

// Kinds are the kinds' parts in this engine, in the registry's order.
func (e *Engine) Kinds() []Kind {
	out := make([]Kind, len(e.kinds))
	for i, o := range e.kinds {
		out[i] = o.kind
	}
	return out
}

// Kind is the part of the kind called name (nil: not followed here).
func (e *Engine) Kind(name string) Kind {
	for _, o := range e.kinds {
		if o.decl.Name == name {
			return o.kind
		}
	}
	return nil
}

// Ops are the operations of the kind called name (nil: not followed
// here): what the gateway's routes common to every kind read.
func (e *Engine) Ops(name string) *Ops {
	for _, o := range e.kinds {
		if o.decl.Name == name {
			return o
		}
	}
	return nil
}

// Takes reports whether project takes kind's operations now (its routes
// are on, and the configuration gives the project its key), and the
// values of the key.
func (e *Engine) Takes(kind, project string) ([]string, bool) {
	if !e.cfg.On[kind] || e.cfg.Takes == nil {
		return nil, false
	}
	return e.cfg.Takes(kind, project)
}

// Engine is the engine of the ops.
func (o *Ops) Engine() *Engine { return o.e }

// Decl is the kind's declaration.
func (o *Ops) Decl() *Decl { return o.decl }

// Close waits for starts and tracks under way (each bounded by its
// caller's context), then closes the state. Call it after Run has returned
// and the HTTP server has stopped taking requests.
func (e *Engine) Close() error {
	e.inflight.Wait()
	if err := e.store.Close(); err != nil {
		return fmt.Errorf("closing the operations' state %s: %w", e.store.Path(), err)
	}
	return nil
}

// Accepts returns the ids of projects the engine follows.
func (e *Engine) Accepts(ids []string) []string {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return !e.projects[id] })
}

// Follow starts following projects added to the configuration while the
// engine runs (a reload): their records, intents and Idempotency-Keys are
// read from the state as New reads those it starts with, so a project
// added by a reload takes operations at once, and those it had in an
// earlier run are followed again, each by one entry. Projects followed
// already are left as they are (operations are never dropped: a project
// removed from the configuration keeps its operations until they end).
// When their state cannot be read it fails and changes nothing. Reloads
// call it one at a time.
func (e *Engine) Follow(ids []string) error {
	e.mu.RLock()
	var added []string
	for _, id := range ids {
		if !e.projects[id] && !slices.Contains(added, id) {
			added = append(added, id)
		}
	}
	e.mu.RUnlock()
	if len(added) == 0 {
		return nil
	}
	// Their series first, so that an operation loaded below and counted
	// at once is not missed.
	e.metrics.addProjects(added)
	if err := e.load(func(p string) bool { return slices.Contains(added, p) }); err != nil {
		// Nothing was merged: the projects stay unfollowed, without
		// series, until a later reload reads them.
		e.metrics.dropProjects(added)
		return fmt.Errorf("operations of %v: %w", added, err)
	}
	e.mu.Lock()
	for _, id := range added {
		e.projects[id] = true
	}
	e.projectList = append(e.projectList, added...)
	e.mu.Unlock()
	return nil
}

// Run polls until ctx is done, then returns once every poll it started has
// finished. Each kind polls in its own lane (lane). The first round starts
// at once, so operations followed before a restart resume immediately.
func (e *Engine) Run(ctx context.Context) error {
	if !e.running.CompareAndSwap(false, true) {
		return errors.New("engine: Run called twice")
	}
	defer e.running.Store(false)
	var wg sync.WaitGroup
	for _, o := range e.kinds {
		wg.Go(func() { e.lane(ctx, o) })
	}
	wg.Wait()
	return nil
}

// checkStateFile checks, once per poll round, that the state file's path
// still names the open file, and logs when that changes. Writes check it
// themselves (store.Apply): this notices it while nothing is written.
func (e *Engine) checkStateFile() {
	err := e.store.CheckFile()
	was := e.fileReplaced.Swap(err != nil)
	switch {
	case err != nil && !was:
		level.Error(e.logger).Log("msg", "state file deleted or replaced while running: no operation is acknowledged until it is back "+
			"(starts and follow-ups answer 503); move it back, or copy the open file out of /proc/PID/fd and restart on it (alerts/RUNBOOK.md)", "err", err)
	case err == nil && was:
		level.Info(e.logger).Log("msg", "state file is back at its path: operations are acknowledged again", "path", e.store.Path())
	}
}

// writeFailed counts a failed write of the state (err), and logs a
// replaced state file the first time a write meets it.
func (e *Engine) writeFailed(err error) {
	e.metrics.writeErrors.Inc()
	if _, ok := errors.AsType[*store.ReplacedError](err); ok {
		e.checkStateFile()
	}
}

// Apply writes ops to the state in one transaction, counting a failure.
func (e *Engine) Apply(ops ...store.Op) error {
	err := e.store.Apply(ops...)
	if err != nil {
		e.writeFailed(err)
	}
	return err
}

// Store is the engine's state.
func (e *Engine) Store() Store { return e.store }

// storeKey is the key of a record or an intent: its project and id.
func storeKey(project, id string) string { return project + "\x00" + id }

// Key is the key of project's operation (or intent) id in the state.
func Key(project, id string) string { return storeKey(project, id) }

// idOf is the id of its store key.
func idOf(project, key string) string { return strings.TrimPrefix(key, project+"\x00") }

// Unsaved is an operation the API acknowledged as started whose record
// could not be saved: its intent is still in the state, so an engine that
// loads the state finds an outcome it does not know. Issue 36 (4.1):
// during a Redis stall the gateway moved to the other replica and such a
// deployment was never followed. Whoever holds the gateway next settles it
// with its real id, through the route an operator uses (track ?intent=),
// so it is followed to its end, counted once, and its Idempotency-Key
// answered with it.
type Unsaved struct {
	Kind    string // its kind (Decl.Name)
	Project string
	ID      string // its id upstream
	Intent  string // the intent id it settles
}

// Unsaved lists the operations acknowledged upstream whose record is not
// saved yet, in a stable order. A stopped engine still answers it: the
// leader asks once a term has ended.
func (e *Engine) Unsaved() []Unsaved {
	e.mu.RLock()
	var out []Unsaved
	for _, o := range e.kinds {
		for _, en := range o.records {
			if en.intentKey != "" {
				op := en.rec.Base()
				out = append(out, Unsaved{Kind: o.decl.Name, Project: op.Project, ID: en.rec.ID(), Intent: idOf(op.Project, en.intentKey)})
			}
		}
	}
	e.mu.RUnlock()
	slices.SortFunc(out, func(a, b Unsaved) int {
		return strings.Compare(a.Kind+"\x00"+a.Project+"\x00"+a.ID, b.Kind+"\x00"+b.Project+"\x00"+b.ID)
	})
	return out
}

// load reads every record and intent of the projects want accepts into
// memory, of every kind: at start those configured, at a reload those it
// adds (Follow). The state is read without holding mu, and merged under
// it; everything is read before anything is merged, so a load that fails
// leaves the engine as it was.
func (e *Engine) load(want func(project string) bool) error {
	now := e.cfg.Now()
	l := &loading{want: want, keys: map[string]Ref{}}
	loaded := make([]*loadedKind, 0, len(e.kinds))
	for _, o := range e.kinds {
		lk, err := o.load(l, now)
		if err != nil {
			return fmt.Errorf("state %s: %w", e.store.Path(), err)
		}
		loaded = append(loaded, lk)
	}
	if len(l.resolved) > 0 {
		if err := e.Apply(l.resolved...); err != nil {
			level.Warn(e.logger).Log("msg", "could not delete intents whose operation is followed; retried at the next start", "err", err)
		}
	}
	e.mu.Lock()
	maps.Copy(e.keys, l.keys)
	for _, lk := range loaded {
		maps.Copy(lk.o.records, lk.records)
		for key, in := range lk.intents {
			e.addIntentLocked(lk.o, key, in)
		}
	}
	e.mu.Unlock()
	kv := []any{"msg", "operations' state loaded", "path", e.store.Path(), "other_projects", l.foreign, "unreadable", l.bad}
	for _, lk := range loaded {
		kv = append(kv, lk.o.decl.Name+"s", len(lk.records), "unknown_"+strings.ReplaceAll(lk.o.decl.Request, " ", "_")+"s", len(lk.intents))
	}
	level.Info(e.logger).Log(kv...)
	for _, lk := range loaded {
		if n := len(lk.intents); n > 0 {
			level.Warn(e.logger).Log("msg", lk.o.decl.Request+"s of unknown outcome: sent upstream by an earlier run that stopped before recording the answer; "+
				"the operations may exist unfollowed: list them, then settle or dismiss each (alerts/RUNBOOK.md)", "kind", lk.o.decl.Name, "count", n, "path", e.store.Path())
		}
		if x, ok := lk.o.kind.(Extras); ok {
			for _, v := range lk.extra {
				x.Resume(v.bucket, v.key, v.value)
			}
		}
	}
	return nil
}

// Extras is a kind that keeps intents of its own in the state, in its
// Decl.Extra buckets (an agent job's follow-ups): the engine reads those
// of the projects it loads with the rest (as NewExtra reads them), and
// hands each to Resume once everything is merged; the state tools tell
// them as NewExtra reads them.
type Extras interface {
	NewExtra(bucket string) Intent
	Resume(bucket, key string, value []byte)
}

// extra is an empty value of the kind's Extra bucket b (its engine part
// alone for a kind that is no Extras).
func extra(k Kind, b string) Intent {
	if x, ok := k.(Extras); ok {
		return x.NewExtra(b)
	}
	return &plainIntent{}
}

// loading is what a load read of the state, of every kind, before it is
// merged.
type loading struct {
	want func(project string) bool
	keys map[string]Ref
	// resolved deletes the intents whose operation is followed.
	resolved []store.Op
	// bad and foreign count unreadable values, and records of projects
	// not wanted.
	bad, foreign int
}

// loadedKind is what a load read of one kind.
type loadedKind struct {
	o       *Ops
	records map[string]*entry
	intents map[string]Intent
	extra   []extraValue
}

type extraValue struct {
	bucket, key string
	value       []byte
}

// load reads the kind's records and intents (and Extra values) of the
// projects l.want accepts: their Idempotency-Keys into l.keys, and the
// intents whose operation is in the state (a later write landed without
// deleting them) into l.resolved.
func (o *Ops) load(l *loading, now time.Time) (*loadedKind, error) {
	e, d := o.e, o.decl
	lk := &loadedKind{o: o, records: map[string]*entry{}, intents: map[string]Intent{}}
	err := e.store.ForEachIn(d.Records, func(k, v []byte) error {
		rec, err := o.decode(v)
		if err != nil {
			e.skipUnreadable(l, d.What, k, err)
			return nil
		}
		op := rec.Base()
		if !l.want(op.Project) {
			l.foreign++
			return nil
		}
		key := string(k)
		en := &entry{rec: rec}
		if rec.Polled(now, &e.cfg) && rec.Final() {
			// Watched (a completed agent job): its re-checks are spread
			// over their interval, not all at once after a restart.
			en.nextPoll = now.Add(spread(rec.Next(now, now, &e.cfg).Sub(now)))
		}
		lk.records[key] = en
		for _, ik := range o.keysOf(rec) {
			l.keys[storeKey(op.Project, ik.key)] = Ref{Ops: o, Rec: key, More: ik.more}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading %ss: %w", d.What, err)
	}
	err = e.store.ForEachIn(d.Intents, func(k, v []byte) error {
		in, err := o.decodeIntent(v)
		if err != nil {
			e.skipUnreadable(l, d.Request+" intent", k, err)
			return nil
		}
		b := in.Base()
		if !l.want(b.Project) {
			return nil
		}
		if ref, ok := l.keys[storeKey(b.Project, b.IdempotencyKey)]; ok && b.IdempotencyKey != "" && ref.Ops == o && !ref.More &&
			lk.records[ref.Rec].rec.Base().RequestHash == b.RequestHash {
			// Its operation is followed (a salvaged file can hold both):
			// the outcome is known.
			l.resolved = append(l.resolved, store.Op{Bucket: d.Intents, Key: string(k)})
			return nil
		}
		lk.intents[string(k)] = in
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading %s intents: %w", d.Request, err)
	}
	for _, b := range d.Extra {
		err = e.store.ForEachIn(b, func(k, v []byte) error {
			in := &wholeIntent{extra(o.kind, b)}
			if _, err := decodeState(v, b, in); err != nil {
				e.skipUnreadable(l, b, k, err)
			} else if l.want(in.Base().Project) {
				lk.extra = append(lk.extra, extraValue{bucket: b, key: string(k), value: bytes.Clone(v)}) // v is the store's until ForEachIn returns
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", strings.ReplaceAll(b, "_", " "), err)
		}
	}
	return lk, nil
}

// skipUnreadable counts and logs a value (what) of the state that does
// not decode, under key k.
func (e *Engine) skipUnreadable(l *loading, what string, k []byte, err error) {
	l.bad++
	level.Warn(e.logger).Log("msg", "skipping unreadable "+what+" in the state", "key", strings.ReplaceAll(string(k), "\x00", "/"), "err", err)
}

// idemKey is an Idempotency-Key a record holds: its start's, or one more
// (Record.Keys).
type idemKey struct {
	key  string
	more bool
}

// keysOf are the Idempotency-Keys rec holds.
func (o *Ops) keysOf(rec Record) []idemKey {
	var out []idemKey
	if k := rec.Base().IdemKey; k != "" {
		out = append(out, idemKey{key: k})
	}
	for _, k := range rec.Keys() {
		out = append(out, idemKey{key: k, more: true})
	}
	return out
}

// forgetKeysLocked drops the Idempotency-Keys that refer to the record
// under key. e.mu is held.
func (o *Ops) forgetKeysLocked(key string, rec Record) {
	project := rec.Base().Project
	for _, ik := range o.keysOf(rec) {
		sk := storeKey(project, ik.key)
		if ref := o.e.keys[sk]; ref.Ops == o && ref.Rec == key {
			delete(o.e.keys, sk)
		}
	}
}

// Due is a poll of an operation past its time.
type Due struct {
	Kind, Project, ID string
	At                time.Time
}

// MostOverdue is the scheduled poll of a followed project furthest past
// its time, of any kind (false: none is late).
func (e *Engine) MostOverdue() (Due, bool) {
	now := e.cfg.Now()
	var d Due
	e.mu.RLock()
	defer e.mu.RUnlock()
	for _, o := range e.kinds {
		for _, en := range o.records {
			op, at := en.rec.Base(), en.dueAt(e)
			if !e.projects[op.Project] || at.IsZero() || !at.Before(now) || !(en.pending || en.polled(now, &e.cfg)) {
				continue
			}
			if d.Kind == "" || at.Before(d.At) {
				d = Due{Kind: o.decl.Name, Project: op.Project, ID: en.rec.ID(), At: at}
			}
		}
	}
	return d, d.Kind != ""
}
