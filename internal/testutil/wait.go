package testutil

import (
	"runtime"
	"strconv"
	"testing"
	"time"
)

// Patience is the deadline of a wait on something that runs on the wall
// clock (the built binary, Redis, promtool, goroutines doing real I/O): a
// hang guard generous enough for a machine whose every core is busy with
// other work (make test-loaded), never a bound a test asserts.
const Patience = time.Minute

// WaitUntil looks first after firstLook, then ever less often, up to
// every lastLook: a short wait ends within a few milliseconds, and a long
// one (a replica's walk, a lease taken over) does not spend the CPU the
// tests share on looks every 10 ms — on two cores, scraping three
// exporters' /metrics that often cost more CPU than the exporters did.
const (
	firstLook = 5 * time.Millisecond
	lastLook  = 100 * time.Millisecond
)

// WaitUntil polls cond until it holds (true) or timeout has passed (false).
// It is the one place the tests sleep on the wall clock between looks at
// something that does not run on a test's clock; code that takes a clock
// (Now, Sleep) is tested on testutil.Clock or in a testing/synctest bubble
// instead. In a synctest bubble the polling runs on the bubble's clock.
func WaitUntil(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for every := firstLook; !cond(); every = min(every*3/2, lastLook) {
		if time.Now().After(deadline) {
			return cond()
		}
		time.Sleep(every) // real time: what cond looks at runs on the wall clock
	}
	return true
}

// Slack is d stretched by how busy the machine is: d times the load average
// of the last minute per core, when that is over one (at most five times d,
// so that Slack(Patience) ends well within go test's default -timeout of
// 10 minutes: a wait that never ends fails with what it waited for, not
// with the package's timeout panic).
// The deadline of a wait on a real process (Redis, chromium, a TLS
// handshake, an exporter's start) is a hang guard, not a bound a test
// asserts; a fixed number of seconds that a quiet machine meets fails on a
// contributor's busy one, where every process runs that many times slower.
func Slack(d time.Duration) time.Duration {
	return time.Duration(float64(d) * min(max(loadPerCore(), 1), 5))
}

// loadPerCore is the load average of the last minute over the cores this
// process may use (0 when unknown).
func loadPerCore() float64 {
	load, _ := strconv.ParseFloat(procField("/proc/loadavg"), 64)
	return load / float64(runtime.NumCPU())
}

// Eventually fails t unless cond holds within timeout (Slack(Patience) when 0).
// what says what was awaited; seen, when given, what was last seen, for the
// failure message.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool, seen ...func() string) {
	t.Helper()
	if timeout == 0 {
		timeout = Slack(Patience)
	}
	if WaitUntil(timeout, cond) {
		return
	}
	msg := ""
	for _, s := range seen {
		msg += "\n" + s()
	}
	t.Fatalf("timed out after %s waiting for %s%s", timeout, what, msg)
}
