package collector

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// chunkGzipLevel compresses a snapshot's series once per snapshot, not per
// scrape, so the default level: a smaller cache and answer for a one-time
// cost.
const chunkGzipLevel = gzip.DefaultCompression

// primeGzipLevel compresses what Prime encodes: every snapshot a restart
// restored, at once, before the exporter reports ready.
const primeGzipLevel = gzip.BestSpeed

// statusGzipLevel compresses the status series, encoded again whenever one
// view's status changes (every walk's end): the fastest level.
const statusGzipLevel = gzip.BestSpeed

// DefaultEncodeInterval is how often Run reads the views to encode what
// changed: the most a new snapshot waits before scrapes serve it.
const DefaultEncodeInterval = 500 * time.Millisecond

// Encoded serves the status series and the data families of a ViewSource's
// servable snapshots for collector, as bytes encoded once per
// change rather than once per scrape.
//
// Gzipped encodings are kept: each snapshot (project × window) is encoded
// into one gzip member per family, when it is published (Run reads the
// views every DefaultEncodeInterval), in OpenMetrics (what Prometheus asks
// for) and in text once a scrape has asked for it; the members are dropped
// with the snapshot (replaced by a newer walk, stale, of past dates). The
// status series are one member per family, encoded again when a view's
// status changes. A scrape writes these bytes as they are.
//
// Plain encodings are 15 times the size of gzipped ones (200 MB at 2
// million series): they are not kept, but encoded per scrape into a small
// buffer as they are written, so that memory does not grow with the size
// of the answer or the number of scrapes in flight.
//
// Register neither NewAnalytics nor its families next to it: every series
// must reach the exposition once.
type Encoded struct {
	src      ViewSource
	gatherer prometheus.Gatherer // status and data as metrics, for protobuf
	// headers[encoding][family] are the HELP and TYPE lines of the data
	// families; statusHeaders those of statusFamilies.
	headers, statusHeaders [NumEncodings][][]byte
	gauges, statusGauges   []*Gauge // per family
	// wanted are the gzipped encodings that Run encodes ahead of scrapes.
	wanted [NumEncodings]atomic.Bool
	// running is set while Run keeps cur current: scrapes then serve cur
	// as it is; without Run each scrape reads the views.
	running atomic.Bool

	mu      sync.Mutex // serialises updates of entries and cur
	entries map[viewKey]*encodedView
	cur     atomic.Pointer[encodedState]
	// published are the views of the last update, stored once scrapes
	// serve what they hold: what the status page shows, so that a row
	// never reads "ok" before /metrics serves the walk's series.
	published atomic.Pointer[[]sources.View]

	logger log.Logger
	// store keeps the encoded snapshots across restarts (nil: not kept);
	// pending are the files Run's writer is to write (nil: delete), wake
	// tells it.
	store     EncodedStore
	pendingMu sync.Mutex
	pending   map[string]*encodedView
	wake      chan struct{}
}

// Published returns the views as of the last update: every snapshot among
// them is what scrapes serve (nil before the first update).
func (e *Encoded) Published() []sources.View {
	if v := e.published.Load(); v != nil {
		return *v
	}
	return nil
}

type viewKey struct{ project, source, window, scope string }

func (k viewKey) with(scope string) viewKey { k.scope = scope; return k }

// encodedView is the cache of one served snapshot.
type encodedView struct {
	key             viewKey
	name            string // its key in the store: storedKey(key)
	project, window string
	snap            sources.Snapshot
	// fams are the indexes (into families) of its source's families.
	fams []int
	enc  [NumEncodings]encodedChunks
	// stored: its storedEncoding is in the store, read from there or
	// queued to be written (guarded by mu).
	stored bool
}

// encodedChunks is one encoding of a snapshot or of the status series:
// chunks[i] of its i-th family.
type encodedChunks struct {
	once   sync.Once
	built  atomic.Bool // set once chunks is written, for Bytes
	chunks [][]byte
	level  int // gzip's, set with chunks when encoded here
}

