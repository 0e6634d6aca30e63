// Package history backfills visitor numbers of past days: it walks the API
// day by day through the same client and analytics budget as the live
// exporter, keeps each finished day on disk so that an interrupted run
// resumes, and writes TSDB blocks for Prometheus' data directory, or
// OpenMetrics text that promtool turns into blocks. The samples carry the
// live series' names and labels (collector's mapping), so one query reads
// live and backfilled days alike.
package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/collector"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/visitors"
	"github.com/prometheus/common/model"
)

// Config configures a backfill.
type Config struct {
	Projects []string
	// Windows: the 1d value of every day is always written; an Nd window
	// adds the Nd value ending on each day.
	Windows  []visitors.Window
	Location *time.Location
	PageSize int
	MaxPages int
	Paths    visitors.PathPolicy
	// From and To are date values (midnight UTC of the date), inclusive.
	From, To time.Time
	// Format is FormatOpenMetrics (default) or FormatBlocks.
	Format string
	// Output is, for OpenMetrics, a file path or "-" (or "") for Stdout;
	// for blocks, a directory that does not exist yet or is empty.
	Output string
	// StateDir keeps finished days ("" = Output + ".days", or
	// DefaultStateDir when writing to Stdout, either removed once the
	// output is written; a given one is kept).
	StateDir string
	// Concurrency is how many walks run at once (default 1).
	Concurrency int
	// TotalsOnly fetches site totals alone, one request per project and day.
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
// than the visitor series' own and not reserved (__).
func ParseLabel(s string) (Label, error) {
	name, value, ok := strings.Cut(s, "=")
	if !ok || !labelNameRE.MatchString(name) || strings.HasPrefix(name, "__") {
		return Label{}, fmt.Errorf("invalid label %q: want NAME=VALUE with NAME a Prometheus label name, such as job=mintlify", s)
	}
	for _, f := range collector.DataFamilies {
		if slices.Contains(f.Labels, name) {
			return Label{}, fmt.Errorf("invalid label %q: %s is a label of the visitor series themselves", s, name)
		}
	}
	return Label{Name: name, Value: value}, nil
}

var labelNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// DefaultStateDir is where finished days are kept when writing to stdout.
const DefaultStateDir = "mintlify-backfill.days"

// job is one walk: a project's window ending on one day.
type job struct {
	project string
	window  visitors.Window
	day     time.Time
}

func (j job) file(dir string) string {
	return filepath.Join(dir, url.PathEscape(j.project), j.window.Name, j.day.Format(visitors.DateLayout)+".json")
}

// params are what a state directory's days depend on: resuming with other
// ones would mix two different backfills into one file.
type params struct {
	PageSize   int    `json:"pageSize"`
	MaxPaths   int    `json:"maxPaths"`
	Include    string `json:"include"`
	Exclude    string `json:"exclude"`
	TotalsOnly bool   `json:"totalsOnly"`
}

// Backfill fetches every project, window and day not yet in the state
// directory, then writes all of them as OpenMetrics to the output. It never
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
	}
	if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
		return fmt.Errorf("--backfill.state-dir: %w", err)
	}
	if err := checkParams(cfg); err != nil {
		return err
	}
	jobs := cfg.jobs()
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
			cfg.From.Format(visitors.DateLayout), model.Duration(retention), model.Duration(DefaultRetention), model.Duration(retention))
	}
	r := &runner{client: client, budget: b, cfg: cfg}
	if err := r.fetch(ctx, jobs, todo, progress); err != nil {
		return err
	}
	var written string
	var err error
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

// retention is how far back the history reaches from now: the retention
// Prometheus needs to keep all of it.
func (c *Config) retention() time.Duration {
	d := c.Now().Sub(visitors.DayStart(c.From, c.Location))
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
	return fmt.Sprintf("promtool tsdb create-blocks-from openmetrics %s ./blocks, copy ./blocks/* into Prometheus' data directory (/var/lib/prometheus/metrics2/ on Debian, its --storage.tsdb.path) and %s", file, keep)
}

