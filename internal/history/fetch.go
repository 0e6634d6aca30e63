package history

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// runner fetches the walks still to do.
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
	// walk of the same kind kept from an earlier run, or make the first
	// walk of each kind before planning.
	costs := map[kind]int{}
	for _, j := range all {
		if _, ok := costs[j.kind()]; ok {
			continue
		}
		if d, err := readDay(j.file(r.cfg.StateDir)); err == nil {
			costs[j.kind()] = d.Requests
		}
	}
	perSource := map[string]int{}
	var rest []job
	spent := 0
	for _, j := range todo {
		if _, ok := costs[j.kind()]; ok {
			rest = append(rest, j)
			continue
		}
		n, err := r.walk(ctx, j)
		if err != nil {
			return err
		}
		rep.step(n)
		costs[j.kind()], spent, perSource[j.def.Name] = n, spent+n, perSource[j.def.Name]+n
	}
	need := 0
	for _, j := range rest {
		need += costs[j.kind()]
		perSource[j.def.Name] += costs[j.kind()]
	}
	rep.plan(spent+need, "backfill: %d walks (%s): %d kept in %s from an earlier run, %d to fetch, %s requests (%s): %s requests to go for %d walks at %d/h (a walk costs what the first of its project, source and window did): ETA %s",
		len(all), r.cfg.describe(all), len(all)-len(todo), r.cfg.StateDir, len(todo), group(spent+need), bySource(all, perSource),
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
				n, err := r.walk(ctx, j)
				if err != nil {
					errc <- err
					cancel()
					return
				}
				rep.step(n)
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

// describe says what the walks are: projects, days, and each source's
// windows.
func (c *Config) describe(all []job) string {
	windows := map[string][]string{}
	var order []string
	for _, j := range all {
		ws, ok := windows[j.def.Name]
		if !ok {
			order = append(order, j.def.Name)
		}
		if !slices.Contains(ws, j.window.Name) {
			windows[j.def.Name] = append(ws, j.window.Name)
		}
	}
	parts := make([]string, len(order))
	for i, name := range order {
		parts[i] = name + " " + strings.Join(windows[name], ",")
	}
	days := int(c.To.Sub(c.From).Hours()/24) + 1
	return fmt.Sprintf("%d projects × %d days; %s", len(c.Projects), days, strings.Join(parts, ", "))
}

// bySource writes the requests of each source, in the order of the walks.
func bySource(all []job, requests map[string]int) string {
	var parts []string
	for _, j := range all {
		part := j.def.Name + " " + group(requests[j.def.Name])
		if !slices.Contains(parts, part) {
			parts = append(parts, part)
		}
	}
	return strings.Join(parts, ", ")
}

// walk fetches one job through its source and keeps it in the state
// directory; it returns the requests the walk sent.
func (r *runner) walk(ctx context.Context, j job) (int, error) {
	// A source made for the walk: the assistant's keeps what it read
	// between walks, and a walk of a past day reads that day alone.
	src, err := j.def.New(r.sourceConfig(j))
	if err != nil {
		return 0, fmt.Errorf("backfill %s: %w", j, err)
	}
	snap, err := src.Walk(ctx, j.query(r.cfg.TotalsOnly && src.TotalsOnly()))
	if err != nil {
		return 0, fmt.Errorf("backfill %s: %w", j, err)
	}
	data, err := record(j.def, snap, j.project.ID, windowLabel(j.window))
	if err != nil {
		return 0, err
	}
	if err := writeAtomic(j.file(r.cfg.StateDir), data); err != nil {
		return 0, err
	}
	return snap.Meta().Requests, nil
}

// sourceConfig is what j's source needs: the project read as the plan
// reads it, with the settings the backfill reads with (a list of the most
// searched queries, say, is no sum of days: only the total is backfilled).
func (r *runner) sourceConfig(j job) sources.Config {
	return sources.Config{
		Client: r.client, Location: j.project.Loc(), Now: r.cfg.Now,
		PageSize: r.cfg.PageSize, MaxPages: r.cfg.MaxPages, Paths: j.project.Paths,
		Settings: j.def.BackfillSettings(j.spec.Settings),
	}
}
