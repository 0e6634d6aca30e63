package collector

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// EncodedStore keeps what Encoded encoded across restarts: the gzipped
// OpenMetrics chunks of each snapshot, one file a snapshot (the state
// directory's, snapstore.Blobs, which checks each file is whole and is
// the key's). After a restart Prime serves the chunks of every restored
// snapshot from it, as they are, instead of encoding 2 million series
// again before the exporter reports ready.
type EncodedStore interface {
	// Load returns key's data; nil when there is none, or none the store
	// can vouch for (it logs why).
	Load(key string) []byte
	// Save replaces key's data, atomically.
	Save(ctx context.Context, key string, data []byte) error
	// Remove deletes key's data, if any.
	Remove(key string) error
	// Keep deletes the data of every key but keep's.
	Keep(keep []string) error
}

// storedEncoding is the one encoding kept: what Prometheus asks for.
var storedEncoding = Encoding{Format: OpenMetrics, Gzip: true}

// storedFormat is the layout of what the store keeps of a snapshot: one
// line that ties it to one walk's snapshot and this build's encoding, and
// indexes its chunks, then the chunks (one gzip member each).
//
//	FINGERPRINT AT FROM TO REQUESTS TOTALSONLY N NAME LEN ... NAME LEN\n
//	CHUNKS
//
// A build whose encoding differs (another header, label order, number
// format, escaping: another fingerprint) ignores the file and encodes the
// snapshot itself, as it does one of another walk.
const storedFormat = "mintlify_exporter encoded snapshot 2"

