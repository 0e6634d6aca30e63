package collector

import (
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
)

// Help escaping, as expfmt does it: OpenMetrics escapes double quotes too.
var (
	helpEscaper   = strings.NewReplacer("\\", `\\`, "\n", `\n`)
	omHelpEscaper = strings.NewReplacer("\\", `\\`, "\n", `\n`, "\"", `\"`)
)

// AppendFamily appends mf in format f, byte for byte as expfmt's encoder
// writes it, for the families a registry gathers per scrape: gauges,
// counters, untyped and summaries with legacy-valid names, without
// timestamps or exemplars. It reports false (and appends nothing)
// for any other family, which the caller encodes with expfmt. It skips
// what expfmt spends most of a small family's time on: a buffered writer
// per family, escaping checks of every name and a copy of the family.
func AppendFamily(b []byte, f Format, mf *dto.MetricFamily) ([]byte, bool) {
	if !appendable(mf) {
		return b, false
	}
	b = appendHeader(b, f, mf)
	name, typ := mf.GetName(), mf.GetType()
	for _, m := range mf.GetMetric() {
		switch typ {
		case dto.MetricType_COUNTER:
			b = appendSample(b, f, name, "", m.GetLabel(), "", 0)
			b = appendFloat(b, f, m.GetCounter().GetValue())
		case dto.MetricType_GAUGE:
			b = appendSample(b, f, name, "", m.GetLabel(), "", 0)
			b = appendFloat(b, f, m.GetGauge().GetValue())
		case dto.MetricType_UNTYPED:
			b = appendSample(b, f, name, "", m.GetLabel(), "", 0)
			b = appendFloat(b, f, m.GetUntyped().GetValue())
		case dto.MetricType_SUMMARY:
			b = appendSummary(b, f, name, m)
		}
		b = append(b, '\n')
	}
	return b, true
}

// appendable reports whether AppendFamily writes mf: a gauge, counter,
// untyped or summary with legacy-valid names, each metric of its type,
// without timestamps or exemplars.
func appendable(mf *dto.MetricFamily) bool {
	typ := mf.GetType()
	switch typ {
	case dto.MetricType_COUNTER, dto.MetricType_GAUGE, dto.MetricType_UNTYPED, dto.MetricType_SUMMARY:
	default:
		return false
	}
	if !legacyName(mf.GetName(), true) {
		return false
	}
	for _, m := range mf.GetMetric() {
		if m.TimestampMs != nil || (typ == dto.MetricType_COUNTER && (m.GetCounter() == nil || m.GetCounter().GetExemplar() != nil)) ||
			(typ == dto.MetricType_GAUGE && m.GetGauge() == nil) || (typ == dto.MetricType_UNTYPED && m.GetUntyped() == nil) ||
			(typ == dto.MetricType_SUMMARY && m.GetSummary() == nil) {
			return false
		}
		for _, l := range m.GetLabel() {
			if !legacyName(l.GetName(), false) {
				return false
			}
		}
	}
	return true
}

// appendHeader appends the family's HELP, TYPE and (OpenMetrics) UNIT
// lines. OpenMetrics names a counter's family without _total, and calls
// untyped (and counters without _total) unknown.
func appendHeader(b []byte, f Format, mf *dto.MetricFamily) []byte {
	name, typ := mf.GetName(), mf.GetType()
	typeName := name
	kind := strings.ToLower(typ.String())
	if f == OpenMetrics {
		switch {
		case typ == dto.MetricType_COUNTER && strings.HasSuffix(name, "_total"):
			typeName = name[:len(name)-len("_total")]
		case typ == dto.MetricType_COUNTER, typ == dto.MetricType_UNTYPED:
			kind = "unknown"
		}
	}
	if mf.Help != nil {
		b = append(b, "# HELP "...)
		b = append(b, typeName...)
		b = append(b, ' ')
		esc := helpEscaper
		if f == OpenMetrics {
			esc = omHelpEscaper
		}
		if strings.ContainsAny(mf.GetHelp(), "\\\n\"") {
			b = append(b, esc.Replace(mf.GetHelp())...)
		} else {
			b = append(b, mf.GetHelp()...)
		}
		b = append(b, '\n')
	}
	b = append(b, "# TYPE "...)
	b = append(b, typeName...)
	b = append(b, ' ')
	b = append(b, kind...)
	b = append(b, '\n')
	if f == OpenMetrics && mf.Unit != nil {
		b = append(b, "# UNIT "...)
		b = append(b, typeName...)
		b = append(b, ' ')
		b = append(b, omHelpEscaper.Replace(mf.GetUnit())...)
		b = append(b, '\n')
	}
	return b
}

// appendSummary appends a summary's quantiles, sum and count (the count an
// integer in OpenMetrics), without the last newline.
func appendSummary(b []byte, f Format, name string, m *dto.Metric) []byte {
	s := m.GetSummary()
	for _, q := range s.GetQuantile() {
		b = appendSample(b, f, name, "", m.GetLabel(), model.QuantileLabel, q.GetQuantile())
		b = appendFloat(b, f, q.GetValue())
		b = append(b, '\n')
	}
	b = appendSample(b, f, name, "_sum", m.GetLabel(), "", 0)
	b = appendFloat(b, f, s.GetSampleSum())
	b = append(b, '\n')
	b = appendSample(b, f, name, "_count", m.GetLabel(), "", 0)
	if f == OpenMetrics {
		return strconv.AppendUint(b, s.GetSampleCount(), 10)
	}
	return appendFloat(b, f, float64(s.GetSampleCount()))
}

// appendSample appends a sample's name, labels (and the extra label, when
// named) and the space before its value.
func appendSample(b []byte, f Format, name, suffix string, labels []*dto.LabelPair, extra string, extraValue float64) []byte {
	b = append(b, name...)
	b = append(b, suffix...)
	if len(labels) > 0 || extra != "" {
		b = append(b, '{')
		for i, l := range labels {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, l.GetName()...)
			b = append(b, '=', '"')
			if v := l.GetValue(); strings.ContainsAny(v, "\\\n\"") {
				b = append(b, labelValueEscaper.Replace(v)...)
			} else {
				b = append(b, v...)
			}
			b = append(b, '"')
		}
		if extra != "" {
			if len(labels) > 0 {
				b = append(b, ',')
			}
			b = append(b, extra...)
			b = append(b, '=', '"')
			b = appendFloat(b, f, extraValue)
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	return append(b, ' ')
}

// legacyName reports whether s is a metric name (colons allowed) or a
// label name that no escaping scheme changes ([a-zA-Z_:][a-zA-Z0-9_:]*).
func legacyName(s string, colons bool) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || (colons && c == ':') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9') {
			continue
		}
		return false
	}
	return true
}