func (c *Config) defaults() error {
	if len(c.Projects) == 0 {
		return errors.New("backfill: no project")
	}
	if c.From.IsZero() || c.To.IsZero() || c.From.After(c.To) {
		return errors.New("backfill: --from must be a day on or before --to")
	}
	if c.Location == nil {
		c.Location = time.UTC
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if !c.To.Before(visitors.Today(c.Now(), c.Location)) {
		return fmt.Errorf("--to: %s is not over yet in %s", c.To.Format(visitors.DateLayout), c.Location)
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

// windows are 1d plus every other configured window, shortest first.
func (c *Config) windows() []visitors.Window {
	out := []visitors.Window{{Name: "1d", Days: 1}}
	for _, w := range c.Windows {
		if !slices.ContainsFunc(out, func(o visitors.Window) bool { return o.Name == w.Name }) {
			out = append(out, visitors.Window{Name: w.Name, Days: w.Days})
		}
	}
	slices.SortFunc(out, func(a, b visitors.Window) int { return a.Days - b.Days })
	return out
}

// jobs lists every walk, day by day from the first.
func (c *Config) jobs() []job {
	var out []job
	for day := c.From; !day.After(c.To); day = visitors.AddDays(day, 1) {
		for _, p := range c.Projects {
			for _, w := range c.windows() {
				out = append(out, job{project: p, window: w, day: day})
			}
		}
	}
	return out
}

func checkParams(cfg Config) error {
	want := params{PageSize: cfg.PageSize, MaxPaths: cfg.Paths.MaxPaths, TotalsOnly: cfg.TotalsOnly}
	if cfg.Paths.Include != nil {
		want.Include = cfg.Paths.Include.String()
	}
	if cfg.Paths.Exclude != nil {
		want.Exclude = cfg.Paths.Exclude.String()
	}
	file := filepath.Join(cfg.StateDir, "params.json")
	data, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		data, _ = json.Marshal(want)
		return writeAtomic(file, data)
	}
	if err != nil {
		return fmt.Errorf("--backfill.state-dir: %w", err)
	}
	var got params
	if err := json.Unmarshal(data, &got); err != nil || got != want {
		return fmt.Errorf("--backfill.state-dir: %s holds days fetched with other settings (%s); resume with the same --visitors.page-size, --visitors.max-paths, path filters and --backfill.totals-only, or use another state directory",
			cfg.StateDir, strings.TrimSpace(string(data)))
	}
	return nil
}

// writeAtomic writes data to file through a temporary file and a rename, so
// that an interrupted run never leaves half a day behind.
func writeAtomic(file string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return fmt.Errorf("backfill state: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".tmp-*")
	if err != nil {
		return fmt.Errorf("backfill state: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("backfill state: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("backfill state: %w", err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return fmt.Errorf("backfill state: %w", err)
	}
	return nil
}

// runner fetches the days still to do.
type runner struct {
	client *apiclient.Client
	budget *budget.Budget
	cfg    Config
}

// fetch walks todo with cfg.Concurrency workers, reporting progress.
func (r *runner) fetch(ctx context.Context, all, todo []job, progress io.Writer) error {
	if len(todo) == 0 {
		fmt.Fprintf(progress, "backfill: all %d walks already fetched in %s\n", len(all), r.cfg.StateDir)
		return nil
	}
	fmt.Fprintf(progress, "backfill: %d walks (%d projects × %d days × %d windows): %d kept in %s from an earlier run, %d to fetch\n",
		len(all), len(r.cfg.Projects), len(all)/len(r.cfg.Projects)/len(r.cfg.windows()), len(r.cfg.windows()),
		len(all)-len(todo), r.cfg.StateDir, len(todo))
	rep := newReporter(progress, r.cfg.bar, r.budget, r.cfg.Now, len(todo))
	repCtx, stopRep := context.WithCancel(ctx)
	var repDone sync.WaitGroup
	repDone.Add(1)
	go func() {
		defer repDone.Done()
		rep.run(repCtx, r.cfg.ProgressEvery)
	}()
	defer func() {
		stopRep()
		repDone.Wait()
		rep.finish()
	}()

	// The cost of a walk is only known once one was made: learn it from a
	// day kept from an earlier run, or make the first walk of each project
	// before planning.
	costs := map[string]int{}
	for _, j := range all {
		if _, ok := costs[j.project]; !ok || r.cfg.TotalsOnly {
			costs[j.project] = 1
		}
		if s, err := readSnapshot(j.file(r.cfg.StateDir)); err == nil && !r.cfg.TotalsOnly {
			costs[j.project] = max(costs[j.project], s.Requests)
		}
	}
	rest := todo
	spent := 0
	if !r.cfg.TotalsOnly {
		probed := map[string]bool{}
		var later []job
		for _, j := range todo {
			if !probed[j.project] && j.window.Days == 1 {
				probed[j.project] = true
				s, err := r.walk(ctx, j)
				if err != nil {
					return err
				}
				rep.step(s.Requests)
				costs[j.project], spent = s.Requests, spent+s.Requests
				continue
			}
			later = append(later, j)
		}
		rest = later
	}
	need := 0
	for _, j := range rest {
		need += costs[j.project]
	}
	rep.plan(spent + need)
	rep.println("backfill: %s requests to go for %d walks (a walk costs what the first of its project did) at %d/h: ETA %s",
		group(need), len(rest), r.budget.Limit(), formatETA(eta(r.budget, need, r.cfg.Now())))

	work := make(chan job)
	errc := make(chan error, r.cfg.Concurrency)
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for range r.cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				s, err := r.walk(ctx, j)
				if err != nil {
					errc <- err
					cancel()
					return
				}
				rep.step(s.Requests)
			}
		}()
	}
feed:
	for _, j := range rest {
		select {
		case work <- j:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if err := parent.Err(); err != nil {
		return fmt.Errorf("backfill interrupted; run it again to resume: %w", err)
	}
	select {
	case err := <-errc:
		return fmt.Errorf("%w; finished days are kept, run it again to resume", err)
	default:
	}
	return nil
}

// walk fetches one job and keeps it in the state directory.
func (r *runner) walk(ctx context.Context, j job) (*visitors.Snapshot, error) {
	from, to := j.window.RangeEndingOn(j.day)
	q := apiclient.VisitorsQuery{DateFrom: from, DateTo: to}
	var s *visitors.Snapshot
	if r.cfg.TotalsOnly {
		totals, err := r.client.VisitorsTotals(ctx, j.project, q)
		if err != nil {
			return nil, fmt.Errorf("backfill %s %s ending %s: %w", j.project, j.window.Name, j.day.Format(visitors.DateLayout), err)
		}
		s = visitors.TotalsOnly(totals, from, to, r.cfg.Now())
	} else {
		res, err := r.client.AllVisitors(ctx, j.project, q, r.cfg.PageSize, r.cfg.MaxPages)
		if err != nil {
			return nil, fmt.Errorf("backfill %s %s ending %s: %w", j.project, j.window.Name, j.day.Format(visitors.DateLayout), err)
		}
		s = r.cfg.Paths.Build(res, from, to, r.cfg.Now())
	}
	data, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("backfill state: %w", err)
	}
	if err := writeAtomic(j.file(r.cfg.StateDir), data); err != nil {
		return nil, err
	}
	return s, nil
}

func readSnapshot(file string) (*visitors.Snapshot, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var s visitors.Snapshot
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("backfill state %s is damaged (delete it to fetch that day again): %w", file, err)
	}
	return &s, nil
}

var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

func escapeLabel(s string) string { return labelEscaper.Replace(s) }
func escapeHelp(s string) string  { return helpEscaper.Replace(s) }
