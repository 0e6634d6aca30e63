//go:build conformance

package conformance

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil/blackbox"
)

// mockProjects are the projects walked against the mock: each walk reads
// other random answers, so more projects try more of them.
const mockProjects = 5

// TestMockAnswers, part 1: the exporter with every source, two windows
// and the top queries against `prism mock -d` serving the vendor's
// analytics file (random answers valid under its schema: negative counts,
// ratios far above 1, strings for times, keys it does not name, hasMore
// without a cursor). Every walk must end ok, the values no answer can mean
// skipped and counted, and /metrics hold nothing absurd.
func TestMockAnswers(t *testing.T) {
	t.Parallel()
	mock := prism(t, "mock", "-d", reference()+"/analytics.openapi.json")
	rt, url := newRouter(t, map[string]string{"": mock})
	x := mockExporter(t, url)
	demands := walked(t, x.Base)
	exposition, _, err := testutil.Get(t.Context(), x.Base+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	problems, figures := judgeMock(demands, exposition)
	tl := tallyOf(rt.exchanges())
	t.Logf("part 1, prism mock -d: %s; %s", figures, tl)
	for _, p := range problems {
		t.Error(p)
	}
	// The mock judges the requests too: it refuses one its schema does not
	// allow.
	if tl.requestViolations > 0 {
		t.Errorf("%d requests the reference does not allow", tl.requestViolations)
	}
}

// mockExporter starts the exporter on every source of mockProjects
// projects, walked once each, against the API at url.
func mockExporter(t *testing.T, url string) *testutil.Exporter {
	t.Helper()
	args := []string{"--mintlify.api-url=" + url, "--mintlify.max-retries=0", "--mintlify.analytics-budget=10000",
		"--analytics.min-interval=1h", "--analytics.window=1d", "--analytics.window=7d", "--analytics.search-top-queries=20",
		"--analytics.timezone=" + blackbox.NoonZone()}
	for i := range mockProjects {
		args = append(args, fmt.Sprintf("--mintlify.project=p%d", i+1))
	}
	for _, d := range sources.All() {
		args = append(args, "--analytics.source="+d.Name)
	}
	return exporter(t, args...)
}

// judgeMock lists what is wrong in a run against random answers (a walk
// not ok, no skip counted, an absurd sample) and sums it up.
func judgeMock(demands []statusDemand, exposition string) (problems []string, figures string) {
	ok, skipped, totals := 0, 0, 0
	bySource := map[string]bool{}
	for _, d := range demands {
		if _, seen := bySource[d.Source]; !seen {
			bySource[d.Source] = true
		}
		if d.Result != "ok" {
			bySource[d.Source] = false
			problems = append(problems, fmt.Sprintf("%s/%s/%s: walk %s, want ok", d.Project, d.Source, d.Window, d.Result))
			continue
		}
		ok++
		skipped += d.SkippedRows
		if d.TotalsSkipped {
			totals++
		}
	}
	sourcesOK := 0
	for _, good := range bySource {
		if good {
			sourcesOK++
		}
	}
	absurd := absurdSamples(exposition)
	problems = append(problems, absurd...)
	counted := skippedCounted(exposition)
	if counted == 0 {
		problems = append(problems, "mintlify_api_rows_skipped_total counts nothing: random answers were all read?")
	}
	figures = fmt.Sprintf("%d of %d sources walk ok (%d of %d walks), %d values skipped and counted (%d site totals), %d absurd samples",
		sourcesOK, len(bySource), ok, len(demands), counted, totals, len(absurd))
	return problems, figures
}

// skippedCounted is the sum of mintlify_api_rows_skipped_total.
func skippedCounted(exposition string) int {
	mfs, err := parse(exposition)
	if err != nil {
		return 0
	}
	n := 0.0
	for _, m := range mfs["mintlify_api_rows_skipped_total"].GetMetric() {
		n += m.GetCounter().GetValue()
	}
	return int(n)
}

// maxLabelValues bounds the distinct values of one label in one family:
// paths.max (1,000) is the largest bound of the exporter's labels.
const maxLabelValues = 1000

// absurdSamples lists the samples of the exporter's own families that no
// real answer can mean: NaN or infinite, negative, a ratio above 1, a label
// value over the bound, or more distinct values of a label than any bound
// allows.
func absurdSamples(exposition string) []string {
	mfs, err := parse(exposition)
	if err != nil {
		return []string{"/metrics does not parse: " + err.Error()}
	}
	var out []string
	for name, mf := range mfs {
		if !strings.HasPrefix(name, "mintlify_") {
			continue
		}
		values := map[string]map[string]bool{}
		for _, m := range mf.GetMetric() {
			var v float64
			switch {
			case m.Gauge != nil:
				v = m.GetGauge().GetValue()
			case m.Counter != nil:
				v = m.GetCounter().GetValue()
			case m.Untyped != nil:
				v = m.GetUntyped().GetValue()
			}
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
				if len(l.GetValue()) > bounded.MaxLabelBytes {
					out = append(out, fmt.Sprintf("%s: label %s of %d bytes, over %d", name, l.GetName(), len(l.GetValue()), bounded.MaxLabelBytes))
				}
				if values[l.GetName()] == nil {
					values[l.GetName()] = map[string]bool{}
				}
				values[l.GetName()][l.GetValue()] = true
			}
			series := name + "{" + strings.Join(labels, ",") + "}"
			switch {
			case math.IsNaN(v) || math.IsInf(v, 0):
				out = append(out, fmt.Sprintf("%s = %v", series, v))
			case v < 0:
				out = append(out, fmt.Sprintf("%s = %v, negative", series, v))
			case strings.HasSuffix(name, "_ratio") && v > 1:
				out = append(out, fmt.Sprintf("%s = %v, a ratio above 1", series, v))
			}
		}
		for l, vs := range values {
			if len(vs) > maxLabelValues {
				out = append(out, fmt.Sprintf("%s: %d values of label %s, over %d", name, len(vs), l, maxLabelValues))
			}
		}
	}
	return out
}

