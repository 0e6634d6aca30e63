// The scheduler's walks: which due entries start, in priority order, while
// the budget pays for each whole walk and page walks stay within their share
// (startDue, pageSpent), and one walk of an entry, from its claim to its new
// state (start, walk).

package refresh

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/human"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// startDue starts the due walks in priority order while the budget can pay
// for each whole walk, and returns when to look again (zero: no idea, look
// again after recheck). Each due walk that cannot start is told when it is
// expected to (entry.expected), from the budget and the page share it waits
// for behind the walks ahead of it: what the status page says as "next".
func (s *Scheduler) startDue() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return time.Time{}
	}
	now := s.now()
	r := round{now: now, paused: s.pausedUntil()}
	r.reserved, r.probing = s.inFlight()
	r.free = s.budget.Free() - r.reserved
	for _, e := range s.order(now) {
		e.expected = time.Time{}
		if e.inflight != nil {
			continue
		}
		due, at := s.due(e, now)
		if !due {
			r.soonest(at)
			continue
		}
		need := min(e.cost, s.budget.Effective())
		if e.state.capped > 0 {
			need = min(s.walkCap(e), s.budget.Effective())
		}
		if s.wait(e, &r, need) {
			continue
		}
		r.free -= need
		r.reserved += need
		e.reserved = need
		if e.scope != ScopeSite {
			s.pageLog = append(s.pageLog, pageSend{at: now, n: need})
		}
		r.probing = r.probing || !e.costKnown
		s.start(e, now)
	}
	return r.next
}

// wait reports whether due entry e, whose walk needs need requests, waits
// in round r rather than start, and if so sets when it is expected to
// start. Caller holds mu.
func (s *Scheduler) wait(e *entry, r *round, need int) bool {
	if e.state.capped > 0 {
		// A walk past pages that did not end goes on what the budget has
		// spare: it starts when nothing waits ahead of it and the budget
		// pays all it may send, and no other walk waits for it.
		if r.blocked || !r.paused.IsZero() || s.running >= s.cfg.Concurrency || (r.probing && !e.costKnown) || r.free < need {
			e.expected = s.expectedStart(e, r, need)
			return true
		}
		return false
	}
	page := e.scope != ScopeSite
	blocked := r.blocked || (page && r.pagesBlocked)
	if !blocked && !r.paused.IsZero() {
		r.soonest(r.paused)
		r.blocked, blocked = true, true
	}
	if !blocked {
		held, until, pagesOnly := s.holdBack(e, r, need)
		if !held {
			return false
		}
		r.soonest(until)
		if pagesOnly {
			r.pagesBlocked = true
		} else {
			r.blocked = true
		}
	}
	e.expected = s.expectedStart(e, r, need)
	r.queued += need
	if page {
		r.queuedPages += need
	}
	return true
}

// expectedStart is when due entry e, which waits in round r behind the
// walks queued ahead of it, is expected to start: once the budget pays for
// them and it, and the page share has room for it. Caller holds mu.
func (s *Scheduler) expectedStart(e *entry, r *round, need int) time.Time {
	at := r.now
	if r.paused.After(at) {
		at = r.paused
	}
	if t := s.budget.NextFree(r.reserved + r.queued + need); t.After(at) {
		at = t
	}
	if e.scope != ScopeSite && s.siteShare > 0 {
		if used, until := s.pageSpent(r.now, r.queuedPages+need); used+r.queuedPages+need > s.pageShare && until.After(at) {
			at = until
		}
	}
	return at
}

// round is what one startDue has found so far.
type round struct {
	now time.Time
	// next is when to look again (zero: after recheck).
	next time.Time
	// paused: the budget may not be spent before then (zero: it may).
	paused time.Time
	// free is the budget's free requests less what walks reserved.
	free, reserved int
	// probing: a walk of unknown cost runs or was started.
	probing bool
	// blocked: a due entry waits, so nothing behind it starts;
	// pagesBlocked: a page walk waits for the page share, so no page walk
	// behind it starts (today's site totals still may: the share exists so
	// that page walks never hold them back).
	blocked, pagesBlocked bool
	// queued is what the due walks that wait need, and queuedPages the
	// page walks' part of it: what walks behind them wait for too.
	queued, queuedPages int
}

// soonest makes t the time to look again if it is sooner (t zero: no
// change).
func (r *round) soonest(t time.Time) {
	if !t.IsZero() && (r.next.IsZero() || t.Before(r.next)) {
		r.next = t
	}
}

// pausedUntil is when the budget may be spent again: a pause of the budget,
// or a 429's Retry-After on any analytics endpoint, which holds back the
// organization's quota (zero: not paused).
func (s *Scheduler) pausedUntil() time.Time {
	paused := s.budget.PausedUntil()
	for _, d := range sources.All() {
		for _, ep := range d.Endpoints {
			if t := s.client.ThrottledUntil(ep); t.After(paused) {
				paused = t
			}
		}
	}
	return paused
}

