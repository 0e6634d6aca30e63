package history

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// reporter shows a backfill's progress: a progress bar on a terminal, else
// a plain line per period (days done/total, requests, ETA), and always a
// last line.
type reporter struct {
	out   io.Writer
	bar   *progressbar.ProgressBar
	every time.Duration
	start time.Time

	mu       sync.Mutex
	walks    int
	done     int
	need     int
	spent    int
	lastLine time.Time
}

func newReporter(out io.Writer, walks, need int, every time.Duration) *reporter {
	r := &reporter{out: out, every: every, start: time.Now(), lastLine: time.Now(), walks: walks, need: need}
	if f, ok := out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		r.bar = progressbar.NewOptions(walks,
			progressbar.OptionSetWriter(out),
			progressbar.OptionSetDescription("backfill"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetItsString("walks"),
			progressbar.OptionShowIts(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionClearOnFinish(),
		)
	}
	return r
}

// remaining is the requests still expected.
func (r *reporter) remaining() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return max(r.need-r.spent, 0)
}

// step records one finished walk of requests requests.
func (r *reporter) step(requests int, eta func() time.Duration) {
	r.mu.Lock()
	r.done++
	r.spent += requests
	line := r.bar == nil && time.Since(r.lastLine) >= r.every
	if line {
		r.lastLine = time.Now()
	}
	done, walks, spent := r.done, r.walks, r.spent
	r.mu.Unlock()
	if r.bar != nil {
		_ = r.bar.Add(1)
		return
	}
	if line {
		fmt.Fprintf(r.out, "backfill: %d/%d walks, %s requests, ETA %s\n", done, walks, group(spent), formatETA(eta()))
	}
}

func (r *reporter) finish() {
	if r.bar != nil {
		_ = r.bar.Finish()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.out, "backfill: %d/%d walks, %s requests in %s\n", r.done, r.walks, group(r.spent), time.Since(r.start).Round(time.Second))
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