func (c *encodedChunks) get(encode func() [][]byte) [][]byte {
	c.once.Do(func() {
		c.chunks = encode()
		c.built.Store(true)
	})
	return c.chunks
}

// encodedState is what scrapes serve until the views change: the served
// snapshots and the status of every view, with the status series encoded.
type encodedState struct {
	exports []export
	live    []liveView
	rows    []statusRow
	status  [NumEncodings]encodedChunks // gzipped encodings only
}

// liveView is a cached snapshot and the families exported from it now.
type liveView struct {
	view *encodedView
	fams []int
}

// NewEncoded returns an empty cache of src's snapshots. Run keeps it
// current off the scrape path.
func NewEncoded(src ViewSource, logger log.Logger) *Encoded {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newAnalytics(src, logger, true, true))
	if logger == nil {
		logger = log.NewNopLogger()
	}
	e := &Encoded{src: src, gatherer: reg, entries: map[viewKey]*encodedView{}, logger: logger,
		pending: map[string]*encodedView{}, wake: make(chan struct{}, 1)}
	for _, f := range allFamilies {
		e.gauges = append(e.gauges, mustGauge(f.Name, f.Labels))
	}
	for _, f := range statusFamilies {
		e.statusGauges = append(e.statusGauges, mustGauge(f.name, f.labels))
	}
	for _, enc := range Encodings {
		i := enc.Index()
		for _, f := range allFamilies {
			e.headers[i] = append(e.headers[i], mustHeader(enc, f.Name, f.Help, false, chunkGzipLevel))
		}
		for _, f := range statusFamilies {
			e.statusHeaders[i] = append(e.statusHeaders[i], mustHeader(enc, f.name, f.help, f.counter, statusGzipLevel))
		}
	}
	// What Prometheus asks for is encoded before the first scrape.
	e.wanted[Encoding{Format: OpenMetrics, Gzip: true}.Index()].Store(true)
	return e
}

func mustGauge(name string, labels []string) *Gauge {
	g, err := NewGauge(name, labels)
	if err != nil {
		panic(err)
	}
	return g
}

func mustHeader(enc Encoding, name, help string, counter bool, level int) []byte {
	h, err := Header(enc.Format, name, help, counter)
	if err != nil {
		panic(fmt.Sprintf("collector: header of %s: %v", name, err))
	}
	if enc.Gzip {
		h = Gzip(h, level)
	}
	return h
}

// Run encodes what changed in the views every interval (and once at
// once) until ctx ends, so that scrapes write bytes encoded beforehand:
// a new snapshot is served at most interval after it was published.
//
// With a store (SetStore), Run also keeps there, from another goroutine,
// the gzipped OpenMetrics chunks of each snapshot it encoded: what the
// next start's Prime serves as it is. Scrapes never write.
func (e *Encoded) Run(ctx context.Context, interval time.Duration) {
	e.update()
	e.running.Store(true)
	defer e.running.Store(false)
	var wg sync.WaitGroup
	defer wg.Wait()
	if e.store != nil {
		e.mu.Lock()
		keep := make([]string, 0, len(e.entries))
		for _, v := range e.entries {
			keep = append(keep, v.name)
		}
		e.queueStored(e.cur.Load())
		e.mu.Unlock()
		wg.Go(func() { e.writeStored(ctx, keep) })
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			e.update()
			if e.store != nil {
				e.mu.Lock()
				e.queueStored(e.cur.Load())
				e.mu.Unlock()
			}
		}
	}
}

// Prime encodes what the views hold now, as Run's first pass does. The
// exporter calls it before it listens: the snapshots a restart restored
// from the state directory (2 million series: seconds of gzip) are then
// encoded before it reports ready, and the first scrape after ready writes
// bytes like any other rather than waiting for them.
//
// With a store (SetStore), the snapshots whose chunks it holds (those a
// previous run encoded, of the same walk, by a build that encodes alike)
// are served from there as they are, and only the others are encoded.
// Those are encoded at primeGzipLevel: a sixth larger than
// chunkGzipLevel's but 40% less CPU to ready at 1.9 million series
// (BENCHMARKS.md), until each one's next walk encodes it at chunkGzipLevel.
func (e *Encoded) Prime() { e.updateAt(primeGzipLevel, true) }

