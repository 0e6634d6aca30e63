package collector

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"testing/synctest"

	"github.com/mintlify-exporter/mintlify_exporter/internal/logging"
)

// stubSource serves one gauge family, pre-encoded and as a collector.
type stubSource struct {
	desc  *prometheus.Desc
	block chan struct{} // when set, Encoded waits on it
}

func newStub() *stubSource {
	return &stubSource{desc: prometheus.NewDesc("stub_value", "A stub.", []string{"k"}, nil)}
}

func (s *stubSource) Describe(ch chan<- *prometheus.Desc) { ch <- s.desc }
func (s *stubSource) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(s.desc, prometheus.GaugeValue, 2, "a")
}

func (s *stubSource) Gatherer() prometheus.Gatherer {
	reg := prometheus.NewRegistry()
	reg.MustRegister(s)
	return reg
}

func (s *stubSource) Answer(e Encoding) Answer {
	if s.block != nil {
		<-s.block
	}
	g, _ := NewGauge("stub_value", []string{"k"})
	h, _ := Header(e.Format, "stub_value", "A stub.", false)
	c := g.Append(nil, e.Format, []string{"a"}, 2)
	if e.Gzip {
		h, c = Gzip(h, 1), Gzip(c, 1)
	}
	return Answer{Families: []Family{{Name: "stub_value", Header: h, Chunks: [][]byte{c}}}}
}

func serve(h http.Handler, accept, target string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", target, nil)
	req.Header.Set("Accept", accept)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestHandlerFormatsAndFilter(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "own_gauge", Help: "Own."}))
	h := NewHandler(reg, newStub(), Opts{Registry: reg})

	rec := serve(h, "text/plain;version=0.0.4", "/metrics")
	body := rec.Body.String()
	for _, want := range []string{"own_gauge 0\n", "# TYPE stub_value gauge\nstub_value{k=\"a\"} 2\n", "promhttp_metric_handler_errors_total{cause=\"encoding\"} 0"} {
		if !strings.Contains(body, want) {
			t.Errorf("text lacks %q:\n%s", want, body)
		}
	}
	rec = serve(h, "application/openmetrics-text;version=1.0.0", "/metrics?name[]=stub_value")
	if got, want := rec.Body.String(), "# HELP stub_value A stub.\n# TYPE stub_value gauge\nstub_value{k=\"a\"} 2.0\n# EOF\n"; got != want {
		t.Errorf("OpenMetrics filtered to stub_value:\n%s\nwant:\n%s", got, want)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text; version=1.0.0") {
		t.Errorf("Content-Type %q", ct)
	}
	// Protobuf goes through the registry, data included.
	rec = serve(h, string(expfmt.FmtProtoDelim), "/metrics")
	dec := expfmt.NewDecoder(rec.Body, expfmt.FmtProtoDelim)
	names := map[string]bool{}
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err != nil {
			break
		}
		names[mf.GetName()] = true
	}
	if !names["stub_value"] || !names["own_gauge"] {
		t.Errorf("protobuf answer holds %v", names)
	}
}

// In a synctest bubble: synctest.Wait returns once the first request is
// blocked holding the slot, no polling.
func TestHandlerMaxRequestsInFlight(t *testing.T) {
	synctest.Test(t, testHandlerMaxRequestsInFlight)
}

func testHandlerMaxRequestsInFlight(t *testing.T) {
	reg := prometheus.NewRegistry()
	src := newStub()
	src.block = make(chan struct{})
	h := NewHandler(reg, src, Opts{Registry: reg, MaxRequestsInFlight: 1})
	done := make(chan struct{})
	go func() { defer close(done); serve(h, "text/plain", "/metrics") }()
	synctest.Wait() // the first request holds the slot, blocked in src
	if len(h.(*handler).inFlight) == 0 {
		t.Fatal("the first request, blocked, holds no slot")
	}
	rec := serve(h, "text/plain", "/metrics")
	close(src.block)
	<-done
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("second request in flight: HTTP %d, want 503", rec.Code)
	}
}

// hungUpWriter is a scraper that closed the connection: every write fails
// as a write to a closed socket does.
type hungUpWriter struct{ header http.Header }

func (w *hungUpWriter) Header() http.Header { return w.header }
func (w *hungUpWriter) WriteHeader(int)     {}
func (w *hungUpWriter) Write([]byte) (int, error) {
	return 0, &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}
}

// TestScraperHangUpIsNotAnError: a scraper closing /metrics early reaches
// the error log as the error value itself, which the exporter's logger
// logs at debug, not at error; in every format, protobuf included.
func TestScraperHangUpIsNotAnError(t *testing.T) {
	for _, accept := range []string{"text/plain;version=0.0.4", "application/openmetrics-text;version=1.0.0",
		"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited"} {
		for _, gz := range []string{"", "gzip"} {
			var buf bytes.Buffer
			loggers, err := logging.New(&buf, "info", "logfmt")
			if err != nil {
				t.Fatal(err)
			}
			reg := prometheus.NewRegistry()
			reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "own_gauge", Help: "Own."}))
			h := NewHandler(reg, newStub(), Opts{ErrorLog: logging.PromHTTPErrorLogger{Logger: loggers.Logger}})
			req := httptest.NewRequest("GET", "/metrics", nil)
			req.Header.Set("Accept", accept)
			req.Header.Set("Accept-Encoding", gz)
			h.ServeHTTP(&hungUpWriter{header: http.Header{}}, req)
			if buf.Len() != 0 {
				t.Errorf("%s %s: a hang-up logged above debug:\n%s", accept, gz, buf.String())
			}
		}
	}
}

// answerGatherer is a Source whose Answer brings a gatherer of its own.
type answerGatherer struct{ g prometheus.Gatherer }

func (a answerGatherer) Answer(Encoding) Answer        { return Answer{Gatherer: a.g} }
func (a answerGatherer) Gatherer() prometheus.Gatherer { return a.g }

// TestAnswerGathererFamiliesStayWhole: the registry and the answer's
// gatherer are gathered one after the other; a family both hold is still
// written once, with the series of both.
func TestAnswerGathererFamiliesStayWhole(t *testing.T) {
	counter := func(reg *prometheus.Registry, label string) {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "shared_total", Help: "Shared."}, []string{"from"})
		c.WithLabelValues(label).Inc()
		reg.MustRegister(c)
	}
	reg, more := prometheus.NewRegistry(), prometheus.NewRegistry()
	counter(reg, "reg")
	counter(more, "answer")
	more.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{Name: "answer_only", Help: "Answer's."}))
	h := NewHandler(reg, answerGatherer{more}, Opts{})
	body := serve(h, "text/plain;version=0.0.4", "/metrics").Body.String()
	if n := strings.Count(body, "# TYPE shared_total counter"); n != 1 {
		t.Errorf("shared_total typed %d times, want once:\n%s", n, body)
	}
	for _, want := range []string{`shared_total{from="answer"} 1`, `shared_total{from="reg"} 1`, "answer_only 0"} {
		if !strings.Contains(body, want) {
			t.Errorf("lacks %s:\n%s", want, body)
		}
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	if _, err := parser.TextToMetricFamilies(strings.NewReader(body)); err != nil {
		t.Errorf("answer does not parse: %v\n%s", err, body)
	}
}
