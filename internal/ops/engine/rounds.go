package engine

import (
	"cmp"
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

// The poll rounds: which operations are due, the pool of workers, the
// API's Retry-After pause, the poll delay metric, the timeout of a read,
// what a read or a failed read changes, and retention are the engine's,
// the same for every kind; reading one operation and what a read means
// are the kind's (Kind.Read, Record.Saw).

// pollTask is one operation to poll, due at due (zero: at once); gen is
// its entry's gen when it was picked.
type pollTask struct {
	o       *Ops
	key     string
	rec     Record
	due     time.Time
	gen     int
	project string
	// write: no longer polled, due because its write failed: written as
	// it is, not read.
	write bool
}

// Round runs a round of every kind, one after the other: tests run it on
// their own clock; Run runs each kind's rounds in its own lane.
func (e *Engine) Round(ctx context.Context) {
	for _, o := range e.kinds {
		e.roundOf(ctx, o)
	}
}

// lane runs o's rounds, one per poll interval (or at the next tick after
// one that overran). Each kind has its own lane and its own
// MaxConcurrentPolls reads: a kind whose status endpoint stalls holds
// only its own slots and delays only its own rounds.
func (e *Engine) lane(ctx context.Context, o *Ops) {
	t := time.NewTicker(e.cfg.PollInterval)
	defer t.Stop()
	for {
		e.roundOf(ctx, o)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// roundOf forgets what of o is past retention and polls every due
// operation of o, at most MaxConcurrentPolls at a time, and returns when
// all polls are done.
func (e *Engine) roundOf(ctx context.Context, o *Ops) {
	if ctx.Err() != nil {
		return
	}
	e.checkStateFile()
	now := e.cfg.Now()
	o.forgetExpired(now)
	tasks := e.due(o, now)
	// A fixed pool of workers rather than a goroutine per operation:
	// cheaper with thousands of them, and the bound is the same.
	work := make(chan pollTask)
	var wg sync.WaitGroup
	for range min(e.cfg.MaxConcurrentPolls, len(tasks)) {
		wg.Go(func() {
			for t := range work {
				e.pollOne(ctx, t, now)
			}
		})
	}
	sent := 0
	for _, t := range tasks {
		if ctx.Err() != nil {
			break
		}
		work <- t
		sent++
	}
	close(work)
	wg.Wait()
	if sent < len(tasks) {
		e.mu.Lock()
		for _, t := range tasks[sent:] {
			if en := o.records[t.key]; en != nil {
				en.pending = false
			}
		}
		e.mu.Unlock()
	}
}

// due picks o's operations to poll in a round starting at now: those
// still polled (or whose record is not written: the poll writes it) whose
// time has come. Half a poll interval of slack keeps one scheduled for
// "next round" from slipping one more round because the ticker fired a
// hair early.
func (e *Engine) due(o *Ops, now time.Time) []pollTask {
	limit := now.Add(e.cfg.PollInterval / 2)
	e.mu.Lock()
	defer e.mu.Unlock()
	var tasks []pollTask
	for key, en := range o.records {
		if en.pending || !(en.dirty || en.polled(now, &e.cfg)) || en.nextPoll.After(limit) {
			continue
		}
		en.pending = true
		tasks = append(tasks, pollTask{o: o, key: key, rec: en.rec.Clone(), due: en.nextPoll, gen: en.gen, project: en.rec.Base().Project,
			write: !en.polled(now, &e.cfg)})
	}
	return tasks
}

// pollOne reads one operation of any kind and applies what it learned.
func (e *Engine) pollOne(ctx context.Context, t pollTask, roundStart time.Time) {
	if !t.due.IsZero() {
		e.metrics.delay.Observe(max(e.cfg.Now().Sub(t.due).Seconds(), 0))
	}
	var read any
	var err error
	if !t.write {
		pctx, cancel := context.WithTimeout(ctx, e.cfg.PollTimeout)
		read, err = t.o.kind.Read(pctx, t.rec, SeenLive)
		cancel()
	}
	throttled, isThrottled := errors.AsType[*apiclient.ThrottledError](err)
	if (err != nil && ctx.Err() != nil) || isThrottled {
		// Shutting down (not the operation's fault), or the API asked for
		// a pause (Retry-After): no request left, and none is held.
		e.mu.Lock()
		if en := t.o.records[t.key]; en != nil {
			en.pending = false
			if isThrottled {
				en.nextPoll = throttled.Until
			}
		}
		e.mu.Unlock()
		return
	}
	at := e.cfg.Now()
	// The change is derived from the record in memory: wmu keeps a
	// follow-up or a settle from writing in between.
	e.wmu.Lock()
	defer e.wmu.Unlock()
	if err != nil {
		t.o.applyError(t, err, at)
		return
	}
	t.o.applyRead(t, read, at, roundStart)
}

// applyRead records a successful read: the record it makes written before
// it is counted (a crash between the two under-counts, never counts
// twice). e.wmu is held.
func (o *Ops) applyRead(t pollTask, read any, at, roundStart time.Time) {
	e := o.e
	e.mu.Lock()
	en := o.records[t.key]
	switch {
	case en == nil:
		e.mu.Unlock()
		return
	case en.gen != t.gen:
		// A follow-up or a settle changed it while this poll was under
		// way: what it read may predate that.
		en.pending, en.nextPoll = false, roundStart.Add(e.cfg.PollInterval)
		e.mu.Unlock()
		return
	}
	en.polledOK(at)
	en.recheck = false
	rec := en.rec.Clone()
	var ev Event
	changed := false
	if !t.write {
		ev, changed = rec.Saw(read, at, roundStart, SeenLive)
	}
	en.nextPoll = rec.Next(at, roundStart, &e.cfg)
	if !changed && !en.dirty {
		en.rec = rec // what a kind keeps in memory only (a deployment's queued polls)
		e.mu.Unlock()
		return
	}
	extra := en.intentOps(o.decl.Intents)
	e.mu.Unlock()
	err := o.write(t.key, rec, extra...)
	e.mu.Lock()
	if err != nil {
		// Kept in memory only: the next round reads it again and writes
		// it (not at the schedule of what could not be written: 5m and
		// more for a completed job).
		en.written(err)
		en.nextPoll = roundStart.Add(e.cfg.PollInterval)
		e.mu.Unlock()
		return
	}
	en.landed(extra)
	en.rec = rec
	log := o.countLocked(rec, en.unwritten, ev) // the first read's, whose write failed, and this one's
	en.unwritten = Event{}
	e.mu.Unlock()
	log()
}

// countLocked counts the events of rec (Kind.Count) that are news, and
// returns what logs them once the lock is released. e.mu is held.
func (o *Ops) countLocked(rec Record, evs ...Event) (log func()) {
	var lines [][]any
	for _, ev := range evs {
		if ev == (Event{}) {
			continue
		}
		if kv := o.kind.Count(rec, ev); kv != nil {
			lines = append(lines, kv)
		}
	}
	return func() {
		for _, kv := range lines {
			level.Info(o.e.logger).Log(kv...)
		}
	}
}

// applyError records a failed read: the backoff, and after 404s what the
// kind makes of them (Record.Missing: most lose it at the third). e.wmu
// is held.
func (o *Ops) applyError(t pollTask, err error, at time.Time) {
	e := o.e
	e.mu.Lock()
	en := o.records[t.key]
	if en == nil {
		e.mu.Unlock()
		return
	}
	en.pending, en.recheck = false, false
	en.errors++
	en.lastErr = errorText(err)
	en.nextPoll = at.Add(e.backoff(en.errors, err, at))
	n := 0
	if apiclient.StatusCode(err) == http.StatusNotFound {
		en.notFound++
		n = en.notFound
	} else {
		en.notFound = 0
	}
	errs := en.errors
	var ev Event
	changed := false
	rec := en.rec.Clone()
	if n > 0 {
		ev, changed = rec.Missing(n, at)
	}
	extra := en.intentOps(o.decl.Intents) // an intent whose record's first write failed goes with it
	e.mu.Unlock()
	level.Debug(e.logger).Log("msg", "polling "+o.decl.What+" failed", "project", t.project, o.decl.IDKey, t.rec.ID(), "consecutive_errors", errs, "err", err)
	if !changed || o.write(t.key, rec, extra...) != nil {
		return // a failed write is retried at the next poll, which will 404 again
	}
	e.mu.Lock()
	en.rec = rec
	en.landed(extra)
	log := o.countLocked(rec, en.unwritten, ev)
	en.unwritten = Event{}
	e.mu.Unlock()
	log()
	if ev.Lost {
		level.Warn(e.logger).Log("msg", o.decl.What+" lost: the API no longer knows it", "project", t.project, o.decl.IDKey, bounded.Label(t.rec.ID()),
			"last_status", bounded.Label(rec.Base().Status))
	}
}

// errorText is a poll error as an operation's lastError shows it: at most
// 300 bytes.
func errorText(err error) string {
	msg := err.Error()
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return msg
}

// backoff is the wait after n consecutive errors, the last at now:
// PollInterval doubled per error, capped at 5m, jittered by ±20%, and never
// shorter than what the API asked for.
func (e *Engine) backoff(n int, err error, now time.Time) time.Duration {
	d := e.cfg.PollInterval
	for i := 1; i < n && d < maxPollBackoff; i++ {
		d *= 2
	}
	d = min(d, maxPollBackoff)
	d = d*4/5 + rand.N(d*2/5+1)
	if throttled, ok := errors.AsType[*apiclient.ThrottledError](err); ok {
		d = max(d, throttled.Until.Sub(now))
	} else if apiErr, ok := errors.AsType[*apiclient.APIError](err); ok && apiErr.RetryAfter > 0 {
		d = max(d, apiErr.RetryAfter)
	}
	return d
}

// spread is a random wait in [0, d): what spreads the first re-checks of
// watched operations after a restart.
func spread(d time.Duration) time.Duration { return rand.N(max(d, 1)) }

// write writes rec durably under key, with extra in the same transaction;
// a failure is counted and logged.
func (o *Ops) write(key string, rec Record, extra ...store.Op) error {
	data, err := encodeState(rec, o.decl.What, rec.Base().Project, rec.ID())
	if err == nil {
		err = o.e.Apply(append([]store.Op{{Bucket: o.decl.Records, Key: key, Value: data}}, extra...)...)
	}
	if err != nil {
		level.Error(o.e.logger).Log("msg", "could not write a "+o.decl.What+" to the state", "project", rec.Base().Project, o.decl.IDKey, rec.ID(), "err", err)
	}
	return err
}

// forgetExpired deletes the kind's operations final (or lost) for longer
// than Retention, and its intents as old: from the state first, then from
// memory, with the Idempotency-Keys that refer to them.
func (o *Ops) forgetExpired(now time.Time) {
	e, d := o.e, o.decl
	var ops []store.Op
	e.mu.RLock()
	for key, en := range o.records {
		if op := en.rec.Base(); en.rec.Final() && !op.TerminalAt.IsZero() && now.Sub(op.TerminalAt) >= e.cfg.Retention {
			ops = append(ops, store.Op{Bucket: d.Records, Key: key})
		}
	}
	for key, in := range o.intents {
		if b := in.Base(); !b.inFlight && now.Sub(b.StartedAt) >= e.cfg.Retention {
			ops = append(ops, store.Op{Bucket: d.Intents, Key: key})
		}
	}
	e.mu.RUnlock()
	if len(ops) == 0 {
		return
	}
	if err := e.Apply(ops...); err != nil {
		level.Error(e.logger).Log("msg", "could not forget expired "+d.What+"s", "records", len(ops), "err", err)
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, op := range ops {
		if op.Bucket == d.Intents {
			if in, ok := o.intents[op.Key]; ok {
				e.removeIntentLocked(o, op.Key, in)
			}
			continue
		}
		if en, ok := o.records[op.Key]; ok {
			o.forgetKeysLocked(op.Key, en.rec)
		}
		delete(o.records, op.Key)
	}
	level.Debug(e.logger).Log("msg", "forgot "+d.What+"s past retention", "records", len(ops))
}

// cmpNewest orders operations newest first: followed last, then by id.
func cmpNewest(a, b Record) int {
	return cmp.Or(b.Base().TrackedAt.Compare(a.Base().TrackedAt), cmp.Compare(b.ID(), a.ID()))
}
