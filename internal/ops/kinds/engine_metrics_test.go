package kinds_test

import (
	"context"
	"strings"
	"testing"
	"time"

	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
)

// TestEngineMetricsGolden: the engine's own families, over the operations
// of every kind: the poll interval, how overdue the most overdue poll of a
// project is (a project ahead of schedule reads 0), how late each poll
// was sent (an early one observed as 0), and the state's health.
func TestEngineMetricsGolden(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	e.open(e.config("p1", "p2"))
	e.create("p1", "#fake:pr:1h")
	e.tick() // polled at t0+10s: next at t0+20s
	ctx := context.Background()
	e.clock.Set(t0.Add(23 * time.Second))
	e.trk.round(ctx) // 3s late: next at t0+33s
	e.clock.Set(t0.Add(28 * time.Second))
	e.trk.round(ctx) // 5s early, within the round's slack: observed as 0; next at t0+38s
	e.clock.Set(t0.Add(63 * time.Second))
	want := `
# HELP mintlify_agent_poll_interval_seconds The configured poll interval of the operations followed (--agent.poll-interval).
# TYPE mintlify_agent_poll_interval_seconds gauge
mintlify_agent_poll_interval_seconds 10
# HELP mintlify_agent_poll_max_overdue_seconds How long the most overdue scheduled poll of the project's operations has been due, 0 when none is late.
# TYPE mintlify_agent_poll_max_overdue_seconds gauge
mintlify_agent_poll_max_overdue_seconds{project="p1"} 25
mintlify_agent_poll_max_overdue_seconds{project="p2"} 0
# HELP mintlify_agent_state_file_replaced 1 while the state file's path no longer names the file the exporter has open (deleted or replaced), else 0.
# TYPE mintlify_agent_state_file_replaced gauge
mintlify_agent_state_file_replaced 0
# HELP mintlify_agent_state_write_errors_total Failed writes to the state.
# TYPE mintlify_agent_state_write_errors_total counter
mintlify_agent_state_write_errors_total 0
`
	names := []string{"mintlify_agent_poll_interval_seconds", "mintlify_agent_poll_max_overdue_seconds", "mintlify_agent_state_file_replaced",
		"mintlify_agent_state_write_errors_total"}
	if err := promtestutil.GatherAndCompare(e.reg, strings.NewReader(want), names...); err != nil {
		t.Fatal(err)
	}
	m := e.find("mintlify_agent_poll_delay_seconds")
	if h := m.GetHistogram(); m == nil || h.GetSampleCount() != 2 || h.GetSampleSum() != 3 || len(h.GetBucket()) != len(engine.PollDelayBuckets) {
		t.Errorf("poll delay histogram: %v, want 2 polls, 3s late in all, over %d classic buckets", m, len(engine.PollDelayBuckets))
	}
	problems, err := promtestutil.GatherAndLint(e.reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}
