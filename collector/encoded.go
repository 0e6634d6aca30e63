package collector

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/internal/exposition"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// chunkGzipLevel compresses a snapshot's series once per snapshot, not per
// scrape, so the default level: a smaller cache and answer for a one-time
// cost.
const chunkGzipLevel = gzip.DefaultCompression

// Encoded serves the DataFamilies of a ViewSource's servable snapshots as
// bytes encoded once per snapshot, for internal/exposition. Each snapshot
// (project × window) is encoded lazily, per encoding a scrape asks for
// (text or OpenMetrics, plain or gzipped), into one chunk per family; the
// chunks are kept until the view stops serving that snapshot (replaced by
// a newer walk, stale, of past dates) and then dropped with it.
//
// Register NewStatus, not NewAnalytics, next to it: the data series
// must reach the exposition once.
type Encoded struct {
	src  ViewSource
	data *Analytics // the data families as metrics, for protobuf
	// headers[encoding][family] are the HELP and TYPE lines.
	headers [exposition.NumEncodings][][]byte
	gauges  []*exposition.Gauge // per family

	mu      sync.Mutex
	entries map[viewKey]*encodedView
}

type viewKey struct{ project, source, window, scope string }

func (k viewKey) with(scope string) viewKey { k.scope = scope; return k }

// encodedView is the cache of one served snapshot.
type encodedView struct {
	project, window string
	snap            sources.Snapshot
	// fams are the indexes (into families) of its source's families.
	fams []int
	enc  [exposition.NumEncodings]encodedChunks
}

// encodedChunks is one encoding of a snapshot: chunks[i] of fams[i].
type encodedChunks struct {
	once   sync.Once
	built  atomic.Bool // set once chunks is written, for Bytes
	chunks [][]byte
}

// NewEncoded returns an empty cache of src's snapshots.
func NewEncoded(src ViewSource, logger log.Logger) *Encoded {
	e := &Encoded{src: src, data: newAnalytics(src, logger, false, true), entries: map[viewKey]*encodedView{}}
	for _, f := range allFamilies {
		g, err := exposition.NewGauge(f.Name, f.Labels)
		if err != nil {
			panic(err)
		}
		e.gauges = append(e.gauges, g)
	}
	for _, enc := range exposition.Encodings {
		for _, f := range allFamilies {
			h, err := exposition.GaugeHeader(enc.Format, f.Name, f.Help)
			if err != nil {
				panic(fmt.Sprintf("collector: header of %s: %v", f.Name, err))
			}
			if enc.Gzip {
				h = exposition.Gzip(h, chunkGzipLevel)
			}
			e.headers[enc.Index()] = append(e.headers[enc.Index()], h)
		}
	}
	return e
}

// Describe implements prometheus.Collector: the data families.
func (e *Encoded) Describe(ch chan<- *prometheus.Desc) { e.data.Describe(ch) }

// Collect implements prometheus.Collector: the data series as const
// metrics, for the formats the exposition serves through the registry.
func (e *Encoded) Collect(ch chan<- prometheus.Metric) { e.data.Collect(ch) }

// Encoded implements exposition.Source: every source's data families in
// encoding enc, one chunk per servable snapshot, in the order of the views.
func (e *Encoded) Encoded(enc exposition.Encoding) []exposition.Family {
	live := e.sync()
	out := make([]exposition.Family, len(allFamilies))
	for i, f := range allFamilies {
		out[i] = exposition.Family{Name: f.Name, Header: e.headers[enc.Index()][i]}
	}
	for _, l := range live {
		chunks := l.view.chunks(e.gauges, enc)
		for j, fi := range l.view.fams {
			if c := chunks[j]; len(c) > 0 && slices.Contains(l.fams, fi) {
				out[fi].Chunks = append(out[fi].Chunks, c)
			}
		}
	}
	return out
}

// liveView is a cached snapshot and the families exported from it now.
type liveView struct {
	view *encodedView
	fams []int
}