// storedFingerprint digests how this build encodes every family: its
// OpenMetrics header and sample lines for probe values. Gzip's level is
// not in it: any gzip member is served as it is.
var storedFingerprint = func() string {
	h := sha256.New()
	h.Write([]byte(storedFormat))
	probes := []string{"a", "b\\\"c\n", "ü/path?q=1", ""}
	for _, f := range allFamilies {
		header, err := Header(OpenMetrics, f.Name, f.Help, false)
		if err != nil {
			panic(err)
		}
		fmt.Fprintf(h, "\x00%s\x00%s\x00", f.Name, header)
		g := mustGauge(f.Name, f.Labels)
		lv := make([]string, len(f.Labels))
		for i := range lv {
			lv[i] = probes[i%len(probes)]
		}
		for _, v := range []float64{0, 1, 0.1, 12345678.9, -3} {
			h.Write(g.Append(nil, OpenMetrics, lv, v))
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}()

// storedKey is the key of the snapshots of k in the store.
func storedKey(k viewKey) string {
	return strconv.Quote(k.project + "\x00" + k.source + "\x00" + k.window + "\x00" + k.scope)
}

// storedWalk begins the line that ties a file to this build and to one
// walk's snapshot (its Meta).
func storedWalk(s sources.Snapshot) string {
	m := s.Meta()
	return fmt.Sprintf("%s %d %q %q %d %t ", storedFingerprint, m.At.UnixNano(), m.DateFrom, m.DateTo, m.Requests, m.TotalsOnly)
}

// marshalStored is v's file, its chunks in storedEncoding.
func marshalStored(v *encodedView, chunks [][]byte) []byte {
	line := fmt.Appendf(nil, "%s%d", storedWalk(v.snap), len(chunks))
	for i, c := range chunks {
		line = fmt.Appendf(line, " %s %d", allFamilies[v.fams[i]].Name, len(c))
	}
	return bytes.Join(append([][]byte{append(line, '\n')}, chunks...), nil)
}

// unmarshalStored returns the chunks of v in data, or nil unless data
// holds them: of v's walk, this build's encoding, v's families in order.
func unmarshalStored(data []byte, v *encodedView) [][]byte {
	line, rest, _ := bytes.Cut(data, []byte{'\n'})
	index, ok := bytes.CutPrefix(line, []byte(storedWalk(v.snap)))
	fields := strings.Fields(string(index))
	if !ok || len(fields) != 1+2*len(v.fams) || fields[0] != strconv.Itoa(len(v.fams)) {
		return nil
	}
	chunks := make([][]byte, len(v.fams))
	for i, fi := range v.fams {
		n, err := strconv.Atoi(fields[2+2*i])
		if fields[1+2*i] != allFamilies[fi].Name || err != nil || n < 0 || n > len(rest) {
			return nil
		}
		if n > 0 {
			chunks[i] = rest[:n:n]
		}
		rest = rest[n:]
	}
	if len(rest) != 0 {
		return nil
	}
	return chunks
}

// restoreStored serves the chunks the store holds for the views of live
// not yet encoded in storedEncoding, read on every core; the others are
// left to encode. Caller holds mu.
func (e *Encoded) restoreStored(live []liveView) {
	i := storedEncoding.Index()
	var todo []liveView
	for _, l := range live {
		if !l.view.enc[i].built.Load() {
			todo = append(todo, l)
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(todo)) {
		wg.Go(func() {
			for j := int(next.Add(1) - 1); j < len(todo); j = int(next.Add(1) - 1) {
				e.restoreOne(todo[j].view)
			}
		})
	}
	wg.Wait()
}

func (e *Encoded) restoreOne(v *encodedView) {
	chunks := unmarshalStored(e.store.Load(v.name), v)
	if chunks == nil {
		return
	}
	c := &v.enc[storedEncoding.Index()]
	c.once.Do(func() {
		c.chunks = chunks
		c.built.Store(true)
	})
	v.stored = true
}

// queueStored queues the files of the views of st encoded at
// chunkGzipLevel in storedEncoding and not yet stored: Run's writer
// stores them, off the scrape path. Caller holds mu.
func (e *Encoded) queueStored(st *encodedState) {
	i := storedEncoding.Index()
	var jobs map[string]*encodedView
	for _, l := range st.live {
		v := l.view
		c := &v.enc[i]
		if v.stored || !c.built.Load() || c.level != chunkGzipLevel {
			continue
		}
		v.stored = true
		if jobs == nil {
			jobs = map[string]*encodedView{}
		}
		jobs[v.name] = v
	}
	if len(jobs) == 0 {
		return
	}
	e.pendingMu.Lock()
	for name, v := range jobs {
		e.pending[name] = v
	}
	e.pendingMu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// forgetStored queues the deletion of name's file (its snapshot is no
// longer served). Caller holds mu.
func (e *Encoded) forgetStored(name string) {
	e.pendingMu.Lock()
	e.pending[name] = nil
	e.pendingMu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// writeStored stores what queueStored queued until ctx ends; first it
// deletes the files of snapshots not served (keep: those of the entries).
func (e *Encoded) writeStored(ctx context.Context, keep []string) {
	if err := e.store.Keep(keep); err != nil {
		level.Warn(e.logger).Log("msg", "encoded analytics snapshots of former snapshots not deleted", "err", err)
	}
	warned := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.wake:
		}
		e.pendingMu.Lock()
		jobs := e.pending
		e.pending = map[string]*encodedView{}
		e.pendingMu.Unlock()
		for name, v := range jobs {
			var err error
			if v == nil {
				err = e.store.Remove(name)
			} else {
				wctx, cancel := context.WithTimeout(ctx, time.Minute)
				err = e.store.Save(wctx, name, marshalStored(v, v.enc[storedEncoding.Index()].chunks))
				cancel()
			}
			if err != nil && !warned && ctx.Err() == nil {
				warned = true // once: a full or read-only disk would log every walk
				level.Warn(e.logger).Log("msg", "encoded analytics snapshot not kept: a restart encodes it again", "err", err)
			}
		}
	}
}

// SetStore makes e keep its encoded snapshots in store, and read them
// there: call it before Prime and Run.
func (e *Encoded) SetStore(store EncodedStore) {
	e.store = store
}
