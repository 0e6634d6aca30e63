package collector

import (
	"bytes"
	"compress/gzip"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// Versioned is a gatherer whose families change only when its version does
// (counters and histograms of events rarer than scrapes, say): a scrape
// writes them as they were encoded for the current version, one chunk per
// family (a gzip member each when gzipped), encoding them again only when
// the version moved. The version must change after every change of the
// families (read before gathering, a change during the gathering is
// encoded again at the next scrape).
type Versioned struct {
	g       prometheus.Gatherer
	version func() uint64

	mu    sync.Mutex
	cache [NumEncodings]versionedEntry
}

type versionedEntry struct {
	ok      bool
	version uint64
	fams    []Family
}

// NewVersioned returns g's families encoded once per version.
func NewVersioned(g prometheus.Gatherer, version func() uint64) *Versioned {
	return &Versioned{g: g, version: version}
}

// Gatherer returns the families as metrics, for the formats served through
// the registry (protobuf).
func (v *Versioned) Gatherer() prometheus.Gatherer { return v.g }

// Families returns the families in encoding e, encoded at the current
// version. A gathering error keeps what was gathered and is returned
// (the entry is not kept, so the next scrape tries again).
func (v *Versioned) Families(e Encoding) ([]Family, error) {
	ver := v.version()
	v.mu.Lock()
	defer v.mu.Unlock()
	c := &v.cache[e.Index()]
	if c.ok && c.version == ver {
		return c.fams, nil
	}
	mfs, gerr := v.g.Gather()
	format := expfmt.NewFormat(expfmt.TypeTextPlain)
	if e.Format == OpenMetrics {
		format = expfmt.NewFormat(expfmt.TypeOpenMetrics)
	}
	fams := make([]Family, 0, len(mfs))
	var buf bytes.Buffer
	for _, mf := range mfs {
		buf.Reset()
		if err := expfmt.NewEncoder(&buf, format).Encode(mf); err != nil {
			return nil, err
		}
		b := bytes.Clone(buf.Bytes())
		if e.Gzip {
			b = Gzip(b, gzip.DefaultCompression)
		}
		fams = append(fams, Family{Name: mf.GetName(), Chunks: [][]byte{b}})
	}
	if gerr != nil {
		return fams, gerr
	}
	*c = versionedEntry{ok: true, version: ver, fams: fams}
	return fams, nil
}
