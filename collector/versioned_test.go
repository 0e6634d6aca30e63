package collector

import (
	"bytes"
	"compress/gzip"
	"io"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

func versionedText(t *testing.T, v *Versioned, e Encoding) string {
	t.Helper()
	fams, err := v.Families(e)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, f := range fams {
		out.Write(f.Header)
		for _, c := range f.Chunks {
			if e.Gzip {
				c = gunzip(t, c)
			}
			out.Write(c)
		}
	}
	return out.String()
}

// gunzip reads a gzip stream (of one member or more) whole.
func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestVersionedEncodesOncePerVersion: the families are what expfmt writes
// of the gatherer, in every encoding; a change without a new version is
// not seen (the bytes are kept), a new version is.
func TestVersionedEncodesOncePerVersion(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_requests_total", Help: "Requests."}, []string{"code"})
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "x_duration_seconds", Help: "Duration.", Buckets: []float64{1}})
	reg.MustRegister(c, h)
	c.WithLabelValues("200").Inc()
	var version atomic.Uint64
	v := NewVersioned(reg, version.Load)

	for _, e := range Encodings {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		format := expfmt.NewFormat(expfmt.TypeTextPlain)
		if e.Format == OpenMetrics {
			format = expfmt.NewFormat(expfmt.TypeOpenMetrics)
		}
		var want bytes.Buffer
		enc := expfmt.NewEncoder(&want, format)
		for _, mf := range mfs {
			if err := enc.Encode(mf); err != nil {
				t.Fatal(err)
			}
		}
		if got := versionedText(t, v, e); got != want.String() {
			t.Errorf("%v: got\n%s\nwant\n%s", e, got, want.String())
		}
	}

	c.WithLabelValues("200").Inc()
	h.Observe(0.5)
	for _, e := range Encodings {
		if got := versionedText(t, v, e); !strings.Contains(got, `x_requests_total{code="200"} 1`) || strings.Contains(got, `} 2`) {
			t.Errorf("%v: a change without a new version was encoded again:\n%s", e, got)
		}
	}
	version.Add(1)
	for _, e := range Encodings {
		got := versionedText(t, v, e)
		for _, want := range []string{`x_requests_total{code="200"} 2`, `x_duration_seconds_count 1`} {
			if !strings.Contains(got, want) {
				t.Errorf("%v: the new version lacks %s:\n%s", e, want, got)
			}
		}
	}
}
