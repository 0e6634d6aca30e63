package status

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
)

// TestDeploymentsAreEscapedAndBounded: the deployments of a report, whose
// branch, sha and preview URL come from clients and the API, are shown at
// most MaxDeployments of them, each value at most bounded.MaxLabelBytes,
// and escaped in the page (a branch that is markup stays text).
func TestDeploymentsAreEscapedAndBounded(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	long := strings.Repeat("y", 1<<20)
	var deps []Deployment
	for i := range 25 {
		deps = append(deps, Deployment{Project: "docs", Kind: "preview", StatusID: fmt.Sprintf("dep_%02d", i), Status: "success",
			Branch: `<script>alert("b")</script>`, SHA: long, PreviewURL: `javascript:alert(1)//` + long, CreatedAt: at.Add(-time.Minute), EndedAt: at})
	}
	deps[0].Status = "failure"
	rep := Report{GeneratedAt: at, Jobs: &Jobs{Projects: []ProjectJobs{{Project: "docs"}}, Deployments: deps}}
	h := Handler(func(context.Context) Report { return rep }, Options{})
	code, _, page := get(t, h, http.MethodGet, "/")
	if code != http.StatusOK || len(page) > 128<<10 {
		t.Fatalf("page: %d, %d bytes", code, len(page))
	}
	if strings.Contains(page, `<script>alert`) || !strings.Contains(page, `&lt;script&gt;alert(&#34;b&#34;)&lt;/script&gt;`) {
		t.Error("the branch is not escaped in the page")
	}
	if strings.Contains(page, `href="javascript`) {
		t.Error("a preview URL became a link")
	}
	if n := strings.Count(page, `class="deployrow"`); n != MaxDeployments {
		t.Errorf("%d deployments in the page, want %d", n, MaxDeployments)
	}
	_, _, body := get(t, h, http.MethodGet, "/?format=json")
	if strings.Contains(body, strings.Repeat("y", bounded.MaxLabelBytes+1)) || strings.Contains(page, strings.Repeat("y", bounded.MaxLabelBytes+1)) {
		t.Error("a value longer than the cap is shown")
	}
	var got Report
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	if d := got.Jobs.Deployments; len(d) != MaxDeployments || d[0].StatusID != "dep_00" || d[0].Status != "failure" || d[0].SHA != bounded.Label(long) {
		t.Errorf("JSON deployments: %d, first %+v", len(d), d[0].StatusID)
	}
}