// inFlight is what the walks in flight reserved, and whether one of them is
// of unknown cost. Caller holds mu.
func (s *Scheduler) inFlight() (reserved int, probing bool) {
	for _, e := range s.entries {
		if e.inflight != nil {
			// Requests a walk in flight already sent count in Free too:
			// counting them twice only delays the next start a little.
			reserved += e.reserved
			probing = probing || !e.costKnown
		}
	}
	return reserved, probing
}

// holdBack reports whether due entry e, whose walk needs need requests,
// must wait in round r, and until when (zero: until a walk ends, which
// wakes Run); pagesOnly: it waits for the page share, which holds back the
// page walks behind it but not today's site totals. Caller holds mu.
func (s *Scheduler) holdBack(e *entry, r *round, need int) (held bool, until time.Time, pagesOnly bool) {
	// One walk of unknown cost at a time: its estimate may be short,
	// and walks never wait for the budget halfway.
	if s.running >= s.cfg.Concurrency || (r.probing && !e.costKnown) {
		return true, time.Time{}, false
	}
	// Page walks stay within their share of the budget in any
	// window, so that a burst of them (at start, after midnight) never
	// holds today's site totals back.
	if e.scope != ScopeSite && s.siteShare > 0 {
		if used, until := s.pageSpent(r.now, need); used+need > s.pageShare {
			return true, until, true
		}
	}
	if r.free < need {
		// Strict priority: nothing behind this entry may take the
		// requests it waits for, or a long window could starve today's.
		return true, s.budget.NextFree(r.reserved + need), false
	}
	return false, time.Time{}, false
}

// pageSend is a page walk's reservation at its start.
type pageSend struct {
	at time.Time
	n  int
}

// pageSpent is what page walks reserved in the window up to now, and when
// enough of it leaves the window for need more. Caller holds mu.
func (s *Scheduler) pageSpent(now time.Time, need int) (int, time.Time) {
	hold := s.budget.Window() + s.budget.Window()/100
	cut := 0
	for cut < len(s.pageLog) && !s.pageLog[cut].at.After(now.Add(-hold)) {
		cut++
	}
	s.pageLog = s.pageLog[cut:]
	used := 0
	for _, p := range s.pageLog {
		used += p.n
	}
	over := used + need - s.pageShare
	for _, p := range s.pageLog {
		if over <= 0 {
			break
		}
		over -= p.n
		if over <= 0 {
			return used, p.at.Add(hold)
		}
	}
	return used, now
}

// start runs one walk of e in its own goroutine. Caller holds mu.
func (s *Scheduler) start(e *entry, now time.Time) {
	done := make(chan struct{})
	e.inflight = done
	s.running++
	s.starts++
	s.wg.Add(1)
	go s.walk(e, now, done)
}

// walk fetches every page of e, then swaps in its new state.
func (s *Scheduler) walk(e *entry, start time.Time, done chan struct{}) {
	defer s.wg.Done()
	s.mu.Lock()
	cost, effective, walkCap := e.cost, s.budget.Effective(), s.walkCap(e)
	key := ""
	if s.cfg.Shared != nil {
		key = sharedKey(e)
	}
	s.mu.Unlock()
	ctx, cancel := s.walkContext(cost, effective)
	defer cancel()
	ctx = apiclient.WithRequestCap(ctx, walkCap)

	day := analytics.Today(start, e.proj.Loc())
	if e.final {
		day = analytics.AddDays(day, -1)
	}
	from, to := e.window.RangeEndingOn(day)
	q := sources.Query{Project: e.project, DateFrom: from, DateTo: to, TotalsOnly: e.scope == ScopeSite}
	var (
		snap    sources.Snapshot
		err     error
		token   int64
		release = func() {}
	)
	if key != "" {
		walkCtx, tok, rel, walk, cerr := s.claim(ctx, e, key)
		switch {
		case cerr == nil && !walk: // another replica's snapshot is fresh
			s.endWithoutWalk(e, time.Time{}, done)
			return
		case errors.Is(cerr, ErrHeld): // another replica is walking it
			s.endWithoutWalk(e, s.now().Add(heldWait), done)
			return
		case cerr != nil:
			err = fmt.Errorf("shared plan: %w", cerr)
		default:
			ctx, token, release = walkCtx, tok, rel
		}
	}
	if err == nil {
		snap, err = e.src.Walk(ctx, q)
	}
	end := s.now()

	s.mu.Lock()
	old := e.state
	next := s.ended(e, q, start, end, snap, token, err)
	e.state = next
	e.inflight = nil
	e.reserved = 0
	s.running--
	if !old.attempted || cost != e.cost {
		s.replan()
	}
	s.mu.Unlock()
	if err == nil && token > 0 {
		s.publish(e, key, token, snap, start, next.duration)
	}
	release()
	close(done)
	s.wake()
}

