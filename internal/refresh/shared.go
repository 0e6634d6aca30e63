// The scheduler's replicas: sharing walks and their snapshots with the other
// replicas of the exporter through Shared (RedisWalks, redis.go).

package refresh

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// Shared is how replicas of the exporter share one plan: each demand is
// walked by one replica at a time, under a lease, and every replica serves
// the snapshot it published. RedisWalks (redis.go) implements it on Redis.
//
// Every replica keeps planning all demands, on the same budget: when a
// demand falls due, a replica first looks for a newer snapshot another
// published (and serves it, without a request), then claims the walk. The
// loser of a claim waits for the winner's snapshot; if the winner dies, its
// lease expires and the next claim succeeds.
type Shared interface {
	// Claim takes the right to walk key. The returned context ends when
	// that right is lost (the lease could not be renewed in time), and
	// release gives it back early. ErrHeld means another replica holds it.
	Claim(ctx context.Context, key string) (walk context.Context, token int64, release func(), err error)
	// Publish stores data as key's snapshot at version (the claim's
	// token), unless a newer version is stored, for ttl.
	Publish(ctx context.Context, key string, version int64, data []byte, ttl time.Duration) error
	// Versions are the stored versions of keys, 0 where there is none.
	Versions(ctx context.Context, keys []string) ([]int64, error)
	// Fetch reads key's stored snapshot; ok is false when there is none.
	Fetch(ctx context.Context, key string) (data []byte, version int64, ok bool, err error)
}

// ErrHeld means another replica holds the claim on a demand.
var ErrHeld = errors.New("another replica is walking it")

// ErrUnreadableSnapshot means a shared snapshot is not one of ours (too
// large, a version of another program): Fetch's error wraps it, with the
// version when there is one, and that version is not fetched again.
var ErrUnreadableSnapshot = errors.New("unreadable shared snapshot")

// DefaultSyncInterval is how often a replica reads which snapshots other
// replicas published: the most a replica's values lag the walker's.
const DefaultSyncInterval = 5 * time.Second

// heldWait is how long a replica that lost a claim waits before it looks
// again (the winner's snapshot usually arrives by the next sync).
const heldWait = 15 * time.Second

// sharedKey is e's name in the shared store: the demand and a digest of how
// it is walked, so that replicas that walk it differently (a rolling
// update of the configuration) never serve each other's snapshots.
func sharedKey(e *entry) string {
	h := fnv.New64a()
	p := e.proj
	fmt.Fprintf(h, "%s|%d|%s|%s", p.Loc().String(), e.window.Days, p.Paths.Key(), e.spec.Name)
	for _, k := range slices.Sorted(maps.Keys(e.spec.Settings)) {
		fmt.Fprintf(h, "|%s=%d", k, e.spec.Settings[k])
	}
	return e.project + "/" + e.spec.Name + "/" + e.label + "/" + e.scope + "/" + strconv.FormatUint(h.Sum64(), 36)
}

// claim is the shared part of a walk that is due: it serves a snapshot
// another replica published meanwhile, or claims the walk. walk is true
// when the caller must walk, under walkCtx and token, and call release
// after publishing.
func (s *Scheduler) claim(ctx context.Context, e *entry, key string) (walkCtx context.Context, token int64, release func(), walk bool, err error) {
	if s.adoptNewer(ctx, e, key) && !s.dueNow(e) {
		return nil, 0, nil, false, nil
	}
	walkCtx, token, release, err = s.cfg.Shared.Claim(ctx, key)
	if err != nil {
		return nil, 0, nil, false, err
	}
	// A walk that ended between the look above and the claim published
	// before it gave the claim up: look again, now that nobody else walks.
	if s.adoptNewer(ctx, e, key) && !s.dueNow(e) {
		release()
		return nil, 0, nil, false, nil
	}
	return walkCtx, token, release, true, nil
}

// adoptNewer serves key's shared snapshot when it is another than e's and
// later; it reports whether it did.
func (s *Scheduler) adoptNewer(ctx context.Context, e *entry, key string) bool {
	s.mu.Lock()
	have, seen := e.state.version, e.seen
	s.mu.Unlock()
	v, err := s.cfg.Shared.Versions(ctx, []string{key})
	return err == nil && v[0] != 0 && v[0] != have && v[0] != seen && s.adopt(ctx, e, key, have)
}

// dueNow reports whether e is due at once.
func (s *Scheduler) dueNow(e *entry) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	due, _ := s.due(e, s.now())
	return due
}

// publishTimeout bounds the store of one walk's snapshot.
const publishTimeout = 10 * time.Second

