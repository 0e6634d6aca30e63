package refresh

import (
	"net/http"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// fakeBudgetClient is a budget of limit on now (nil: the wall clock) and a
// client paying it, whose requests the fake serves in-process.
func fakeBudgetClient(t *testing.T, fake *fakeapi.Server, limit int, now func() time.Time) (*budget.Budget, *apiclient.Client) {
	t.Helper()
	b, err := budget.New(budget.Config{Limit: limit, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	client, err := apiclient.New(apiclient.Config{BaseURL: "http://fake.invalid", APIKey: simKey,
		HTTPClient: &http.Client{Transport: handlerTransport{fake}}, AnalyticsBudget: b})
	if err != nil {
		t.Fatal(err)
	}
	return b, client
}

// planConfig is a Config in the shape most tests want: one set of
// windows, zone and paths for every project.
type planConfig struct {
	Config
	Projects []string
	Windows  []analytics.Window
	Location *time.Location
	Paths    analytics.PathPolicy
	// Sources of every project (nil: visitors alone, which these tests
	// count walks of; a project without sources has the defaults).
	Sources []sources.Spec
}

func (c planConfig) build() Config {
	out := c.Config
	out.Projects = nil
	if out.SiteInterval == 0 {
		out.SiteInterval = -1 // these tests count page walks alone
	}
	specs := c.Sources
	if specs == nil {
		specs = []sources.Spec{{Name: sources.NameVisitors}}
	}
	for _, id := range c.Projects {
		out.Projects = append(out.Projects, Project{Project: analytics.Project{ID: id, Windows: c.Windows, Location: c.Location, Paths: c.Paths}, Sources: specs})
	}
	return out
}

// parseWindows are the windows of specs ("1d", "30d:6h"), failing t on a
// bad one.
func parseWindows(t testing.TB, specs ...string) []analytics.Window {
	t.Helper()
	var out []analytics.Window
	for _, s := range specs {
		w, err := analytics.ParseWindow(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, w)
	}
	return out
}
