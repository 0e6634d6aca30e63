// Package history backfills past days of the analytics sources whose days
// can be read afterwards: unique visitors (every window) and the additive
// counts (page views, searches, assistant conversations). It walks each
// source through internal/sources, with the same client and analytics
// budget as the live exporter, keeps each finished walk on disk so that an
// interrupted run resumes, and writes OpenMetrics text, or TSDB blocks for
// Prometheus' data directory made of that text by promtool. The
// samples are what the sources' families emit, with the live series' names
// and labels, so one query reads live and backfilled days alike.
package history

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/refresh"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// Config configures a backfill.
type Config struct {
	// Projects are read as the live plan reads them (refresh.Project's
	// Specs): each with its own sources, windows, time zone (its days end
	// at its own midnight) and path policy.
	Projects []refresh.Project
	// PageSize and MaxPages are the plan's (0 = apiclient.MaxPageSize and
	// the apiclient's default cap).
	PageSize, MaxPages int
	// Sources narrows the backfilled sources to these names (nil = every
	// configured source whose days can be backfilled, see Backfilled).
	Sources []string
	// From and To are date values (midnight UTC of the date), inclusive.
	From, To time.Time
	// Format is FormatOpenMetrics (default) or FormatBlocks.
	Format string
	// Promtool makes the blocks of FormatBlocks: a path, or a name looked
	// up on PATH ("" = DefaultPromtool).
	Promtool string
	// Output is, for OpenMetrics, a file path or "-" (or "") for Stdout;
	// for blocks, a directory that does not exist yet or is empty.
	Output string
	// StateDir keeps finished days ("" = Output + ".days", or
	// DefaultStateDir when writing to Stdout, either removed once the
	// output is written; a given one is kept).
	StateDir string
	// Concurrency is how many walks run at once (default 1).
	Concurrency int
	// TotalsOnly fetches site totals alone: one request per project, day
	// and source for visitors and views (see sources.Source.TotalsOnly).
	TotalsOnly bool
	// Labels are added to every sample, before the series' own: the job
	// and instance labels Prometheus adds to scraped series (it adds none
	// to imported blocks), so that queries selecting them see history.
	Labels []Label
	// Stdout receives the OpenMetrics text when Output is "-" (default os.Stdout).
	Stdout io.Writer
	// Now is the clock (default time.Now); ProgressEvery the period of plain
	// progress lines (default 10s).
	Now           func() time.Time
	ProgressEvery time.Duration

	// ownState: StateDir is the default one, removed after success.
	ownState bool
	// bar forces the progress bar (tests); else it shows on a terminal.
	bar bool
}

// Output formats.
const (
	FormatOpenMetrics = "openmetrics"
	FormatBlocks      = "blocks"
)

// DefaultRetention is how long Prometheus keeps data unless told otherwise
// (--storage.tsdb.retention.time): a backfill reaching further back is
// deleted when Prometheus starts.
const DefaultRetention = 15 * 24 * time.Hour

// Label is one extra label of every backfilled sample.
type Label struct{ Name, Value string }

// ParseLabel reads NAME=VALUE. NAME must be a Prometheus label name other
// than the backfilled series' own and not reserved (__).
func ParseLabel(s string) (Label, error) {
	name, value, ok := strings.Cut(s, "=")
	if !ok || !labelNameRE.MatchString(name) || strings.HasPrefix(name, "__") {
		return Label{}, fmt.Errorf("invalid label %q: want NAME=VALUE with NAME a Prometheus label name, such as job=mintlify", s)
	}
	for _, def := range sources.All() {
		for _, f := range def.Families {
			if slices.Contains(f.Labels, name) {
				return Label{}, fmt.Errorf("invalid label %q: %s is a label of the series themselves", s, name)
			}
		}
	}
	return Label{Name: name, Value: value}, nil
}

var labelNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// DefaultStateDir is where finished days are kept when writing to stdout.
const DefaultStateDir = "mintlify-backfill.days"

