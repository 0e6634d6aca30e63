// Package budget paces the requests one API key sends to a group of
// endpoints that share a quota: the Mintlify analytics endpoints allow 100
// requests per organization per hour, and one admin key is one organization.
// A Budget never lets more than its limit through in any rolling window
// (an hour), whoever asks: scheduled refreshes, retries, a backfill.
package budget

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultWindow is the length of the rolling window the API's quota is
// counted over.
const DefaultWindow = time.Hour

// DefaultLimit leaves 40 of the organization's 100 requests per hour to its
// other analytics tools.
const DefaultLimit = 60

// pauseWithoutRetryAfter is how long nothing is sent after a 429 that did
// not say how long to wait: long enough not to add to someone else's burst,
// short enough to miss little.
const pauseWithoutRetryAfter = time.Minute

// Config configures a Budget.
type Config struct {
	// Limit is how many requests may be sent in any rolling Window (> 0).
	Limit int
	// Window is the rolling window (0 = DefaultWindow). Tests shorten it.
	Window time.Duration
	// Now is the clock (nil = time.Now).
	Now func() time.Time
	// Organization names the budget in its metrics' organization label
	// ("" = "default").
	Organization string
	// LedgerPath, when set, keeps the send times on disk: each is synced
	// there before its request leaves, and New reads them back, so that a
	// restart does not spend the window again.
	LedgerPath string
	// Shared, when set, keeps the ledger outside the process, shared by
	// every replica (a Redis sorted set, RedisLedger): each request is
	// paid there before it leaves, and none leaves while it cannot be
	// asked. Not with LedgerPath.
	Shared SharedLedger
}

// Budget is a rolling-window request budget. It is safe for concurrent use.
type Budget struct {
	window time.Duration
	now    func() time.Time
	org    string

	mu     sync.Mutex
	limit  int
	ledger *ledger
	shared SharedLedger
	// lastSpent is the shared ledger's last answer, shown while it is
	// unreachable.
	lastSpent int
	// sent holds the send times within the last window (and a hundredth:
	// see hold).
	sent Log
	// halvedUntil: after a 429 the budget allows half its limit for one
	// window, because someone else is spending the organization's quota.
	halvedUntil time.Time
	// pausedUntil: after a 429 nothing is sent before this time.
	pausedUntil time.Time
	rejections  int
	// changed is closed and replaced whenever a waiter might proceed.
	changed chan struct{}
}

// New validates cfg and returns an unspent Budget.
func New(cfg Config) (*Budget, error) {
	if cfg.Limit <= 0 {
		return nil, fmt.Errorf("budget must be at least 1 request per window, got %d", cfg.Limit)
	}
	if cfg.Window < 0 {
		return nil, fmt.Errorf("budget window must not be negative, got %s", cfg.Window)
	}
	if cfg.Window == 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Shared != nil && cfg.LedgerPath != "" {
		return nil, errors.New("budget: a ledger file or a shared ledger, not both")
	}
	b := &Budget{limit: cfg.Limit, window: cfg.Window, now: cfg.Now, org: cmp.Or(cfg.Organization, "default"),
		shared: cfg.Shared, changed: make(chan struct{})}
	b.sent.Hold = b.hold()
	if cfg.LedgerPath != "" {
		now := b.now()
		l, sent, err := openLedger(cfg.LedgerPath, now, b.hold())
		if err != nil {
			return nil, err
		}
		b.ledger = l
		b.sent.Seed(now, sent...)
	}
	return b, nil
}

// Close closes the ledger file, if any, waiting at most the ledger's
// write bound for a write under way.
func (b *Budget) Close() error {
	return b.ledger.close() // b.ledger is set once, in New
}

// Organization is the name of the organization whose quota this is.
func (b *Budget) Organization() string { return b.org }

// Limit is the configured number of requests per window.
func (b *Budget) Limit() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.limit
}

// SetLimit changes the limit, for a configuration reload; the requests
// already sent keep counting.
func (b *Budget) SetLimit(n int) error {
	if n <= 0 {
		return fmt.Errorf("budget must be at least 1 request per window, got %d", n)
	}
	b.mu.Lock()
	b.limit = n
	b.mu.Unlock()
	b.Wake()
	return nil
}

// take reserves one request at now. Caller holds mu and saw free(now) > 0,
// and calls persist after releasing mu.
func (b *Budget) take(now time.Time) error {
	if ok, until := b.sent.Take(now, b.effective(now)); !ok {
		return &ExhaustedError{Until: until}
	}
	return nil
}

// persist records a request reserved by take on disk, when a ledger is
// kept: a request whose send time could not be recorded is not sent, and
// its slot is given back. It runs without mu, so a slow disk holds up only
// the request being paid for, not the metrics or the other callers.
func (b *Budget) persist(now time.Time, limit int) error {
	if b.ledger == nil {
		return nil
	}
	times := func() []time.Time {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.sent.Times()
	}
	if err := b.ledger.record(now, times, limit); err != nil {
		b.mu.Lock()
		b.sent.Release(now)
		b.mu.Unlock()
		b.Wake()
		return err
	}
	return nil
}

