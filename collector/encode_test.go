package collector

import (
	"bytes"
	"compress/gzip"
	"math"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// expfmtLines encodes a gauge family with expfmt and returns its header and
// its sample lines.
func expfmtLines(t *testing.T, f Format, name, help string, labels []string, values [][]string, vs []float64) (string, string) {
	t.Helper()
	mf := &dto.MetricFamily{Name: &name, Help: &help, Type: dto.MetricType_GAUGE.Enum()}
	for i, lv := range values {
		m := &dto.Metric{Gauge: &dto.Gauge{Value: &vs[i]}}
		for j, l := range labels {
			m.Label = append(m.Label, &dto.LabelPair{Name: &l, Value: &lv[j]})
		}
		// The registry sorts label pairs by name.
		slices.SortFunc(m.Label, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
		mf.Metric = append(mf.Metric, m)
	}
	var buf bytes.Buffer
	var err error
	if f == OpenMetrics {
		_, err = expfmt.MetricFamilyToOpenMetrics(&buf, mf)
	} else {
		_, err = expfmt.MetricFamilyToText(&buf, mf)
	}
	if err != nil {
		t.Fatal(err)
	}
	s := buf.String()
	i := 0
	for strings.HasPrefix(s[i:], "#") {
		i += strings.IndexByte(s[i:], '\n') + 1
	}
	return s[:i], s[i:]
}

// TestAppendGaugeMatchesExpfmt: header and sample bytes are expfmt's, for
// label values that need escaping and values of every kind.
func TestAppendGaugeMatchesExpfmt(t *testing.T) {
	const name = "mintlify_page_unique_visitors"
	help := "Help with a \\ backslash, a \"quote\" and a\nnewline."
	labels := []string{"project", "window", "path", "traffic"}
	values := [][]string{
		{"docs", "1d", "/", "human"},
		{"docs", "1d", `/a "quoted" path`, "ai"},
		{"docs", "1d", `/back\slash\`, "ai"},
		{"docs", "1d", "/new\nline", "human"},
		{"docs", "1d", "/ünïcödé/\uFFFD/日本", "human"},
		{"d\"o\\cs", "7d", "/{braces},=commas", "ai"},
		{"docs", "1d", "/zero", "human"}, {"docs", "1d", "/negzero", "human"}, {"docs", "1d", "/one", "human"}, {"docs", "1d", "/minus-one", "human"},
		{"docs", "1d", "/big", "human"}, {"docs", "1d", "/huge", "human"}, {"docs", "1d", "/frac", "human"}, {"docs", "1d", "/tiny", "human"},
		{"docs", "1d", "/nan", "human"}, {"docs", "1d", "/inf", "human"}, {"docs", "1d", "/-inf", "human"}, {"docs", "1d", "/int", "human"},
	}
	vs := []float64{0, 1, 2, 3, 4, 5, 0, math.Copysign(0, -1), 1, -1, 123456789, 1e21, 0.25, 1e-7,
		math.NaN(), math.Inf(1), math.Inf(-1), 42}
	for _, f := range []Format{Text, OpenMetrics} {
		wantHeader, wantBody := expfmtLines(t, f, name, help, labels, values, vs)
		header, err := Header(f, name, help, false)
		if err != nil {
			t.Fatal(err)
		}
		if string(header) != wantHeader {
			t.Errorf("format %d header:\n%s\nwant:\n%s", f, header, wantHeader)
		}
		g, err := NewGauge(name, labels)
		if err != nil {
			t.Fatal(err)
		}
		var body []byte
		for i, lv := range values {
			body = g.Append(body, f, lv, vs[i])
		}
		if string(body) != wantBody {
			t.Errorf("format %d samples:\n%s\nwant:\n%s", f, body, wantBody)
		}
	}
}

// TestGzipMembersConcatenate: gzip members written one after another read
// back as one stream with Go's reader (as Prometheus' scraper reads them).
func TestGzipMembersConcatenate(t *testing.T) {
	var stream []byte
	for _, part := range []string{"a 1\n", "", "b 2\n", "# EOF\n"} {
		stream = append(stream, Gzip([]byte(part), gzip.DefaultCompression)...)
	}
	if got := gunzip(t, stream); string(got) != "a 1\nb 2\n# EOF\n" {
		t.Fatalf("read %q", got)
	}
}

func TestAcceptsGzip(t *testing.T) {
	for h, want := range map[string]bool{
		"":                             false,
		"gzip":                         true,
		"identity":                     false,
		"deflate, gzip;q=1.0, *;q=0.5": true,
		"gzip;q=0":                     false,
		"*":                            true,
		"*;q=0":                        false,
		"br, GZIP":                     true,
		"zstd, identity;q=0.5":         false,
	} {
		if got := acceptsGzip(h); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", h, got, want)
		}
	}
}
