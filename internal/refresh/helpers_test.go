package refresh

import (
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/visitors"
)

// planConfig is a Config in the shape most tests want: one set of
// windows, zone and paths for every project.
type planConfig struct {
	Config
	Projects []string
	Windows  []visitors.Window
	Location *time.Location
	Paths    visitors.PathPolicy
}

func (c planConfig) build() Config {
	out := c.Config
	out.Projects = nil
	if out.SiteInterval == 0 {
		out.SiteInterval = -1 // these tests count page walks alone
	}
	for _, id := range c.Projects {
		out.Projects = append(out.Projects, Project{Project: visitors.Project{ID: id, Windows: c.Windows, Location: c.Location, Paths: c.Paths}})
	}
	return out
}
