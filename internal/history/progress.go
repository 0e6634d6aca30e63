package history

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
)

// reporter shows a backfill's progress: on a terminal a bar, its
// description redrawn every second; otherwise a line every period. Both
// say how many walks and requests are done, whether the backfill waits for
// the analytics budget and when its next request leaves, and an ETA that
// counts those waits (most of a long backfill is waiting).
type reporter struct {
	out    io.Writer
	bar    *progressbar.ProgressBar
	budget *budget.Budget
	now    func() time.Time
	start  time.Time

	// out is written from the ticker and the walks' goroutine: one at a time.
	outMu sync.Mutex

	mu    sync.Mutex
	walks int
	done  int
	// need is the requests all walks are expected to take (0 while a
	// walk's cost is unknown), spent those sent by finished walks.
	need, spent int
	planned     bool
}

func newReporter(out io.Writer, bar bool, b *budget.Budget, now func() time.Time, walks int) *reporter {
	r := &reporter{out: out, budget: b, now: now, start: now(), walks: walks}
	if f, ok := out.(*os.File); bar || ok && term.IsTerminal(int(f.Fd())) {
		r.bar = progressbar.NewOptions(walks,
			progressbar.OptionSetWriter(out),
			progressbar.OptionSetDescription("backfill"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetItsString("walks"),
			// The bar's own prediction extrapolates the pace so far, which
			// a free burst makes look like seconds for what takes an hour
			// of budget: the ETA is in the description instead.
			progressbar.OptionSetPredictTime(false),
			progressbar.OptionSetElapsedTime(false),
			progressbar.OptionClearOnFinish(),
		)
	}
	return r
}

// run redraws the bar every second, or writes a line every period, until
// ctx ends.
func (r *reporter) run(ctx context.Context, every time.Duration) {
	if r.bar != nil {
		every = time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.show()
		}
	}
}

// show writes the state now: the bar's description, or a line. Before the
// plan (while the first walk of each kind learns its cost) it says only
// that it waits for the budget, so that the plan is the first line.
func (r *reporter) show() {
	r.mu.Lock()
	planned := r.planned
	r.mu.Unlock()
	if !planned && r.budget.Free() > 0 {
		return
	}
	s := r.status()
	r.outMu.Lock()
	defer r.outMu.Unlock()
	if r.bar != nil {
		r.bar.Describe(s)
		return
	}
	fmt.Fprintf(r.out, "backfill: %s\n", s)
}

// println writes a line of its own, above the bar if there is one.
func (r *reporter) println(format string, args ...any) {
	r.outMu.Lock()
	defer r.outMu.Unlock()
	if r.bar != nil {
		_ = r.bar.Clear()
	}
	fmt.Fprintf(r.out, format+"\n", args...)
}

// plan sets the requests all walks are expected to take and writes the
// plan's line. The line is written before the plan counts as made, so that
// no status line of the ticker can come first.
func (r *reporter) plan(need int, format string, args ...any) {
	r.println(format, args...)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.need, r.planned = need, true
}

// step records one finished walk of requests requests.
func (r *reporter) step(requests int) {
	r.mu.Lock()
	r.done++
	r.spent += requests
	r.mu.Unlock()
	if r.bar != nil {
		r.outMu.Lock()
		_ = r.bar.Add(1)
		r.outMu.Unlock()
	}
}

// status is what the backfill is doing now, in one line.
func (r *reporter) status() string {
	r.mu.Lock()
	done, walks, need, spent := r.done, r.walks, r.need, r.spent
	r.mu.Unlock()
	s := fmt.Sprintf("%d/%d walks, %s", done, walks, group(spent))
	if need > 0 {
		s += "/" + group(max(need, spent))
	}
	s += " requests"
	now := r.now()
	if r.budget.Free() == 0 && done < walks {
		next := r.budget.NextFree(1)
		s += fmt.Sprintf("; waiting for the analytics budget (%d/h): next request at %s (in %s)",
			r.budget.Effective(), next.Local().Format(time.TimeOnly), formatWait(next.Sub(now)))
	}
	if need > 0 && done < walks {
		s += "; ETA " + formatETA(eta(r.budget, max(need-spent, 0), now))
	}
	return s
}

// finish writes the last progress line: what was fetched, in how long.
func (r *reporter) finish() {
	r.outMu.Lock()
	defer r.outMu.Unlock()
	if r.bar != nil {
		_ = r.bar.Finish()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.out, "backfill: fetched %d/%d walks, %s requests in %s\n", r.done, r.walks, group(r.spent), r.now().Sub(r.start).Round(time.Second))
}

// eta is how long n more requests take at b's pace: what is free now
// leaves at once, then each waits for a slot of the rolling window. The
// k-th request of a round of limit ones leaves when k requests fit, and
// every further round one window later.
func eta(b *budget.Budget, n int, now time.Time) time.Duration {
	if n <= 0 {
		return 0
	}
	limit := b.Effective()
	rounds, k := (n-1)/limit, (n-1)%limit+1
	at := b.NextFree(k).Add(time.Duration(rounds) * b.Window())
	return max(at.Sub(now), 0)
}

// group writes n with thousands separators: 3650 -> "3,650".
func group(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// formatETA writes a duration in days, hours and minutes: "3 d 19 h".
func formatETA(d time.Duration) string {
	if d < time.Minute {
		return "under a minute"
	}
	d = d.Round(time.Minute)
	days, hours, mins := int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour), int(d%time.Hour/time.Minute)
	switch {
	case days > 0:
		return fmt.Sprintf("%d d %d h", days, hours)
	case hours > 0:
		return fmt.Sprintf("%d h %d min", hours, mins)
	}
	return fmt.Sprintf("%d min", mins)
}

// formatWait writes a wait to the second under a minute: "42 s", else as
// formatETA does.
func formatWait(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%d s", int(max(d, 0).Round(time.Second)/time.Second))
	}
	return formatETA(d)
}
