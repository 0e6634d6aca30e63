// The scheduler's persisted snapshots: a Shared that keeps them across
// restarts (internal/snapstore, the local state directory) is read before
// the plan starts, by the same Sync that serves replicas what another
// published, and forgets the demands the plan no longer has.

package refresh

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log/level"
)

// Forgetter is a Shared whose snapshots outlive the demands they are of
// unless told: the local state directory (Redis expires its own). Forget
// deletes every snapshot but keep's (keys as Shared knows them).
type Forgetter interface {
	Forget(ctx context.Context, keep []string) error
}

// forget tells a Forgetter which demands the plan has: those of a
// configuration that no longer has them, or walks them otherwise (another
// time zone, path policy or setting: another key), are deleted.
func (s *Scheduler) forget() {
	f, ok := s.cfg.Shared.(Forgetter)
	if !ok {
		return
	}
	s.mu.Lock()
	keep := make([]string, 0, len(s.entries))
	for _, e := range s.entries {
		keep = append(keep, sharedKey(e))
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
	defer cancel()
	if err := f.Forget(ctx, keep); err != nil {
		level.Warn(s.logger).Log("msg", "analytics snapshots of former demands not deleted", "err", err)
	}
}

// Restore serves the snapshots a Forgetter kept (the local state
// directory), with their refresh times and the plan's next walks from
// them, before Run: the caller restores before the exporter reports ready,
// so that its first scrape has every series back. Replicas read Redis in
// Run instead, where an unreachable Redis cannot hold the start.
//
// Decoding is most of a restore (about 2 s of CPU for 2 million series):
// the snapshots are read and decoded on every core, then installed at
// once, and the plan is made once rather than after each.
func (s *Scheduler) Restore(ctx context.Context) {
	if _, ok := s.cfg.Shared.(Forgetter); !ok {
		return
	}
	s.mu.Lock()
	entries := slices.Clone(s.entries)
	keys := make([]string, len(entries))
	have := make([]int64, len(entries))
	for i, e := range entries {
		keys[i], have[i] = sharedKey(e), e.state.version
	}
	s.mu.Unlock()
	versions, err := s.cfg.Shared.Versions(ctx, keys)
	if err != nil {
		return
	}
	got := make([]fetched, len(entries))
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(entries); i = int(next.Add(1) - 1) {
				if versions[i] != 0 && versions[i] != have[i] {
					got[i] = s.fetch(ctx, keys[i], have[i])
				}
			}
		})
	}
	wg.Wait()
	replan := false
	s.mu.Lock()
	for i, e := range entries {
		if got[i].snap != nil && got[i].err == nil {
			replan = s.install(e, &got[i], have[i]) || replan
		}
	}
	if replan {
		s.replan()
	}
	s.mu.Unlock()
	for i, e := range entries {
		if got[i].err != nil {
			s.skipUnreadable(e, keys[i], got[i].version, have[i], got[i].err)
		}
	}
}

// SplitFetcher is a Shared that keeps a snapshot apart from the rest of
// what publish wrote (internal/snapstore): FetchSplit returns that rest
// (head, as SplitPublished) and the snapshot, so that a restore decodes no
// base64; head nil means body is the data as published.
type SplitFetcher interface {
	FetchSplit(ctx context.Context, key string) (head, body []byte, version int64, ok bool, err error)
}

// Published fields of what publish wrote, as json.Marshal writes them.
const (
	publishedStarted  = `{"started":"`
	publishedDuration = `","duration_ns":`
	publishedSnapshot = `,"snapshot":"`
	publishedEnd      = `"}`
)

// SplitPublished splits what publish wrote into the JSON before the
// snapshot (head) and the snapshot, out of its base64, for a store that
// keeps the snapshot as it is (internal/snapstore: a quarter smaller, and
// less to unpack). ok is false for anything but what json.Marshal wrote.
// JoinPublished(head, snapshot) gives data back.
func SplitPublished(data []byte) (head, snapshot []byte, ok bool) {
	rest, ok := bytes.CutPrefix(data, []byte(publishedStarted))
	_, rest, ok2 := bytes.Cut(rest, []byte(publishedDuration))
	_, rest, ok3 := bytes.Cut(rest, []byte(publishedSnapshot))
	b64, ok4 := bytes.CutSuffix(rest, []byte(publishedEnd))
	if !ok || !ok2 || !ok3 || !ok4 || bytes.ContainsAny(b64, `"\`) || bytes.IndexByte(data, '\n') >= 0 {
		return nil, nil, false
	}
	snapshot = make([]byte, base64.StdEncoding.DecodedLen(len(b64)))
	n, err := base64.StdEncoding.Decode(snapshot, b64)
	if err != nil {
		return nil, nil, false
	}
	if !bytes.Equal(JoinPublished(data[:len(data)-len(rest)], snapshot[:n]), data) {
		return nil, nil, false // not base64 as json.Marshal writes it
	}
	return data[:len(data)-len(rest)], snapshot[:n], true
}

// JoinPublished is what publish wrote, from SplitPublished's parts.
func JoinPublished(head, snapshot []byte) []byte {
	out := make([]byte, 0, len(head)+base64.StdEncoding.EncodedLen(len(snapshot))+len(publishedEnd))
	out = append(out, head...)
	out = base64.StdEncoding.AppendEncode(out, snapshot)
	return append(out, publishedEnd...)
}

// decodePublished reads what publish wrote. The snapshot is base64 in the
// JSON (a []byte field): encoding/json scans all of it twice and decodes
// it byte by byte, 40% of a restore's CPU. What json.Marshal writes of a
// published, {"started":"…","duration_ns":N,"snapshot":"…"}, is read
// directly (base64 has no character JSON escapes); anything else, through
// encoding/json.
func decodePublished(data []byte, p *published) error {
	rest, ok := bytes.CutPrefix(data, []byte(publishedStarted))
	at, rest, ok2 := bytes.Cut(rest, []byte(publishedDuration))
	ns, rest, ok3 := bytes.Cut(rest, []byte(publishedSnapshot))
	b64, ok4 := bytes.CutSuffix(rest, []byte(publishedEnd))
	if !ok || !ok2 || !ok3 || !ok4 || bytes.ContainsAny(b64, `"\`) {
		return json.Unmarshal(data, p)
	}
	var q published
	if err := q.Started.UnmarshalText(at); err != nil {
		return json.Unmarshal(data, p)
	}
	d, err := strconv.ParseInt(string(ns), 10, 64)
	if err != nil {
		return json.Unmarshal(data, p)
	}
	q.Duration = d
	q.Snapshot = make([]byte, base64.StdEncoding.DecodedLen(len(b64)))
	n, err := base64.StdEncoding.Decode(q.Snapshot, b64)
	if err != nil {
		return fmt.Errorf("published snapshot: %w", err)
	}
	q.Snapshot = q.Snapshot[:n]
	*p = q
	return nil
}
