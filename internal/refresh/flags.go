// The plan's flags (--analytics.*, and their deprecated --visitors.* names).

package refresh

import (
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/common/model"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
)

// Defaults of the plan's flags.
const (
	DefaultMinInterval   = 5 * time.Minute
	DefaultMaxStaleness  = time.Hour
	DefaultFinalDayDelay = 10 * time.Minute
)

// Flags are the plan's process-wide settings, from the command line.
type Flags struct {
	cfg Config
	// renames are the flags' old names (--visitors.*).
	renames config.Renames
}

// RegisterFlags adds the plan's flags to app.
func RegisterFlags(app config.Flagger) *Flags {
	f := &Flags{cfg: Config{MinInterval: DefaultMinInterval, MaxStaleness: DefaultMaxStaleness,
		FinalDayDelay: DefaultFinalDayDelay, PageSize: apiclient.MaxPageSize, SiteInterval: DefaultSiteInterval}}
	c := &f.cfg
	config.DurationVar(app, "analytics.min-interval", "Shortest interval between two refreshes of a project, source and window; the analytics budget may plan longer ones.", &c.MinInterval)
	config.DurationVar(app, "analytics.max-staleness", "How long past its planned refresh a window's counts are still served while refreshes fail. 0 keeps them forever.", &c.MaxStaleness)
	config.DurationVar(app, "analytics.final-day-delay", "How long after midnight the finished day is fetched once more, for its settled numbers (exported as window=\"yesterday\" until 01:00).", &c.FinalDayDelay)
	config.DurationVar(app, "analytics.site-totals-interval", "How often today's site totals of visitors and views are refreshed apart from their page walks, one request each (the budget may stretch it). 0 refreshes them only with the pages.", &c.SiteInterval)
	config.IntVar(app, "analytics.page-size", "Rows per request of visitors and views (1-"+strconv.Itoa(apiclient.MaxPageSize)+").", &c.PageSize)
	// The old names: every analytics flag was --visitors.* when visitors
	// was the one source.
	for _, r := range [][2]string{
		{"visitors.min-interval", "analytics.min-interval"}, {"visitors.cache-ttl", "analytics.min-interval"},
		{"visitors.max-staleness", "analytics.max-staleness"}, {"visitors.final-day-delay", "analytics.final-day-delay"},
		{"visitors.page-size", "analytics.page-size"},
	} {
		f.renames.Add(app, r[0], r[1])
	}
	return f
}

// Config is the validated plan configuration the flags describe (no
// projects), and a deprecation notice when an old flag name was used.
func (f *Flags) Config() (Config, string, error) {
	c := f.cfg
	notice := f.renames.Notice()
	switch {
	case c.MinInterval <= 0:
		return c, "", fmt.Errorf("%s: must be greater than 0", f.renames.Name("analytics.min-interval"))
	case c.PageSize < 1 || c.PageSize > apiclient.MaxPageSize:
		return c, "", fmt.Errorf("%s: must be between 1 and %d, got %d", f.renames.Name("analytics.page-size"), apiclient.MaxPageSize, c.PageSize)
	case c.FinalDayDelay >= FinalDayExport:
		return c, "", fmt.Errorf("%s: must be shorter than %s, while yesterday's numbers are exported", f.renames.Name("analytics.final-day-delay"), model.Duration(FinalDayExport))
	}
	if c.SiteInterval == 0 {
		c.SiteInterval = -1 // Config's "off"
	}
	return c, notice, nil
}