// A walk sends at most walkCapFactor times its planned cost, and never
// fewer than minWalkCap requests: pages that never end (an API that says
// hasMore for ever) end as a pagination error rather than spend the
// organization's hour, and the other walks go on. After such a walk the
// next may go walkCapFactor times further each time (a site that outgrew
// its cost is read whole within a walk or two), but only as far as what
// the plan leaves of the budget, and it waits ever longer (retryInterval):
// pages that never end never take what the other walks need.
const (
	walkCapFactor = 3
	minWalkCap    = 20
)

// walkCap is the requests e's next walk may send. Caller holds mu.
func (s *Scheduler) walkCap(e *entry) int {
	c := max(minWalkCap, walkCapFactor*e.cost)
	if e.state.capped == 0 {
		return c
	}
	// What the plan leaves of the budget: the limit less what the other
	// walks of known cost spend per window on their intervals.
	spare := float64(s.budget.Limit())
	for _, o := range s.entries {
		if o != e && o.costKnown && o.interval > 0 {
			spare -= float64(o.cost) * math.Ceil(s.budget.Window().Seconds()/o.interval.Seconds())
		}
	}
	for range e.state.capped {
		c = max(c, min(c*walkCapFactor, int(spare)))
	}
	return c
}

// walkContext bounds a walk of cost requests under a budget of effective
// requests a window: by the refresh timeout, and for a walk larger than
// the whole budget by the windows it waits for it between pages. A walk
// the budget pays whole had its requests reserved: it fails rather than
// wait for the budget halfway (its estimate was short; it reserves more
// next time).
func (s *Scheduler) walkContext(cost, effective int) (context.Context, context.CancelFunc) {
	timeout := s.cfg.RefreshTimeout
	if cost > effective {
		timeout += time.Duration((cost-1)/effective) * s.budget.Window()
	}
	ctx, cancel := context.WithTimeout(s.ctx, timeout)
	if cost <= effective {
		ctx = budget.WithoutWaiting(ctx)
	}
	return ctx, cancel
}

// ended is e's state after its walk of q from start to end, which got snap
// (token: its version in the shared store, 0: not shared) or err. It
// learns the walk's cost and e's next due time, and logs the outcome.
// Caller holds mu.
func (s *Scheduler) ended(e *entry, q sources.Query, start, end time.Time, snap sources.Snapshot, token int64, err error) *state {
	old := e.state
	next := &state{good: old.good, attempted: true, ok: err == nil, err: err, attemptEnd: end, duration: max(end.Sub(start), 0), failures: old.failures}
	if err == nil {
		next.good, next.version = snap, token
		e.cost, e.costKnown = max(snap.Meta().Requests, 1), true
		e.nextDue = start.Add(e.interval)
		level.Debug(s.logger).Log("msg", "analytics refreshed", "project", e.project, "source", e.spec.Name, "window", e.label,
			"scope", e.scope, "date_from", q.DateFrom, "date_to", q.DateTo, "requests", snap.Meta().Requests, "duration", human.Duration(end.Sub(start)))
		return next
	}
	next.failures++
	var exhausted *budget.ExhaustedError
	switch exhaustedErr := errors.As(err, &exhausted); {
	case errors.Is(err, apiclient.ErrTooManyPages) || (exhaustedErr && old.capped > 0):
		// Pages that did not end within the cap, or a walk past its cost
		// that the budget could not finish: the plan's cost stands.
		next.capped = old.capped + 1
	case exhaustedErr:
		// The site outgrew the requests reserved for it: reserve more.
		e.cost = min(e.cost*2, max(e.cost+1, s.budget.Limit()))
	}
	lvl := level.Warn(s.logger)
	if s.ctx.Err() != nil {
		lvl = level.Debug(s.logger) // shutting down: not worth a warning
	}
	serving := "no data yet"
	if old.good != nil {
		serving = "last good data from " + old.good.Meta().At.UTC().Format(time.RFC3339)
	}
	lvl.Log("msg", "analytics refresh failed", "project", e.project, "source", e.spec.Name, "window", e.label, "scope", e.scope,
		"date_from", q.DateFrom, "date_to", q.DateTo, "duration", human.Duration(end.Sub(start)), "serving", serving, "err", err)
	return next
}

// endWithoutWalk ends a walk that sent nothing because another replica
// walked (or is walking, until heldUntil) the demand.
func (s *Scheduler) endWithoutWalk(e *entry, heldUntil time.Time, done chan struct{}) {
	s.mu.Lock()
	e.heldUntil = heldUntil
	e.inflight = nil
	e.reserved = 0
	s.running--
	s.mu.Unlock()
	close(done)
	s.wake()
}