func parse(exposition string) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(strings.NewReader(exposition))
}

// TestMockJudgeCanFail: part 1's judge finds a walk that is not ok, no
// skip counted, and each kind of absurd sample (the run against the mock
// itself cannot be made to fail on demand: its answers are random).
func TestMockJudgeCanFail(t *testing.T) {
	demands := []statusDemand{{"p1", "visitors", "1d", "ok", 0, false}, {"p1", "views", "1d", "server_error", 0, false}}
	exposition := `# TYPE mintlify_site_page_views gauge
mintlify_site_page_views{project="p1",window="1d",traffic="human"} -1
mintlify_site_page_views{project="p1",window="1d",traffic="ai"} NaN
# TYPE mintlify_search_query_click_through_ratio gauge
mintlify_search_query_click_through_ratio{project="p1",window="1d",query="q"} 1.5
# TYPE mintlify_page_views gauge
mintlify_page_views{project="p1",window="1d",path="` + strings.Repeat("x", bounded.MaxLabelBytes+1) + `",traffic="ai"} 1
# TYPE mintlify_api_rows_skipped_total counter
mintlify_api_rows_skipped_total{endpoint="views",reason="negative"} 0
`
	problems, figures := judgeMock(demands, exposition)
	t.Logf("%s: %q", figures, problems)
	for _, want := range []string{"p1/views/1d: walk server_error", "counts nothing", "-1, negative", "= NaN", "ratio above 1", "bytes, over"} {
		if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, want) }) {
			t.Errorf("no problem says %q", want)
		}
	}
	if !strings.HasPrefix(figures, "1 of 2 sources walk ok") {
		t.Errorf("figures %q, want 1 of 2 sources ok", figures)
	}
}
