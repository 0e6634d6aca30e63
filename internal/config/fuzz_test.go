package config

import (
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
)

// FuzzDuration sets a duration flag from fuzzed text: never a panic, never
// negative, and what it prints parses back to the same value.
func FuzzDuration(f *testing.F) {
	for _, s := range []string{"5m", "0s", "7d", "1y", "1h30m", "-5m", "", "1.5h", "9223372036854775807ns", "106751d", "292y", "1w2d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var d time.Duration
		v := &durationValue{name: "d", d: &d}
		if err := v.Set(s); err != nil {
			return
		}
		if d < 0 {
			t.Fatalf("%q: negative %s", s, d)
		}
		var back time.Duration
		if err := (&durationValue{name: "d", d: &back}).Set(v.String()); err != nil || back != d {
			t.Fatalf("%q -> %s -> %q -> %s (%v)", s, d, v.String(), back, err)
		}
	})
}

// FuzzBytes sets a size flag from fuzzed text: never a panic, and what it
// prints parses back to the same value.
func FuzzBytes(f *testing.F) {
	for _, s := range []string{"64KiB", "1MiB", "65536", "0", "-1", "16MiB", "1.5KiB", "1kb", "8EiB", "9223372036854775807", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var n int64
		v := &bytesValue{name: "b", n: &n}
		if err := v.Set(s); err != nil {
			return
		}
		var back int64
		if err := (&bytesValue{name: "b", n: &back}).Set(v.String()); err != nil || back != n {
			t.Fatalf("%q -> %d -> %q -> %d (%v)", s, n, v.String(), back, err)
		}
		// The default a BytesVar shows must parse back too.
		app := kingpin.New("t", "")
		m := n
		BytesVar(app, "b", "", &m)
		if _, err := app.Parse(nil); err != nil || m != n {
			t.Fatalf("default of %d: %d (%v)", n, m, err)
		}
	})
}
