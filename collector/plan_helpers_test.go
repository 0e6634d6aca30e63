package collector

import (
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/refresh"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
	"github.com/mintlify-exporter/mintlify_exporter/internal/visitors"
)

// planConfig is a refresh.Config in the shape most tests want: one set of
// windows, zone and paths for every project.
type planConfig struct {
	refresh.Config
	Projects []string
	Windows  []visitors.Window
	Location *time.Location
	Paths    visitors.PathPolicy
	// Sources of every project (nil: visitors).
	Sources []sources.Spec
}

func (c planConfig) build() refresh.Config {
	out := c.Config
	out.Projects = nil
	if out.SiteInterval == 0 {
		out.SiteInterval = -1 // these tests count page walks alone
	}
	for _, id := range c.Projects {
		out.Projects = append(out.Projects, refresh.Project{Project: visitors.Project{ID: id, Windows: c.Windows, Location: c.Location, Paths: c.Paths}, Sources: c.Sources})
	}
	return out
}
