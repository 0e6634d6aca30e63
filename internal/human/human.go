// Package human writes values for people: logs, the status page's text,
// `config check`. Go's own form of a duration carries every nanosecond
// (1h0m0.29296875s), and Prometheus's counts days (1d5h59m55s); a person
// wants two or three significant units.
package human

import (
	"strings"
	"time"
)

// Duration writes d rounded to what matters at its size, in Go's units:
// 320ms, 2.4s, 4m10s, 3h5m, 29h59m; whole units lose their zero tails
// (1h, not 1h0m0s). Negative durations keep their sign.
func Duration(d time.Duration) string {
	if d < 0 {
		return "-" + Duration(-d)
	}
	switch {
	case d == 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Hour:
		d = d.Round(time.Second)
	default:
		d = d.Round(time.Minute)
	}
	s := d.String()
	// 1h0m0s → 1h, 5m0s → 5m, 1h30m0s → 1h30m.
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
