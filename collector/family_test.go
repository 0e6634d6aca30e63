package collector

import (
	"bytes"
	"math"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// TestAppendFamilyAsExpfmt: every family AppendFamily takes is written
// byte for byte as expfmt's encoder writes it (as the handler negotiates
// the formats), in both formats; the rest it refuses, appending nothing.
func TestAppendFamilyAsExpfmt(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		versioncollector.NewCollector("x"))
	cv := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_requests_total", Help: `Requests "quoted", back\slash
and a new line.`}, []string{"code", "path"})
	cv.WithLabelValues("200", `/a"b\c`+"\n").Add(1e21)
	cv.WithLabelValues("500", "").Add(0.5)
	noTotal := prometheus.NewCounter(prometheus.CounterOpts{Name: "x_events", Help: "Events."})
	gv := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "x:ratio", Help: "Ratio."}, []string{"k"})
	for i, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), -1, 1, 123456789, 1e-7, 0.1} {
		gv.WithLabelValues(string(rune('a' + i))).Set(v)
	}
	sum := prometheus.NewSummary(prometheus.SummaryOpts{Name: "x_pause_seconds", Help: "Pauses.", Objectives: map[float64]float64{0.5: 0.05, 0.99: 0.001}})
	for i := range 1234567 % 2000 {
		sum.Observe(float64(i) / 1000)
	}
	untyped := prometheus.NewUntypedFunc(prometheus.UntypedOpts{Name: "x_untyped", Help: "Untyped."}, func() float64 { return 3 })
	hist := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "x_seconds", Help: "Histogram."})
	noHelp := prometheus.NewGauge(prometheus.GaugeOpts{Name: "x_no_help"})
	reg.MustRegister(cv, noTotal, gv, sum, untyped, hist)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	bigCount := &dto.MetricFamily{Name: new("x_big_summary"), Help: new("Big."), Type: dto.MetricType_SUMMARY.Enum(),
		Metric: []*dto.Metric{{Summary: &dto.Summary{SampleCount: new(uint64(123456789)), SampleSum: new(1.5)}}}}
	plain := prometheus.NewRegistry()
	plain.MustRegister(noHelp)
	more, err := plain.Gather()
	if err != nil {
		t.Fatal(err)
	}
	mfs = append(mfs, bigCount)
	mfs = append(mfs, more...)
	mfs[len(mfs)-1].Help = nil

	taken := 0
	for _, f := range []Format{Text, OpenMetrics} {
		accept := "text/plain;version=0.0.4"
		if f == OpenMetrics {
			accept = "application/openmetrics-text;version=1.0.0"
		}
		// As the handler negotiates it.
		format := expfmt.NegotiateAccept(http.Header{"Accept": {accept}}, expfmt.DefaultOpenMetricsAcceptedFormats()...)
		for _, mf := range mfs {
			var want bytes.Buffer
			if err := expfmt.NewEncoder(&want, format).Encode(mf); err != nil {
				t.Fatal(err)
			}
			got, ok := AppendFamily([]byte("x"), f, mf)
			if mf.GetName() == "x_seconds" {
				if ok || string(got) != "x" {
					t.Errorf("%s: a histogram was taken: %q", mf.GetName(), got)
				}
				continue
			}
			if !ok {
				t.Errorf("format %d: %s refused", f, mf.GetName())
				continue
			}
			taken++
			if string(got[1:]) != want.String() {
				t.Errorf("format %d, %s:\n%s\nexpfmt:\n%s", f, mf.GetName(), got[1:], want.String())
			}
		}
	}
	if taken < 2*30 {
		t.Errorf("only %d families compared", taken)
	}
}
