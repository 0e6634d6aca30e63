package history

import (
	"fmt"
	"strings"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/analytics"
	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// Flags are the backfill command's own settings.
type Flags struct {
	Config   Config
	from, to string
	labels   []string
	format   *string
}

// RegisterFlags adds the backfill command's flags to cmd.
func RegisterFlags(cmd config.Flagger) *Flags {
	f := &Flags{Config: Config{Concurrency: 1}}
	c := &f.Config
	cmd.Flag("from", "First day to backfill, YYYY-MM-DD in the project's time zone.").Required().StringVar(&f.from)
	cmd.Flag("to", "Last day to backfill, YYYY-MM-DD; it must be over (before today).").Required().StringVar(&f.to)
	cmd.Flag("output", "File to write the OpenMetrics text to (- is standard output), or with --output.format=blocks a new or empty directory for the blocks.").Default("-").StringVar(&c.Output)
	f.format = config.Enum(cmd, "output.format", "openmetrics: text for promtool tsdb create-blocks-from openmetrics; blocks: TSDB blocks to copy into Prometheus' data directory, made by promtool (--backfill.promtool).",
		FormatOpenMetrics, FormatOpenMetrics, FormatBlocks)
	cmd.Flag("backfill.promtool", "Prometheus' promtool, which makes the blocks of --output.format=blocks from the OpenMetrics text: a path, or a name looked up on PATH.").Default(DefaultPromtool).PlaceHolder("PATH").StringVar(&c.Promtool)
	cmd.Flag("backfill.state-dir", "Directory keeping each finished day, so that an interrupted backfill resumes without fetching them again. Default: OUTPUT.days next to --output, or ./mintlify-backfill.days with standard output, removed once the output is written.").StringVar(&c.StateDir)
	config.IntVar(cmd, "backfill.concurrency", "Days fetched at once.", &c.Concurrency)
	cmd.Flag("backfill.totals-only", "Fetch only site totals of visitors and views: one request per project, day and source, whatever the number of paths.").Default("false").BoolVar(&c.TotalsOnly)
	cmd.Flag("backfill.source", "Backfill only this source (repeatable), one of "+strings.Join(BackfilledNames(), ", ")+"; default: every one of these configured for the project.").StringsVar(&c.Sources)
	cmd.Flag("backfill.label", "Label NAME=VALUE added to every sample (repeatable), e.g. the job and instance labels of the exporter's scrape target, which Prometheus adds to scraped series but not to imported blocks.").StringsVar(&f.labels)
	return f
}

// Validate checks the flags and fills Config's dates and labels; each
// error names its flag.
func (f *Flags) Validate() error {
	c := &f.Config
	c.Format = *f.format
	if c.Concurrency < 1 || c.Concurrency > 64 {
		return fmt.Errorf("--backfill.concurrency: must be between 1 and 64, got %d", c.Concurrency)
	}
	for _, name := range c.Sources {
		def, ok := sources.ByName(name)
		if !ok || !Backfilled(def) {
			return fmt.Errorf("--backfill.source: %q cannot be backfilled: want one of %s (feedback and feedback items hold the present's lists and states, not a past day's)", name, strings.Join(BackfilledNames(), ", "))
		}
	}
	c.Labels = c.Labels[:0]
	for _, l := range f.labels {
		label, err := ParseLabel(l)
		if err != nil {
			return fmt.Errorf("--backfill.label: %w", err)
		}
		c.Labels = append(c.Labels, label)
	}
	var err error
	if c.From, err = parseDay(f.from); err != nil {
		return fmt.Errorf("--from: %w", err)
	}
	if c.To, err = parseDay(f.to); err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	if c.From.After(c.To) {
		return fmt.Errorf("--from: %s is after --to %s", f.from, f.to)
	}
	return nil
}

// parseDay reads YYYY-MM-DD as a date value (midnight UTC of that date).
func parseDay(s string) (time.Time, error) {
	d, err := time.Parse(analytics.DateLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("invalid date %q: want YYYY-MM-DD", s)
	}
	return d, nil
}