// Gatherer implements Source: status and data as metrics.
func (e *Encoded) Gatherer() prometheus.Gatherer { return e.gatherer }

// Answer implements Source: the status families and every
// source's data families in encoding enc, the data one chunk per servable
// snapshot, in the order of the views.
func (e *Encoded) Answer(enc Encoding) Answer {
	st := e.cur.Load()
	if st == nil || !e.running.Load() {
		st = e.update()
	}
	if enc.Gzip {
		e.wanted[enc.Index()].Store(true)
		return Answer{Families: e.gzipped(st, enc)}
	}
	return Answer{Families: e.plain(st, enc)}
}

// update reads the views and, when they changed, makes the state scrapes
// serve: entries for new snapshots (encoded in the wanted encodings), the
// rest dropped, the status series encoded again.
func (e *Encoded) update() *encodedState { return e.updateAt(chunkGzipLevel, false) }

// updateAt is update, new snapshots gzipped at level, and first read from
// the store when restore is set.
func (e *Encoded) updateAt(level int, restore bool) *encodedState {
	views := e.src.Views()
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.encode(views, level, restore && e.store != nil)
	// The result after the snapshot: the views are published once
	// scrapes serve what they hold.
	e.published.Store(&views)
	return st
}

// encode makes the state scrapes serve from views, when they changed, new
// snapshots gzipped at level (read from the store first when restore).
// Caller holds mu.
func (e *Encoded) encode(views []sources.View, level int, restore bool) *encodedState {
	xs := exports(views)
	rows := statusRows(views)
	if st := e.cur.Load(); st != nil && slices.Equal(st.rows, rows) && slices.EqualFunc(st.exports, xs, sameExport) {
		return st
	}
	st := &encodedState{exports: xs, live: e.sync(xs), rows: rows}
	for _, enc := range Encodings {
		if !enc.Gzip || !e.wanted[enc.Index()].Load() {
			continue
		}
		e.statusChunks(st, enc)
		if restore && enc == storedEncoding {
			e.restoreStored(st.live)
		}
		encodeLive(st.live, e.gauges, enc, level)
	}
	e.cur.Store(st)
	return st
}

// encodeLive encodes the views of live not yet encoded in enc, on every
// core: after a restart every snapshot is new at once (2 million series,
// seconds of gzip on one core), where walks otherwise bring a few at a
// time.
func encodeLive(live []liveView, gauges []*Gauge, enc Encoding, level int) {
	var todo []*encodedView
	for _, l := range live {
		if !l.view.enc[enc.Index()].built.Load() {
			todo = append(todo, l.view)
		}
	}
	switch len(todo) {
	case 0: // a cached scrape starts no goroutine
		return
	case 1:
		todo[0].chunks(gauges, enc, level)
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(todo)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(todo); i = int(next.Add(1) - 1) {
				todo[i].chunks(gauges, enc, level)
			}
		})
	}
	wg.Wait()
}

func sameExport(a, b export) bool {
	return a.key == b.key && a.snap == b.snap && slices.Equal(a.fams, b.fams)
}

// sync returns the cache entries of the servable snapshots xs, making
// entries for new snapshots and dropping the rest. Caller holds mu.
func (e *Encoded) sync(xs []export) []liveView {
	live := make([]liveView, 0, len(xs))
	keep := make(map[viewKey]bool, len(xs))
	for _, x := range xs {
		k := x.key
		ev := e.entries[k]
		if ev == nil || ev.snap != x.snap {
			def, _ := sources.ByName(k.source)
			ev = &encodedView{key: k, name: storedKey(k), project: k.project, window: k.window, snap: x.snap}
			for _, f := range def.Families {
				ev.fams = append(ev.fams, familyIndex[f])
			}
			e.entries[k] = ev
		}
		keep[k] = true
		live = append(live, liveView{view: ev, fams: x.fams})
	}
	for k, v := range e.entries {
		if !keep[k] {
			delete(e.entries, k)
			if e.store != nil && e.running.Load() {
				e.forgetStored(v.name)
			}
		}
	}
	return live
}

