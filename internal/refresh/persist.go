// The scheduler's persisted snapshots: a Shared that keeps them across
// restarts (internal/snapstore, the local state directory) is read before
// the plan starts, by the same Sync that serves replicas what another
// published, and forgets the demands the plan no longer has.

package refresh

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
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

// What Shared stores of a walk (in Redis for replicas, in a file of the
// state directory for a restart), written by publish and read once by
// fetch:
//
//	STARTED   8 bytes, big-endian: when the walk started, in Unix nanoseconds
//	DURATION  8 bytes, big-endian: how long it took, in nanoseconds
//	SNAPSHOT  its wire form (sources.EncodeSnapshot), one gzip member
//
// Gzipped at BestSpeed, a snapshot is about 3.5 bytes a series, a sixth of
// its wire form: what Redis holds and sends each replica, and what the
// state directory keeps.
const publishedHead = 16

// maxSnapshotBytes bounds what a shared snapshot unpacks to: a snapshot
// of the exporter's bounded series is a few MB; more is not ours.
const maxSnapshotBytes = 64 << 20

// encodePublished is what publish stores of snap.
func encodePublished(snap sources.Snapshot, start time.Time, took time.Duration) ([]byte, error) {
	wire, err := sources.EncodeSnapshot(snap)
	if err != nil {
		return nil, err
	}
	b := bytes.NewBuffer(make([]byte, 0, publishedHead+len(wire)/4))
	b.Write(binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, uint64(start.UnixNano())), uint64(took)))
	zw, _ := gzip.NewWriterLevel(b, gzip.BestSpeed) // a valid level: no error
	_, _ = zw.Write(wire)                           // into a bytes.Buffer: cannot fail
	_ = zw.Close()
	return b.Bytes(), nil
}

// gzipReaders are reused across snapshots: a restore reads thousands.
var gzipReaders sync.Pool

// decodePublished reads what encodePublished wrote into f.
func decodePublished(data []byte, f *fetched) error {
	if len(data) < publishedHead+4 {
		return errors.New("shared snapshot cut short")
	}
	f.started = time.Unix(0, int64(binary.BigEndian.Uint64(data)))
	f.took = time.Duration(binary.BigEndian.Uint64(data[8:]))
	zr, _ := gzipReaders.Get().(*gzip.Reader)
	var err error
	if zr == nil {
		zr, err = gzip.NewReader(bytes.NewReader(data[publishedHead:]))
	} else {
		err = zr.Reset(bytes.NewReader(data[publishedHead:]))
	}
	if err != nil {
		return fmt.Errorf("shared snapshot: %w", err)
	}
	defer gzipReaders.Put(zr)
	// gzip's trailer holds the size unpacked (modulo 4 GiB): read into a
	// buffer of that size rather than one grown by doubling; not believed
	// past 32 times the packed size (snapshots pack 6 to 1), so that a
	// damaged trailer cannot make a restore allocate the bound for it.
	size := min(int(binary.LittleEndian.Uint32(data[len(data)-4:])), maxSnapshotBytes, 32*len(data))
	wire := bytes.NewBuffer(make([]byte, 0, size+bytes.MinRead))
	if _, err := wire.ReadFrom(io.LimitReader(zr, maxSnapshotBytes+1)); err != nil {
		return fmt.Errorf("shared snapshot: %w", err)
	}
	if wire.Len() > maxSnapshotBytes {
		return fmt.Errorf("shared snapshot unpacks to more than %d bytes", maxSnapshotBytes)
	}
	f.snap, err = sources.DecodeSnapshot(wire.Bytes())
	return err
}
