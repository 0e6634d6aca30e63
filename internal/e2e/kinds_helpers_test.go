package e2e

import (
	"encoding/json"
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/kinds/job"
	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
)

// jobList is the body of GET /api/v2/agent/{project}/jobs.
type jobList struct {
	Jobs []job.View `json:"jobs"`
}

// unknownCreateList is the body of GET .../unknown-creates.
type unknownCreateList struct {
	UnknownCreates []json.RawMessage `json:"unknownCreates"`
}

// deploymentRow is a row of the status page's deployments.
type deploymentRow struct {
	StatusID string `json:"status_id"`
	Status   string `json:"status"`
	Branch   string `json:"branch"`
}

// statusRows decodes the rows of the status report's section key (none:
// the gateway is off).
func statusRows[T any](t *testing.T, r status.Report, key string) []T {
	t.Helper()
	var rows []T
	if r.Jobs == nil {
		return nil
	}
	if err := r.Jobs.Rows(key, &rows); err != nil {
		t.Fatal(err)
	}
	return rows
}
