// This file serves /metrics as the registry's families followed by
// families encoded ahead of time: data that changes once per refresh is
// encoded once per snapshot (and per format and compression actually asked
// for), not once per scrape. It knows the text formats and gzip, nothing of
// what the data means; collector/ decides what to encode and when to drop it.

package collector

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Format is a text exposition format served from pre-encoded bytes.
type Format uint8

const (
	// Text is the Prometheus text format 0.0.4.
	Text Format = iota
	// OpenMetrics is OpenMetrics text 1.0.0 (and 0.0.1, encoded alike).
	OpenMetrics
)

// Encoding is a format and whether it is gzipped.
type Encoding struct {
	Format Format
	Gzip   bool
}

// Encodings lists every encoding, in Index order.
var Encodings = []Encoding{{Text, false}, {Text, true}, {OpenMetrics, false}, {OpenMetrics, true}}

// Index is the encoding's position in Encodings, for arrays indexed by it.
func (e Encoding) Index() int {
	i := 2 * int(e.Format)
	if e.Gzip {
		i++
	}
	return i
}

func (e Encoding) String() string {
	s := "text"
	if e.Format == OpenMetrics {
		s = "openmetrics"
	}
	if e.Gzip {
		s += "+gzip"
	}
	return s
}

// NumEncodings is len(Encodings).
const NumEncodings = 4

// Header returns the HELP and TYPE lines of a gauge family, or of a counter
// family when counter is set (name ending in _total, which OpenMetrics
// leaves out of these lines), exactly as expfmt writes them in format f.
// Gauge.Append writes either's samples: a counter without a created
// timestamp is one line per series, as a gauge is.
func Header(f Format, name, help string, counter bool) ([]byte, error) {
	// expfmt refuses a family without metrics: encode one and cut it off.
	zero := 0.0
	mf := &dto.MetricFamily{
		Name:   &name,
		Help:   &help,
		Type:   dto.MetricType_GAUGE.Enum(),
		Metric: []*dto.Metric{{Gauge: &dto.Gauge{Value: &zero}}},
	}
	if counter {
		mf.Type = dto.MetricType_COUNTER.Enum()
		mf.Metric = []*dto.Metric{{Counter: &dto.Counter{Value: &zero}}}
	}
	var buf bytes.Buffer
	var err error
	if f == OpenMetrics {
		_, err = expfmt.MetricFamilyToOpenMetrics(&buf, mf)
	} else {
		_, err = expfmt.MetricFamilyToText(&buf, mf)
	}
	if err != nil {
		return nil, err
	}
	b := buf.Bytes()
	end := 0
	for end < len(b) && b[end] == '#' {
		nl := bytes.IndexByte(b[end:], '\n')
		if nl < 0 {
			return nil, fmt.Errorf("encoding: unterminated header line for %s", name)
		}
		end += nl + 1
	}
	return b[:end:end], nil
}

// Gauge encodes the samples of one gauge family.
type Gauge struct {
	name   string
	labels []string
	// order lists label indexes sorted by name, the order in which the
	// registry writes label pairs.
	order []int
}

// NewGauge returns the encoder of the gauge family name with labels. The
// names must be legacy-valid, so that no escaping scheme changes them.
func NewGauge(name string, labels []string) (*Gauge, error) {
	if !model.LegacyValidation.IsValidMetricName(name) {
		return nil, fmt.Errorf("encoding: metric name %q needs quoting", name)
	}
	g := &Gauge{name: name, labels: labels}
	for i, l := range labels {
		if !model.LegacyValidation.IsValidLabelName(l) {
			return nil, fmt.Errorf("encoding: label name %q of %s needs quoting", l, name)
		}
		g.order = append(g.order, i)
	}
	slices.SortFunc(g.order, func(a, b int) int { return strings.Compare(labels[a], labels[b]) })
	return g, nil
}

// labelValueEscaper escapes label values as expfmt does in both formats.
var labelValueEscaper = strings.NewReplacer("\\", `\\`, "\n", `\n`, "\"", `\"`)

// Append appends one sample line in format f, byte for byte as expfmt
// writes the registry's const metric with these label values (in the order
// of the labels given to NewGauge; valid UTF-8).
func (g *Gauge) Append(b []byte, f Format, values []string, v float64) []byte {
	b = append(b, g.name...)
	for n, i := range g.order {
		if n == 0 {
			b = append(b, '{')
		} else {
			b = append(b, ',')
		}
		b = append(b, g.labels[i]...)
		b = append(b, '=', '"')
		if strings.ContainsAny(values[i], "\\\n\"") {
			b = append(b, labelValueEscaper.Replace(values[i])...)
		} else {
			b = append(b, values[i]...)
		}
		b = append(b, '"')
	}
	if len(g.order) > 0 {
		b = append(b, '}')
	}
	b = append(b, ' ')
	b = appendFloat(b, f, v)
	return append(b, '\n')
}

// appendFloat writes v as expfmt's writeFloat (text) and
// writeOpenMetricsFloat (OpenMetrics) do.
func appendFloat(b []byte, f Format, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case math.IsInf(v, +1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case v == 0: // also -0, which expfmt writes as 0
		if f == OpenMetrics {
			return append(b, "0.0"...)
		}
		return append(b, '0')
	}
	start := len(b)
	b = strconv.AppendFloat(b, v, 'g', -1, 64)
	if f == OpenMetrics && !bytes.ContainsAny(b[start:], "e.") {
		b = append(b, '.', '0')
	}
	return b
}

// Gzip compresses b into one gzip member. Members concatenate into a valid
// gzip stream (RFC 1952, 2.2), which Go's and Prometheus' readers read whole.
func Gzip(b []byte, level int) []byte {
	var buf bytes.Buffer
	buf.Grow(len(b)/8 + 64)
	zw, err := gzip.NewWriterLevel(&buf, level)
	if err != nil {
		panic(err) // only for an invalid level
	}
	_, _ = zw.Write(b) // a bytes.Buffer does not fail
	_ = zw.Close()
	return bytes.Clone(buf.Bytes())
}
