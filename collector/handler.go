package collector

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// Family is one pre-encoded metric family: its HELP and TYPE lines and the
// chunks of its series (one per snapshot, say), in one encoding. Written
// header first and then every chunk, a family stays contiguous under one
// HELP/TYPE however many snapshots hold its series.
type Family struct {
	Name   string
	Header []byte
	Chunks [][]byte
	// Write, when set, writes the whole family (Header and its series,
	// or nothing when it has none) in place of Header and Chunks, as the
	// series are encoded: for encodings cheaper to encode per scrape into
	// a small buffer than to keep (plain text, 15 times gzip's size).
	Write func(w io.Writer) error
}

// Answer is what one scrape writes beside the registry's families. A
// Source makes it once per scrape, so that everything in it comes from one
// read of its state (the replica's role, say: its gauge and the data it
// decides over).
type Answer struct {
	// Gatherer, when set, is gathered with the registry's families.
	Gatherer prometheus.Gatherer
	// Families are written after the registry's; a family without
	// chunks (and without Write) is left out.
	Families []Family
}

// Source holds families encoded ahead of time.
type Source interface {
	// Answer returns what a scrape in encoding e writes after the
	// registry's families.
	Answer(e Encoding) Answer
	// Gatherer returns the same series as metrics, for the formats served
	// through the registry (protobuf); called once per such scrape.
	Gatherer() prometheus.Gatherer
}

// Opts configures the handler, as promhttp.HandlerOpts does promhttp's.
// Gathering errors are always handled as promhttp.ContinueOnError.
type Opts struct {
	ErrorLog            promhttp.Logger
	MaxRequestsInFlight int
	// Registry, when set, registers promhttp_metric_handler_errors_total.
	Registry prometheus.Registerer
}

// gzipLevel is the registry's part of a gzipped answer, made on every
// scrape: a few tens of kB, stored rather than compressed (a valid gzip
// member at level 0), because compressing it cost more CPU than the rest
// of a cached scrape (BENCHMARKS.md, "Scrapes at scale").
const gzipLevel = gzip.NoCompression

var gzipPool = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(nil, gzipLevel)
	return zw
}}

// eofLine ends an OpenMetrics exposition; eofGzip is it as a gzip member.
var (
	eofLine = []byte("# EOF\n")
	eofGzip = Gzip(eofLine, gzip.DefaultCompression)
)

// NewHandler serves reg's families followed by src's pre-encoded families
// for the text formats (0.0.4 and OpenMetrics, negotiated as promhttp does
// with OpenMetrics enabled) with gzip when the client accepts it; protobuf
// goes through a promhttp handler over reg and src's collector. reg must not
// hold src's families.
func NewHandler(reg prometheus.Gatherer, src Source, o Opts) http.Handler {
	errCnt := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "promhttp_metric_handler_errors_total",
		Help: "Total number of internal errors encountered by the promhttp metric handler.",
	}, []string{"cause"})
	errCnt.WithLabelValues("gathering")
	errCnt.WithLabelValues("encoding")
	if o.Registry != nil {
		if err := o.Registry.Register(errCnt); err != nil {
			are := &prometheus.AlreadyRegisteredError{}
			if !errors.As(err, are) {
				panic(err)
			}
			errCnt = are.ExistingCollector.(*prometheus.CounterVec)
		}
	}
	h := &handler{reg: reg, src: src, o: o, errCnt: errCnt}
	if o.MaxRequestsInFlight > 0 {
		h.inFlight = make(chan struct{}, o.MaxRequestsInFlight)
	}
	return h
}

type handler struct {
	reg      prometheus.Gatherer
	src      Source
	o        Opts
	errCnt   *prometheus.CounterVec
	inFlight chan struct{}
}

// bufSize is what a scrape buffers before writing to the socket: many
// small chunks (a snapshot's family each) leave in few writes, and a
// scrape in flight holds this much whatever the size of the answer.
const bufSize = 128 << 10

var bufPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, bufSize) }}

// familyPool holds the buffers AppendFamily writes a registry's family into.
var familyPool = sync.Pool{New: func() any { return new(make([]byte, 0, 4<<10)) }}

func (h *handler) logf(format string, args ...any) {
	if h.o.ErrorLog != nil {
		h.o.ErrorLog.Println(fmt.Sprintf(format, args...))
	}
}