// publish shares e's snapshot of a walk that started at start.
func (s *Scheduler) publish(e *entry, key string, token int64, snap sources.Snapshot, start time.Time, took time.Duration) {
	data, err := encodePublished(snap, start, took)
	if err == nil {
		s.mu.Lock()
		// Kept past the plan's next walk and a budget window, so that a
		// replica starting late, or taking over, still finds it.
		ttl := max(2*e.interval+s.budget.Window(), 24*time.Hour)
		s.mu.Unlock()
		// Not cancelled by shutdown: the walk is paid for, and a snapshot
		// stored as the exporter stops is one a restart need not walk
		// again. Bounded all the same, so that a stop never waits long
		// on a frozen disk or an unreachable Redis.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), publishTimeout)
		err = s.cfg.Shared.Publish(ctx, key, token, data, ttl)
		cancel()
	}
	if err != nil {
		level.Warn(s.logger).Log("msg", "analytics snapshot not stored (in Redis for the other replicas, or in the state directory for a restart): they, or the restarted exporter, walk it again when it is due", "project", e.project,
			"source", e.spec.Name, "window", e.label, "scope", e.scope, "err", err)
	}
}

// Sync serves the snapshots other replicas published since the last look:
// Run calls it every SyncInterval; tests call it by hand.
func (s *Scheduler) Sync(ctx context.Context) {
	if s.cfg.Shared == nil {
		return
	}
	s.mu.Lock()
	entries := make([]*entry, 0, len(s.entries))
	keys := make([]string, 0, len(s.entries))
	have := make([]int64, 0, len(s.entries))
	seen := make([]int64, 0, len(s.entries))
	for _, e := range s.entries {
		if e.inflight == nil {
			entries, keys = append(entries, e), append(keys, sharedKey(e))
			have, seen = append(have, e.state.version), append(seen, e.seen)
		}
	}
	s.mu.Unlock()
	if len(keys) == 0 {
		return
	}
	versions, err := s.cfg.Shared.Versions(ctx, keys)
	if err != nil {
		return // the cluster client logs and counts Redis's absence
	}
	adopted := false
	for i, v := range versions {
		if v != 0 && v != have[i] && v != seen[i] && s.adopt(ctx, entries[i], keys[i], have[i]) {
			adopted = true
		}
	}
	if adopted {
		s.wake()
	}
}

// adopt fetches key's snapshot and makes it e's, when it is another than
// the version e had (have), from a later walk than e's snapshot, and e was
// not walked meanwhile. It reports whether it did.
//
// Versions are only compared for equality: the store accepts a version
// only above the stored one, so another version there is the latest
// published; but Redis restarted without its data counts tokens from 1
// again, and the snapshot's own time tells which walk came last.
func (s *Scheduler) adopt(ctx context.Context, e *entry, key string, have int64) bool {
	f := s.fetch(ctx, key, have)
	if f.err != nil {
		s.skipUnreadable(e, key, f.version, have, f.err)
		return false
	}
	if f.snap == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.install(e, &f, have) {
		s.replan()
	}
	return f.installed
}

// fetched is a shared snapshot read and decoded: snap nil and err nil
// when there is none, or it is the version the entry has.
type fetched struct {
	snap      sources.Snapshot
	started   time.Time     // of its walk
	took      time.Duration // by its walk
	version   int64
	err       error // unreadable: the version is skipped
	installed bool  // set by install
}

// fetch reads and decodes key's shared snapshot unless it is version have.
func (s *Scheduler) fetch(ctx context.Context, key string, have int64) (f fetched) {
	data, version, ok, err := s.cfg.Shared.Fetch(ctx, key)
	f.version = version
	if errors.Is(err, ErrUnreadableSnapshot) {
		f.err = err
		return f
	}
	if err != nil || !ok || version == have {
		return f
	}
	f.err = decodePublished(data, &f)
	return f
}

// install makes f's snapshot e's, when e still has version have and f's
// snapshot is from a later walk than e's, and reports whether the plan
// must be made again (the caller does, once for many installs). Caller
// holds mu.
func (s *Scheduler) install(e *entry, f *fetched, have int64) (replan bool) {
	snap, version := f.snap, f.version
	if e.state.version != have || s.closed {
		return false // walked or adopted meanwhile
	}
	if g := e.state.good; g != nil && !snap.Meta().At.After(g.Meta().At) {
		e.seen = version // ours is as new (its publish failed, say): not fetched again
		return false
	}
	old := e.state
	e.state = &state{good: snap, attempted: true, ok: true, attemptEnd: snap.Meta().At, duration: f.took,
		failures: old.failures, version: version}
	e.heldUntil = time.Time{}
	if !e.final {
		e.nextDue = f.started.Add(e.interval)
	}
	f.installed = true
	cost := max(snap.Meta().Requests, 1)
	if replan := !old.attempted || cost != e.cost; replan {
		e.cost, e.costKnown = cost, true
		return true
	}
	return false
}

// skipUnreadable remembers a version of key that could not be read, so
// that it is not fetched again at every sync (a newer version is), and
// logs it once.
func (s *Scheduler) skipUnreadable(e *entry, key string, version, have int64, err error) {
	level.Warn(s.logger).Log("msg", "unreadable stored analytics snapshot (published by another replica, or kept in the state directory): ignored until a newer one is stored; its demand is walked when due", "key", key, "version", version, "err", err)
	if version == 0 {
		return
	}
	s.mu.Lock()
	if e.state.version == have {
		e.seen = version
	}
	s.mu.Unlock()
}