// Window is the rolling window's length.
func (b *Budget) Window() time.Duration { return b.window }

// ExhaustedError means a request could not be sent before the caller's
// deadline because the budget was spent (or paused after a 429).
type ExhaustedError struct {
	// Until is when the next request may be sent.
	Until time.Time
}

func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("analytics request budget spent until %s; request not sent", e.Until.UTC().Format(time.RFC3339))
}

// effective is the limit in force at now. Caller holds mu.
func (b *Budget) effective(now time.Time) int {
	if now.Before(b.halvedUntil) {
		return max(1, b.limit/2)
	}
	return b.limit
}

// Effective is the limit in force now: the configured one, or half of it
// for a window after the API answered 429.
func (b *Budget) Effective() int { return b.State().Effective }

// Spent is how many requests were sent in the last window.
func (b *Budget) Spent() int { return b.State().Spent }

// Free is how many requests may be sent right now.
func (b *Budget) Free() int {
	if b.shared != nil {
		return b.sharedFree()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.free(b.now())
}

func (b *Budget) free(now time.Time) int {
	if now.Before(b.pausedUntil) {
		return 0
	}
	return max(0, b.effective(now)-b.sent.Len(now))
}

// NextFree is when n more requests may be sent (now if they may already).
// For n larger than the limit in force it answers for the whole limit.
func (b *Budget) NextFree(n int) time.Time {
	if b.shared != nil {
		now, st, _ := b.sharedView(n)
		return now.Add(st.NextFree)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.nextFree(b.now(), n)
}

func (b *Budget) nextFree(now time.Time, n int) time.Time {
	at := b.sent.NextFree(now, b.effective(now), n)
	// A halved limit ends: no need to wait past that for a slot it withholds.
	if now.Before(b.halvedUntil) && at.After(b.halvedUntil) {
		at = later(b.halvedUntil, b.sent.NextFree(now, b.limit, n))
	}
	return later(at, b.pausedUntil)
}

// hold is how long a request counts against the budget after it was sent:
// a window and a hundredth of it, because the API counts a request when it
// arrives, and its clock is not ours, so a slot freed to the second could
// still be taken there.
func (b *Budget) hold() time.Duration { return b.window + b.window/100 }

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// TryTake counts one request as sent now if the budget allows it (and its
// ledger could record it).
func (b *Budget) TryTake() bool {
	if b.shared != nil {
		ctx, cancel := context.WithTimeout(context.Background(), sharedReadTimeout)
		defer cancel()
		_, st, _, err := b.sharedTake(ctx)
		return err == nil && st.Taken
	}
	b.mu.Lock()
	now, limit := b.now(), b.limit
	if b.free(now) <= 0 || b.take(now) != nil {
		b.mu.Unlock()
		return false
	}
	b.mu.Unlock()
	return b.persist(now, limit) == nil
}

type noWaitKey struct{}

// WithoutWaiting marks ctx so that Wait fails at once instead of waiting
// for the budget: for callers that reserved their requests beforehand and
// would rather fail than hold a half-done walk open for an hour.
func WithoutWaiting(ctx context.Context) context.Context {
	return context.WithValue(ctx, noWaitKey{}, true)
}

// Wait blocks until one request may be sent and counts it as sent. It fails
// at once with an *ExhaustedError when that moment lies past ctx's deadline
// or ctx says WithoutWaiting, and with one wrapping ctx's error when ctx
// ends first. With a shared ledger it fails with ErrLedgerUnavailable when
// the ledger cannot be asked.
func (b *Budget) Wait(ctx context.Context) error {
	noWait, _ := ctx.Value(noWaitKey{}).(bool)
	if b.shared != nil {
		return b.waitShared(ctx, noWait)
	}
	for {
		b.mu.Lock()
		now := b.now()
		if b.free(now) > 0 {
			err, limit := b.take(now), b.limit
			b.mu.Unlock()
			if err != nil {
				return err
			}
			return b.persist(now, limit)
		}
		until := b.nextFree(now, 1)
		changed := b.changed
		b.mu.Unlock()
		if err := b.sleep(ctx, noWait, now, until, changed); err != nil {
			return err
		}
	}
}

// sleep waits from now until the budget may have a request free at until,
// or something changed; it fails when the caller would rather not wait
// that long.
func (b *Budget) sleep(ctx context.Context, noWait bool, now, until time.Time, changed chan struct{}) error {
	if dl, ok := ctx.Deadline(); noWait || (ok && dl.Before(until)) {
		return &ExhaustedError{Until: until}
	}
	t := time.NewTimer(max(until.Sub(now), time.Millisecond))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return errors.Join(&ExhaustedError{Until: until}, ctx.Err())
	case <-changed:
	case <-t.C:
	}
	return nil
}

// Rejected records that the API refused a request for its quota (HTTP 429).
// Someone else is spending the organization's budget, so for one window
// this Budget allows half its limit, and it sends nothing before retryAfter
// has passed (a minute when the API did not say).
//
// With a shared ledger every replica pauses and halves too.
func (b *Budget) Rejected(retryAfter time.Duration) {
	b.mu.Lock()
	now := b.now()
	if retryAfter <= 0 {
		retryAfter = pauseWithoutRetryAfter
	}
	if t := now.Add(retryAfter); t.After(b.pausedUntil) {
		b.pausedUntil = t
	}
	b.halvedUntil = now.Add(b.window)
	b.rejections++
	b.mu.Unlock()
	if b.shared != nil {
		b.rejectShared(retryAfter)
	}
}

// PausedUntil is when a pause after a 429 ends (zero when none is on).
func (b *Budget) PausedUntil() time.Time { return b.State().PausedUntil }

// Wake tells waiters to look again, e.g. after the clock of a test moved.
func (b *Budget) Wake() {
	b.mu.Lock()
	defer b.mu.Unlock()
	close(b.changed)
	b.changed = make(chan struct{})
}

var (
	limitDesc = prometheus.NewDesc("mintlify_api_budget_requests_per_hour",
		"Analytics requests the exporter may send per rolling hour (--mintlify.analytics-budget).",
		orgLabel, nil)
	effectiveDesc = prometheus.NewDesc("mintlify_api_budget_effective_requests_per_hour",
		"Analytics requests per rolling hour the exporter allows itself now, halved for an hour after a 429.",
		orgLabel, nil)
	spentDesc = prometheus.NewDesc("mintlify_api_budget_spent_requests",
		"Analytics requests sent in the last rolling hour.",
		orgLabel, nil)
	rejectionsDesc = prometheus.NewDesc("mintlify_api_budget_rejections_total",
		"Analytics requests the API refused with HTTP 429 because the organization's quota was spent.",
		orgLabel, nil)
)

var orgLabel = []string{"organization"}

// Describe implements prometheus.Collector.
func (b *Budget) Describe(ch chan<- *prometheus.Desc) {
	ch <- limitDesc
	ch <- effectiveDesc
	ch <- spentDesc
	ch <- rejectionsDesc
}

// Collect implements prometheus.Collector. The per-hour figures are scaled
// to an hour when a test shortens the window.
func (b *Budget) Collect(ch chan<- prometheus.Metric) {
	st := b.State()
	perHour := float64(time.Hour) / float64(b.window)
	ch <- prometheus.MustNewConstMetric(limitDesc, prometheus.GaugeValue, float64(st.Limit)*perHour, b.org)
	ch <- prometheus.MustNewConstMetric(effectiveDesc, prometheus.GaugeValue, float64(st.Effective)*perHour, b.org)
	ch <- prometheus.MustNewConstMetric(spentDesc, prometheus.GaugeValue, float64(st.Spent), b.org)
	ch <- prometheus.MustNewConstMetric(rejectionsDesc, prometheus.CounterValue, float64(st.Rejections), b.org)
}

// Set is a prometheus.Collector of the budgets list returns, for a process
// whose organizations change with its configuration.
type Set func() []*Budget

// Describe implements prometheus.Collector.
func (s Set) Describe(ch chan<- *prometheus.Desc) { (&Budget{}).Describe(ch) }

// Collect implements prometheus.Collector.
func (s Set) Collect(ch chan<- prometheus.Metric) {
	for _, b := range s() {
		b.Collect(ch)
	}
}

// State is a Budget at one moment, for a status page.
type State struct {
	Limit, Effective, Spent, Rejections int
	Window                              time.Duration
	// HalvedUntil and PausedUntil are zero when no 429 is in force.
	HalvedUntil, PausedUntil time.Time
	// NextFree is when the next request may leave.
	NextFree time.Time
}

// State reads the budget at once.
func (b *Budget) State() State {
	if b.shared != nil {
		now, sh, _ := b.sharedView(1)
		b.mu.Lock()
		defer b.mu.Unlock()
		st := State{Limit: b.limit, Effective: sh.Effective, Spent: sh.Spent, Rejections: b.rejections,
			Window: b.window, NextFree: now.Add(sh.NextFree)}
		if sh.HalvedFor > 0 {
			st.HalvedUntil = now.Add(sh.HalvedFor)
		}
		if sh.PausedFor > 0 {
			st.PausedUntil = now.Add(sh.PausedFor)
		}
		return st
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	st := State{Limit: b.limit, Effective: b.effective(now), Spent: b.sent.Len(now), Rejections: b.rejections,
		Window: b.window, NextFree: b.nextFree(now, 1)}
	if now.Before(b.halvedUntil) {
		st.HalvedUntil = b.halvedUntil
	}
	if now.Before(b.pausedUntil) {
		st.PausedUntil = b.pausedUntil
	}
	return st
}