func (h *handler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if h.inFlight != nil {
		select {
		case h.inFlight <- struct{}{}:
			defer func() { <-h.inFlight }()
		default:
			http.Error(w, fmt.Sprintf("Limit of concurrent requests reached (%d), try again later.", h.o.MaxRequestsInFlight),
				http.StatusServiceUnavailable)
			return
		}
	}
	format := expfmt.NegotiateAccept(req.Header, expfmt.DefaultOpenMetricsAcceptedFormats()...)
	var enc Encoding
	switch format.FormatType() {
	case expfmt.TypeTextPlain:
		enc.Format = Text
	case expfmt.TypeOpenMetrics:
		enc.Format = OpenMetrics
	default:
		// Registry unset: it would register a second errors counter.
		promhttp.HandlerFor(prometheus.Gatherers{h.reg, h.src.Gatherer()}, promhttp.HandlerOpts{
			ErrorLog:          h.o.ErrorLog,
			ErrorHandling:     promhttp.ContinueOnError,
			EnableOpenMetrics: true,
		}).ServeHTTP(w, req)
		return
	}

	enc.Gzip = acceptsGzip(req.Header.Get("Accept-Encoding"))
	answer := h.src.Answer(enc) // once: one view of the source's state
	mfs, err := gatherBoth(h.reg, answer.Gatherer)
	if err != nil {
		h.logf("error gathering metrics: %v", err)
		h.errCnt.WithLabelValues("gathering").Inc()
		if len(mfs) == 0 {
			http.Error(w, "An error has occurred while serving metrics:\n\n"+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	var filter map[string]bool
	if names := req.URL.Query()["name[]"]; len(names) > 0 {
		filter = map[string]bool{}
		for _, n := range names {
			filter[n] = true
		}
	}
	hdr := w.Header()
	hdr.Add("Vary", "Accept")
	hdr.Add("Vary", "Accept-Encoding")
	hdr.Set("Content-Type", string(format))
	if enc.Gzip {
		hdr.Set("Content-Encoding", "gzip")
	}

	bw := bufPool.Get().(*bufio.Writer)
	bw.Reset(w)
	defer func() {
		bw.Reset(nil) // no reference to w stays in the pool
		bufPool.Put(bw)
	}()
	if err := h.write(bw, enc, format, mfs, answer.Families, filter); err != nil {
		h.encodingError(err)
		return
	}
	if err := bw.Flush(); err != nil {
		h.encodingError(err)
	}
}

// gatherBoth gathers reg and more (when not nil) one after the other,
// without prometheus.Gatherers' second pass over every metric (hashing,
// consistency checks, sorting again: a fifth of a cached scrape's CPU),
// since each has checked its own. Their families are expected apart;
// should a name be in both, they are gathered again through
// prometheus.Gatherers, which merges them.
func gatherBoth(reg, more prometheus.Gatherer) ([]*dto.MetricFamily, error) {
	mfs, err := reg.Gather()
	if more == nil {
		return mfs, err
	}
	extra, err2 := more.Gather()
	for _, e := range extra {
		for _, mf := range mfs {
			if mf.GetName() == e.GetName() {
				return prometheus.Gatherers{reg, more}.Gather()
			}
		}
	}
	return append(mfs, extra...), errors.Join(err, err2)
}

// write writes the registry's families mfs, then the pre-encoded families,
// then OpenMetrics' # EOF: the cached bytes go to bw as they are, no copy
// of the answer is made.
func (h *handler) write(bw *bufio.Writer, enc Encoding, format expfmt.Format, mfs []*dto.MetricFamily, fams []Family, filter map[string]bool) error {
	if err := writeGathered(bw, enc, format, mfs, filter); err != nil {
		return err
	}
	if err := writeEncoded(bw, fams, filter); err != nil {
		return err
	}
	if enc.Format == OpenMetrics {
		eof := eofLine
		if enc.Gzip {
			eof = eofGzip
		}
		if _, err := bw.Write(eof); err != nil {
			return err
		}
	}
	return nil
}

// writeGathered writes the registry's part: encoded now, as promhttp would
// (its own gzip member when gzipped).
func writeGathered(bw *bufio.Writer, enc Encoding, format expfmt.Format, mfs []*dto.MetricFamily, filter map[string]bool) error {
	var out io.Writer = bw
	var zw *gzip.Writer
	if enc.Gzip {
		zw = gzipPool.Get().(*gzip.Writer)
		defer gzipPool.Put(zw)
		zw.Reset(bw)
		out = zw
	}
	e := expfmt.NewEncoder(out, format)
	fb := familyPool.Get().(*[]byte)
	defer familyPool.Put(fb)
	for _, mf := range mfs {
		if filter != nil && !filter[mf.GetName()] {
			continue
		}
		var ok bool
		if *fb, ok = AppendFamily((*fb)[:0], enc.Format, mf); ok {
			if _, err := out.Write(*fb); err != nil {
				return err
			}
			continue
		}
		if err := e.Encode(mf); err != nil {
			return err
		}
	}
	if zw != nil {
		return zw.Close()
	}
	return nil
}

// writeEncoded writes the pre-encoded part: whole families, already in the
// answer's encoding.
func writeEncoded(bw *bufio.Writer, fams []Family, filter map[string]bool) error {
	for _, f := range fams {
		if filter != nil && !filter[f.Name] {
			continue
		}
		if f.Write != nil {
			if err := f.Write(bw); err != nil {
				return err
			}
			continue
		}
		if len(f.Chunks) == 0 {
			continue
		}
		if _, err := bw.Write(f.Header); err != nil {
			return err
		}
		for _, c := range f.Chunks {
			if _, err := bw.Write(c); err != nil {
				return err
			}
		}
	}
	return nil
}

func (h *handler) encodingError(err error) {
	// The error as a value, as promhttp passes it, so that the logger can
	// tell a scraper that hung up (broken pipe) from a fault of ours.
	if h.o.ErrorLog != nil {
		h.o.ErrorLog.Println("error encoding and sending metric family:", err)
	}
	h.errCnt.WithLabelValues("encoding").Inc()
}

// acceptsGzip reports whether an Accept-Encoding header accepts gzip (by
// name or by *) with a quality above 0.
func acceptsGzip(header string) bool {
	star := false
	for _, part := range strings.Split(header, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		name = strings.ToLower(strings.TrimSpace(name))
		if name != "gzip" && name != "*" {
			continue
		}
		q := 1.0
		for _, p := range strings.Split(params, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					q = f
				}
			}
		}
		if name == "gzip" {
			return q > 0
		}
		star = q > 0
	}
	return star
}