// gzipped returns the families of st in a gzipped encoding, from the
// cache (encoding what is not yet: only in an encoding asked for the first
// time).
func (e *Encoded) gzipped(st *encodedState, enc Encoding) []Family {
	out := make([]Family, 0, len(statusFamilies)+len(allFamilies))
	for i, c := range e.statusChunks(st, enc) {
		f := Family{Name: statusFamilies[i].name, Header: e.statusHeaders[enc.Index()][i]}
		if len(c) > 0 {
			f.Chunks = [][]byte{c}
		}
		out = append(out, f)
	}
	data := make([]Family, len(allFamilies))
	for i, f := range allFamilies {
		data[i] = Family{Name: f.Name, Header: e.headers[enc.Index()][i]}
	}
	encodeLive(st.live, e.gauges, enc, chunkGzipLevel)
	for _, l := range st.live {
		chunks := l.view.chunks(e.gauges, enc, chunkGzipLevel)
		for j, fi := range l.view.fams {
			if c := chunks[j]; len(c) > 0 && slices.Contains(l.fams, fi) {
				data[fi].Chunks = append(data[fi].Chunks, c)
			}
		}
	}
	return append(out, data...)
}

// plain returns the families of st in a plain encoding, each encoded as
// the scrape writes it.
func (e *Encoded) plain(st *encodedState, enc Encoding) []Family {
	out := make([]Family, 0, len(statusFamilies)+len(allFamilies))
	for i, f := range statusFamilies {
		g, header := e.statusGauges[i], e.statusHeaders[enc.Index()][i]
		out = append(out, Family{Name: f.name, Write: func(w io.Writer) error {
			return streamFamily(w, header, func(emit func(value float64, lv ...string)) {
				for r := range st.rows {
					st.rows[r].emit(func(fi int, value float64, lv ...string) {
						if fi == i {
							emit(value, lv...)
						}
					})
				}
			}, g, enc.Format)
		}})
	}
	for i, f := range allFamilies {
		header := e.headers[enc.Index()][i]
		out = append(out, Family{Name: f.Name, Write: func(w io.Writer) error {
			return streamFamily(w, header, func(emit func(value float64, lv ...string)) {
				for _, l := range st.live {
					if slices.Contains(l.fams, i) {
						f.Emit(l.view.snap, l.view.project, l.view.window, emit)
					}
				}
			}, e.gauges[i], enc.Format)
		}})
	}
	return out
}

// streamFamily writes header and the samples series gives, through a
// scratch buffer handed to w every zflush bytes; nothing when there is
// no sample.
func streamFamily(w io.Writer, header []byte, series func(emit func(value float64, lv ...string)), g *Gauge, f Format) error {
	bp := scratchPool.Get().(*[]byte)
	defer scratchPool.Put(bp)
	buf, n := (*bp)[:0], 0
	var err error
	series(func(value float64, lv ...string) {
		if err != nil {
			return
		}
		if n == 0 {
			buf = append(buf, header...)
		}
		buf = g.Append(buf, f, lv, value)
		n++
		if len(buf) >= zflush {
			_, err = w.Write(buf)
			buf = buf[:0]
		}
	})
	if err == nil && len(buf) > 0 {
		_, err = w.Write(buf)
	}
	*bp = buf[:0]
	return err
}

