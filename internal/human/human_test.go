package human

import (
	"testing"
	"time"
)

// TestDuration: durations for people carry two or three significant units
// (issue 38, item 7: 1h0m0.29296875s and 1d5h59m55s were printed).
func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 320*time.Millisecond + 400*time.Microsecond: "320ms", 2437 * time.Millisecond: "2.4s",
		4*time.Minute + 10*time.Second + 300*time.Millisecond: "4m10s", 5 * time.Minute: "5m",
		time.Hour + 292968750*time.Microsecond/1000: "1h", 3*time.Hour + 5*time.Minute + 20*time.Second: "3h5m",
		29*time.Hour + 59*time.Minute + 55*time.Second: "30h", 29*time.Hour + 58*time.Minute + 5*time.Second: "29h58m",
		10 * time.Second: "10s", -90 * time.Second: "-1m30s",
	} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%v) = %q, want %q", d, got, want)
		}
	}
}