// Backfill fetches every walk (project, source, window and day) not yet in
// the state directory, then writes all of them to the output. It never
// sends more than the budget allows in any rolling hour: it waits instead.
// Progress goes to progress: a bar on a terminal, plain lines otherwise.
func Backfill(ctx context.Context, client *apiclient.Client, b *budget.Budget, cfg Config, progress io.Writer) error {
	if err := cfg.defaults(); err != nil {
		return err
	}
	if cfg.Format == FormatBlocks {
		if err := checkBlocksDir(cfg.Output); err != nil {
			return err
		}
		if err := cfg.findPromtool(); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
		return fmt.Errorf("--backfill.state-dir: %w", err)
	}
	if err := checkParams(cfg); err != nil {
		return err
	}
	jobs, err := cfg.jobs()
	if err != nil {
		return err
	}
	var todo []job
	for _, j := range jobs {
		if _, err := os.Stat(j.file(cfg.StateDir)); errors.Is(err, os.ErrNotExist) {
			todo = append(todo, j)
		} else if err != nil {
			return fmt.Errorf("--backfill.state-dir: %w", err)
		}
	}
	retention := cfg.retention()
	if retention > DefaultRetention {
		fmt.Fprintf(progress, "backfill: warning: %s reaches back %s, beyond the %s Prometheus keeps by default: run it with --storage.tsdb.retention.time=%s or longer, or it deletes these days when it starts\n",
			cfg.From.Format(analytics.DateLayout), model.Duration(retention), model.Duration(DefaultRetention), model.Duration(retention))
	}
	r := &runner{client: client, budget: b, cfg: cfg}
	if err := r.fetch(ctx, jobs, todo, progress); err != nil {
		return err
	}
	var written string
	if cfg.Format == FormatBlocks {
		written, err = writeBlocks(ctx, cfg, jobs)
	} else {
		written, err = writeOpenMetrics(cfg, jobs)
	}
	if err != nil {
		return err
	}
	if cfg.ownState {
		if err := os.RemoveAll(cfg.StateDir); err != nil {
			return fmt.Errorf("backfill state: %w", err)
		}
	}
	fmt.Fprintf(progress, "backfill: done: %s; next: %s\n", written, cfg.nextStep(retention))
	return nil
}

// retention is how far back the history reaches from now, from the
// earliest midnight of --from among the projects' zones: the retention
// Prometheus needs to keep all of it.
func (c *Config) retention() time.Duration {
	var d time.Duration
	for i := range c.Projects {
		d = max(d, c.Now().Sub(analytics.DayStart(c.From, c.Projects[i].Loc())))
	}
	return (d + 24*time.Hour - 1).Truncate(24 * time.Hour) // whole days, rounded up
}

// nextStep says what to run once the output is written.
func (c *Config) nextStep(retention time.Duration) string {
	keep := fmt.Sprintf("start Prometheus with --storage.tsdb.retention.time=%s or longer (the default %s deletes older blocks)",
		model.Duration(max(retention, DefaultRetention)), model.Duration(DefaultRetention))
	if c.Format == FormatBlocks {
		return fmt.Sprintf("copy them into Prometheus' data directory (cp -r %s/* /var/lib/prometheus/metrics2/ on Debian, its --storage.tsdb.path) and %s", c.Output, keep)
	}
	file := c.Output
	if file == "" || file == "-" {
		file = "FILE"
	}
	// promtool's default makes a block of each 2h holding a sample: one a
	// day. Its (hidden) --max-block-duration makes blocks as ours are.
	return fmt.Sprintf("promtool %s, copy ./blocks/* into Prometheus' data directory (/var/lib/prometheus/metrics2/ on Debian, its --storage.tsdb.path) and %s", strings.Join(promtoolArgs(file, "./blocks"), " "), keep)
}

func (c *Config) defaults() error {
	if len(c.Projects) == 0 {
		return errors.New("backfill: no project")
	}
	if c.From.IsZero() || c.To.IsZero() || c.From.After(c.To) {
		return errors.New("backfill: --from must be a day on or before --to")
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	for i := range c.Projects {
		if loc := c.Projects[i].Loc(); !c.To.Before(analytics.Today(c.Now(), loc)) {
			return fmt.Errorf("--to: %s is not over yet in %s (project %s)", c.To.Format(analytics.DateLayout), loc, c.Projects[i].ID)
		}
	}
	if c.PageSize <= 0 {
		c.PageSize = apiclient.MaxPageSize
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 1
	}
	if c.Stdout == nil {
		c.Stdout = os.Stdout
	}
	if c.ProgressEvery <= 0 {
		c.ProgressEvery = 10 * time.Second
	}
	switch c.Format {
	case "":
		c.Format = FormatOpenMetrics
	case FormatOpenMetrics:
	case FormatBlocks:
		if c.Output == "" || c.Output == "-" {
			return errors.New("--output: blocks go into a directory, not standard output")
		}
	default:
		return fmt.Errorf("--output.format: unknown format %q (want %s or %s)", c.Format, FormatOpenMetrics, FormatBlocks)
	}
	if c.StateDir == "" {
		c.ownState = true
		c.StateDir = DefaultStateDir
		if c.Output != "" && c.Output != "-" {
			c.StateDir = filepath.Clean(c.Output) + ".days"
		}
	}
	return nil
}
