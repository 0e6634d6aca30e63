package refresh

import (
	"fmt"
	"strconv"
	"time"

	"github.com/prometheus/common/model"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/flagvalue"
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
	// cacheTTL is the old name of --visitors.min-interval.
	cacheTTL    time.Duration
	cacheTTLSet bool
}

// RegisterFlags adds the plan's flags to app.
func RegisterFlags(app flagvalue.Flagger) *Flags {
	f := &Flags{cfg: Config{MinInterval: DefaultMinInterval, MaxStaleness: DefaultMaxStaleness,
		FinalDayDelay: DefaultFinalDayDelay, PageSize: apiclient.MaxPageSize, SiteInterval: DefaultSiteInterval}}
	c := &f.cfg
	flagvalue.DurationVar(app, "visitors.min-interval", "Shortest interval between two refreshes of a project and window; the analytics budget may plan longer ones.", &c.MinInterval)
	app.Flag("visitors.cache-ttl", "Deprecated name of --visitors.min-interval.").Hidden().IsSetByUser(&f.cacheTTLSet).
		SetValue(flagvalue.NewDuration("visitors.cache-ttl", &f.cacheTTL))
	flagvalue.DurationVar(app, "visitors.max-staleness", "How long past its planned refresh a window's counts are still served while refreshes fail. 0 keeps them forever.", &c.MaxStaleness)
	flagvalue.DurationVar(app, "visitors.final-day-delay", "How long after midnight the finished day is fetched once more, for its settled numbers (exported as window=\"yesterday\" until 01:00).", &c.FinalDayDelay)
	flagvalue.DurationVar(app, "analytics.site-totals-interval", "How often today's site totals of visitors and views are refreshed apart from their page walks, one request each (the budget may stretch it). 0 refreshes them only with the pages.", &c.SiteInterval)
	flagvalue.IntVar(app, "visitors.page-size", "Rows per visitors request (1-"+strconv.Itoa(apiclient.MaxPageSize)+").", &c.PageSize)
	return f
}

// Config is the validated plan configuration the flags describe (no
// projects), and a deprecation notice when an old flag name was used.
func (f *Flags) Config() (Config, string, error) {
	c := f.cfg
	notice, name := "", "--visitors.min-interval"
	if f.cacheTTLSet {
		c.MinInterval, name = f.cacheTTL, "--visitors.cache-ttl"
		notice = "--visitors.cache-ttl is deprecated: it sets the shortest refresh interval; use --visitors.min-interval"
	}
	switch {
	case c.MinInterval <= 0:
		return c, "", fmt.Errorf("%s: must be greater than 0", name)
	case c.PageSize < 1 || c.PageSize > apiclient.MaxPageSize:
		return c, "", fmt.Errorf("--visitors.page-size: must be between 1 and %d, got %d", apiclient.MaxPageSize, c.PageSize)
	case c.FinalDayDelay >= FinalDayExport:
		return c, "", fmt.Errorf("--visitors.final-day-delay: must be shorter than %s, while yesterday's numbers are exported", model.Duration(FinalDayExport))
	}
	if c.SiteInterval == 0 {
		c.SiteInterval = -1 // Config's "off"
	}
	return c, notice, nil
}
