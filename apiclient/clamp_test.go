package apiclient_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// TestAbsurdPollValuesRefused (issue 45, item 4): a value of a poll's
// answer no real answer can mean, on what every kind reads (get-job for
// agent jobs and automation runs, a deployment's status, a static
// export's status), is read as not given, counted as out_of_range at each
// read and warned of once per endpoint and field. Before, a static
// export's pageCount 2^70 was read as 4.6e18 with no sign.
func TestAbsurdPollValuesRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		endpoint, body, field string
		read                  func(context.Context, *apiclient.Client) (refused bool, err error)
	}{
		{apiclient.EndpointGetJob, `{"id":"j1","status":"completed","createdAt":"1970-01-01T00:00:00Z"}`, "createdAt",
			func(ctx context.Context, c *apiclient.Client) (bool, error) {
				j, err := c.GetJob(ctx, "p1", "j1")
				return err == nil && j.CreatedAt.IsZero(), err
			}},
		{apiclient.EndpointDeploymentStatus, `{"_id":"s1","projectId":"p1","status":"success","createdAt":"2026-01-01T00:00:00Z","endedAt":"9999-01-01T00:00:00Z"}`, "endedAt",
			func(ctx context.Context, c *apiclient.Client) (bool, error) {
				d, err := c.DeploymentStatus(ctx, "p1", "s1")
				return err == nil && d.EndedAt.IsZero() && !d.CreatedAt.IsZero(), err
			}},
		{apiclient.EndpointStaticExportStatus, `{"jobId":"e1","status":"running","progress":5,"pageCount":1180591620717411303424}`, "pageCount",
			func(ctx context.Context, c *apiclient.Client) (bool, error) {
				j, err := c.GetStaticExport(ctx, "e1")
				return err == nil && j.PageCount == 0 && j.Progress == 5, err
			}},
	} {
		t.Run(c.endpoint, func(t *testing.T) {
			t.Parallel()
			_, srv := serve(t, func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(c.body))
			})
			reg := prometheus.NewPedanticRegistry()
			logs := &testutil.SyncBuffer{}
			client := newClient(t, srv.URL, func(cfg *apiclient.Config) {
				cfg.Metrics, cfg.Logger = apiclient.NewMetrics(reg), log.NewLogfmtLogger(logs)
			})
			for range 3 {
				if refused, err := c.read(testCtx(t), client); !refused {
					t.Fatalf("the absurd %s was read as true (err %v)", c.field, err)
				}
			}
			if got := skippedSeries(t, reg, c.endpoint, apiclient.SkipOutOfRange); got != 3 {
				t.Errorf("mintlify_api_rows_skipped_total{endpoint=%q,reason=\"out_of_range\"} = %v, want 3 (one per read)", c.endpoint, got)
			}
			if n := strings.Count(logs.String(), "field="+c.field); n != 1 {
				t.Errorf("%d warnings of %s, want 1 for 3 reads:\n%s", n, c.field, logs.String())
			}
		})
	}
}