// sync reads the views and returns the cache entries of the servable
// snapshots, making entries for new snapshots and dropping the rest.
func (e *Encoded) sync() []liveView {
	xs := exports(e.src.Views())
	live := make([]liveView, 0, len(xs))
	e.mu.Lock()
	defer e.mu.Unlock()
	keep := make(map[viewKey]bool, len(xs))
	for _, x := range xs {
		k := x.key
		ev := e.entries[k]
		if ev == nil || ev.snap != x.snap {
			def, _ := sources.ByName(k.source)
			ev = &encodedView{project: k.project, window: k.window, snap: x.snap}
			for _, f := range def.Families {
				ev.fams = append(ev.fams, familyIndex[f])
			}
			e.entries[k] = ev
		}
		keep[k] = true
		live = append(live, liveView{view: ev, fams: x.fams})
	}
	for k := range e.entries {
		if !keep[k] {
			delete(e.entries, k)
		}
	}
	return live
}

// chunks returns the snapshot's chunks in encoding enc, encoding them on
// first use.
func (v *encodedView) chunks(gauges []*exposition.Gauge, enc exposition.Encoding) [][]byte {
	c := &v.enc[enc.Index()]
	c.once.Do(func() {
		c.chunks = v.encode(gauges, enc)
		c.built.Store(true)
	})
	return c.chunks
}

// Scratch space for encoding, reused across chunks and snapshots: the only
// allocations that stay are the chunks themselves, at their exact size, so
// that a first scrape of 900,000 series does not leave hundreds of MB of
// garbage for the heap (and RSS) to grow into.
var (
	scratchPool = sync.Pool{New: func() any { return new([]byte) }}
	zbufPool    = sync.Pool{New: func() any { return new(bytes.Buffer) }}
	zwPool      = sync.Pool{New: func() any {
		zw, _ := gzip.NewWriterLevel(nil, chunkGzipLevel)
		return zw
	}}
)

// zflush is how much plain text is encoded before it is handed to gzip.
const zflush = 64 << 10

// encode writes the snapshot's series of every family in enc: a gzipped
// chunk is one gzip member, compressed as the lines are written, without
// the plain chunk.
func (v *encodedView) encode(gauges []*exposition.Gauge, enc exposition.Encoding) [][]byte {
	out := make([][]byte, len(v.fams))
	bp := scratchPool.Get().(*[]byte)
	defer scratchPool.Put(bp)
	var (
		zbuf *bytes.Buffer
		zw   *gzip.Writer
	)
	if enc.Gzip {
		zbuf, zw = zbufPool.Get().(*bytes.Buffer), zwPool.Get().(*gzip.Writer)
		defer zbufPool.Put(zbuf)
		defer zwPool.Put(zw)
	}
	for i, fi := range v.fams {
		buf, n := (*bp)[:0], 0
		if enc.Gzip {
			zbuf.Reset()
			zw.Reset(zbuf)
		}
		allFamilies[fi].Emit(v.snap, v.project, v.window, func(value float64, lv ...string) {
			buf = gauges[fi].Append(buf, enc.Format, lv, value)
			n++
			if enc.Gzip && len(buf) >= zflush {
				_, _ = zw.Write(buf) // into a bytes.Buffer: cannot fail
				buf = buf[:0]
			}
		})
		switch {
		case n == 0:
		case enc.Gzip:
			_, _ = zw.Write(buf)
			_ = zw.Close()
			out[i] = bytes.Clone(zbuf.Bytes())
		default:
			out[i] = bytes.Clone(buf)
		}
		*bp = buf[:0]
	}
	return out
}

// Bytes returns the bytes held by the cache, per encoding, as of the last
// scrape (snapshots no longer served are dropped at the next one).
func (e *Encoded) Bytes() [exposition.NumEncodings]int {
	var n [exposition.NumEncodings]int
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
