package collector

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
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
// directory's, snapstore.Blobs). After a restart Prime serves the chunks
// of every restored snapshot from it, as they are, instead of encoding 2
// million series again before the exporter reports ready.
type EncodedStore interface {
	// Load returns name's data; an error wrapping fs.ErrNotExist when
	// there is none.
	Load(name string) ([]byte, error)
	// Save replaces name's data, atomically.
	Save(ctx context.Context, name string, data []byte) error
	// Remove deletes name's data, if any.
	Remove(name string) error
	// Keep deletes the data of every name but keep's.
	Keep(keep []string) error
}

// storedEncoding is the one encoding kept: what Prometheus asks for.
var storedEncoding = Encoding{Format: OpenMetrics, Gzip: true}

// storedFormat opens every stored file. Its fingerprint line tells
// whether this build encodes as the one that wrote it: a build whose
// encoding differs (another header, label order, number format, escaping)
// ignores the file and encodes the snapshot itself.
//
//	mintlify_exporter encoded snapshot 1\n
//	FINGERPRINT\n                        (hex: storedFingerprint)
//	KEY\n                                (quoted: project, source, window, scope)
//	AT FROM TO REQUESTS TOTALSONLY\n     (the snapshot's Meta: which walk)
//	CRC32 N NAME LEN ... NAME LEN\n      (of the body; per chunk its family and length)
//	BODY                                 (the chunks, one gzip member each)
const storedFormat = "mintlify_exporter encoded snapshot 1"

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

// storedName is the file of the snapshots of k.
func storedName(k viewKey) string {
	sum := sha256.Sum256([]byte(storedKey(k)))
	return hex.EncodeToString(sum[:16]) + ".enc"
}

func storedKey(k viewKey) string {
	return strconv.Quote(k.project + "\x00" + k.source + "\x00" + k.window + "\x00" + k.scope)
}

// storedMeta is the line that ties a file to one walk's snapshot.
func storedMeta(s sources.Snapshot) string {
	m := s.Meta()
	return fmt.Sprintf("%d %q %q %d %t", m.At.UnixNano(), m.DateFrom, m.DateTo, m.Requests, m.TotalsOnly)
}

// marshalStored is v's file, its chunks in storedEncoding.
func marshalStored(k viewKey, v *encodedView, chunks [][]byte) []byte {
	var body bytes.Buffer
	var index strings.Builder
	for i, c := range chunks {
		fmt.Fprintf(&index, " %s %d", allFamilies[v.fams[i]].Name, len(c))
		body.Write(c)
	}
	var b bytes.Buffer
	b.Grow(body.Len() + 512)
	fmt.Fprintf(&b, "%s\n%s\n%s\n%s\n%08x %d%s\n", storedFormat, storedFingerprint, storedKey(k), storedMeta(v.snap),
		crc32.ChecksumIEEE(body.Bytes()), len(chunks), index.String())
	b.Write(body.Bytes())
	return b.Bytes()
}

// errStale: the file is of another walk, or of another build's encoding.
var errStale = errors.New("of another snapshot or encoding")

// unmarshalStored returns the chunks of v in data, when data holds them:
// v's key and walk, this build's encoding, v's families in order, and a
// body whose checksum matches.
func unmarshalStored(data []byte, k viewKey, v *encodedView) ([][]byte, error) {
	var lines [5]string
	rest := data
	for i := range lines {
		line, after, ok := bytes.Cut(rest, []byte{'\n'})
		if !ok {
			return nil, errors.New("header cut short")
		}
		lines[i], rest = string(line), after
	}
	if lines[0] != storedFormat || lines[1] != storedFingerprint || lines[2] != storedKey(k) || lines[3] != storedMeta(v.snap) {
		return nil, errStale
	}
	fields := strings.Fields(lines[4])
	if len(fields) != 2+2*len(v.fams) || fields[1] != strconv.Itoa(len(v.fams)) {
		return nil, errStale
	}
	sum, err := strconv.ParseUint(fields[0], 16, 32)
	if err != nil {
		return nil, fmt.Errorf("checksum %q", fields[0])
	}
	if crc32.ChecksumIEEE(rest) != uint32(sum) {
		return nil, errors.New("checksum does not match: damaged")
	}
	chunks := make([][]byte, len(v.fams))
	for i, fi := range v.fams {
		name, size := fields[2+2*i], fields[3+2*i]
		n, err := strconv.Atoi(size)
		if name != allFamilies[fi].Name || err != nil || n < 0 || n > len(rest) {
			return nil, errStale
		}
		if n > 0 {
			chunks[i] = rest[:n:n]
		}
		rest = rest[n:]
	}
	if len(rest) != 0 {
		return nil, errors.New("trailing bytes")
	}
	return chunks, nil
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
	data, err := e.store.Load(v.name)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	var chunks [][]byte
	if err == nil {
		chunks, err = unmarshalStored(data, v.key, v)
	}
	if err != nil {
		if !errors.Is(err, errStale) {
			level.Warn(e.logger).Log("msg", "encoded analytics snapshot not read: encoded again", "project", v.key.project, "source", v.key.source, "window", v.key.window, "err", err)
		}
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
				err = e.store.Save(wctx, name, marshalStored(v.key, v, v.enc[storedEncoding.Index()].chunks))
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