// statusChunks returns the status families of st in a gzipped encoding,
// one member per family (nil for a family without series), encoding them
// on first use.
func (e *Encoded) statusChunks(st *encodedState, enc Encoding) [][]byte {
	return st.status[enc.Index()].get(func() [][]byte {
		out := make([][]byte, len(statusFamilies))
		z := newZencoder(statusGzipLevel)
		defer z.release()
		for i := range statusFamilies {
			out[i] = z.encode(func(emit func(value float64, lv ...string)) {
				for r := range st.rows {
					st.rows[r].emit(func(fi int, value float64, lv ...string) {
						if fi == i {
							emit(value, lv...)
						}
					})
				}
			}, e.statusGauges[i], enc.Format)
		}
		return out
	})
}

// chunks returns the snapshot's chunks in a gzipped encoding, encoding
// them on first use, at gzip level.
func (v *encodedView) chunks(gauges []*Gauge, enc Encoding, level int) [][]byte {
	c := &v.enc[enc.Index()]
	return c.get(func() [][]byte {
		c.level = level
		out := make([][]byte, len(v.fams))
		z := newZencoder(level)
		defer z.release()
		for i, fi := range v.fams {
			out[i] = z.encode(func(emit func(value float64, lv ...string)) {
				allFamilies[fi].Emit(v.snap, v.project, v.window, emit)
			}, gauges[fi], enc.Format)
		}
		return out
	})
}

// Scratch space for encoding, reused across chunks and snapshots: the only
// allocations that stay are the chunks themselves, at their exact size, so
// that encoding 2 million series does not leave hundreds of MB of garbage
// for the heap (and RSS) to grow into.
var (
	scratchPool = sync.Pool{New: func() any { return new([]byte) }}
	zbufPool    = sync.Pool{New: func() any { return new(bytes.Buffer) }}
	zwPools     = map[int]*sync.Pool{}
)

func init() {
	for _, level := range []int{chunkGzipLevel, statusGzipLevel, primeGzipLevel} {
		zwPools[level] = &sync.Pool{New: func() any {
			zw, _ := gzip.NewWriterLevel(nil, level)
			return zw
		}}
	}
}

// zflush is how much plain text is encoded before it is handed on.
const zflush = 64 << 10

// zencoder encodes families into gzip members with pooled buffers.
type zencoder struct {
	level int
	bp    *[]byte
	zbuf  *bytes.Buffer
	zw    *gzip.Writer
}

func newZencoder(level int) *zencoder {
	return &zencoder{level: level, bp: scratchPool.Get().(*[]byte), zbuf: zbufPool.Get().(*bytes.Buffer), zw: zwPools[level].Get().(*gzip.Writer)}
}

func (z *zencoder) release() {
	scratchPool.Put(z.bp)
	zbufPool.Put(z.zbuf)
	zwPools[z.level].Put(z.zw)
}

// encode returns the samples series gives as one gzip member, compressed
// as the lines are written (without the whole plain text), or nil when
// there is none.
func (z *zencoder) encode(series func(emit func(value float64, lv ...string)), g *Gauge, f Format) []byte {
	buf, n := (*z.bp)[:0], 0
	z.zbuf.Reset()
	z.zw.Reset(z.zbuf)
	series(func(value float64, lv ...string) {
		buf = g.Append(buf, f, lv, value)
		n++
		if len(buf) >= zflush {
			_, _ = z.zw.Write(buf) // into a bytes.Buffer: cannot fail
			buf = buf[:0]
		}
	})
	*z.bp = buf[:0]
	if n == 0 {
		return nil
	}
	_, _ = z.zw.Write(buf)
	_ = z.zw.Close()
	return bytes.Clone(z.zbuf.Bytes())
}

// Bytes returns the bytes of snapshots held by the cache, per encoding, as
// of the last update (snapshots no longer served are dropped at the next).
func (e *Encoded) Bytes() [NumEncodings]int {
	var n [NumEncodings]int
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, v := range e.entries {
		for i := range v.enc {
			if !v.enc[i].built.Load() {
				continue
			}
			for _, c := range v.enc[i].chunks {
				n[i] += len(c)
			}
		}
	}
	return n
}
