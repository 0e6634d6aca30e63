package analytics

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// FuzzParseWindow parses fuzzed --visitors.window values: never a panic, and
// a window it accepts is sane and parses back from its name.
func FuzzParseWindow(f *testing.F) {
	for _, s := range []string{"1d", "7d", "30d:6h", "365d", "366d", "0d", "d", "1d:", "1d:0s", "1d:-5m", "01d", "7d:1y", "99999999999999999999d", "1d:1d:1d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, err := ParseWindow(s)
		if err != nil {
			return
		}
		if w.Days < 1 || w.Days > MaxWindowDays || w.Name != strconv.Itoa(w.Days)+"d" || w.Interval < 0 {
			t.Fatalf("%q: %+v", s, w)
		}
		if strings.Contains(s, ":") != (w.Interval > 0) {
			t.Fatalf("%q: interval %s", s, w.Interval)
		}
		back, err := ParseWindow(w.Name)
		if err != nil || back.Days != w.Days {
			t.Fatalf("%q: name %q parses to %+v (%v)", s, w.Name, back, err)
		}
		from, to := w.RangeEndingOn(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
		if from >= to {
			t.Fatalf("%q: range %s..%s", s, from, to)
		}
	})
}
