package blackbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// Scrape reads /metrics into "name{k=v,...}" -> value (labels sorted by
// name; histograms: their sample count), every family.
func Scrape(t *testing.T, base string) map[string]float64 {
	t.Helper()
	m, err := TryScrape(t.Context(), base)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TryScrape is Scrape for a loop that waits: it returns the error.
func TryScrape(ctx context.Context, base string) (map[string]float64, error) {
	body, status, err := testutil.Get(ctx, base+"/metrics")
	if err != nil || status != http.StatusOK {
		return nil, fmt.Errorf("scrape: HTTP %d %v", status, err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, lp := range m.GetLabel() {
				ls = append(ls, lp.GetName()+"="+lp.GetValue())
			}
			slices.Sort(ls)
			key := name + "{" + strings.Join(ls, ",") + "}"
			switch mf.GetType() {
			case dto.MetricType_HISTOGRAM:
				out[key] = float64(m.GetHistogram().GetSampleCount())
			case dto.MetricType_COUNTER:
				out[key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key] = m.GetGauge().GetValue()
			default:
				out[key] = m.GetUntyped().GetValue()
			}
		}
	}
	return out, nil
}

// WaitMetrics scrapes until every want series has its value.
func WaitMetrics(t *testing.T, base string, timeout time.Duration, want map[string]float64) map[string]float64 {
	t.Helper()
	var m map[string]float64
	Eventually(t, timeout, "metrics "+strings.Join(slices.Sorted(maps.Keys(want)), " "), func() bool {
		var err error
		if m, err = TryScrape(t.Context(), base); err != nil {
			return false
		}
		for k, v := range want {
			if got, ok := m[k]; !ok || got != v {
				return false
			}
		}
		return true
	})
	return m
}

// Refreshed is the series saying project's window was walked with success.
func Refreshed(project, window string) string {
	return "mintlify_analytics_refresh_success{project=" + project + ",scope=pages,source=visitors,window=" + window + "}"
}

// DataSeries are the series read from the API for project (not the
// exporter's own bookkeeping).
func DataSeries(m map[string]float64, project string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if (strings.HasPrefix(k, "mintlify_site_") || strings.HasPrefix(k, "mintlify_page_")) && strings.Contains(k, "project="+project+",") {
			out[k] = v
		}
	}
	return out
}

// PostReload sends POST /-/reload and returns the status and the JSON
// body's fields.
func PostReload(t *testing.T, base string) (int, map[string]string) {
	t.Helper()
	return CallReload(t, http.MethodPost, base)
}

// CallReload sends /-/reload with method and returns the status and the
// JSON body's fields.
func CallReload(t *testing.T, method, base string) (int, map[string]string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, base+"/-/reload", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]string
	if err := json.Unmarshal(data, &body); err != nil {
		t.Fatalf("%s /-/reload: HTTP %d, body not JSON: %q", method, resp.StatusCode, data)
	}
	return resp.StatusCode, body
}

// StatusReport reads the status page as JSON.
func StatusReport(t *testing.T, base string) status.Report {
	t.Helper()
	r, err := TryStatusReport(base)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TryStatusReport reads the status page's JSON, for a loop that waits
// for an exporter still starting.
func TryStatusReport(base string) (status.Report, error) {
	var r status.Report
	body, code, err := testutil.Get(context.Background(), base+"/?format=json")
	if err != nil || code != http.StatusOK {
		return r, fmt.Errorf("status page: HTTP %d %v", code, err)
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		return r, fmt.Errorf("status page: %w", err)
	}
	return r, nil
}

// PostJob submits a job for project and returns the HTTP status and the
// job's id.
func PostJob(t *testing.T, base, project, prompt string) (int, string) {
	t.Helper()
	resp, err := http.Post(base+"/api/v2/agent/"+project+"/job", "application/json", strings.NewReader(`{"prompt":"`+prompt+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var job struct {
		ID string `json:"id"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&job)
	return resp.StatusCode, job.ID
}

// SubmitKeyed posts a prompt with an Idempotency-Key; it returns the HTTP
// status and the job id (2xx) or the error message.
func SubmitKeyed(client *http.Client, url, key, prompt string) (int, string, error) {
	body, _ := json.Marshal(map[string]string{"prompt": prompt})
	req, err := http.NewRequest("POST", url, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", err
	}
	var v struct {
		ID    string `json:"id"`
		Error string `json:"error"`
	}
	_ = json.Unmarshal(data, &v)
	if resp.StatusCode/100 == 2 {
		return resp.StatusCode, v.ID, nil
	}
	return resp.StatusCode, v.Error, nil
}

// GetBody GETs url and returns its body and status.
func GetBody(url string) ([]byte, int, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return b, resp.StatusCode, err
}
