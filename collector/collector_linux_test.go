package collector

import (
	"math"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

func gather(t *testing.T, c prometheus.Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

func value(mf *dto.MetricFamily) float64 {
	m := mf.GetMetric()[0]
	if m.GetCounter() != nil {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}

// TestSameAsClientGolang gathers client_golang's process collector, then
// ours: the same families but the network counters (name, help, type, no labels), and values that
// agree: the constant ones exactly, the others within what can change
// between the two reads.
func TestSameAsClientGolang(t *testing.T) {
	theirs := gather(t, collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, name := range []string{"process_network_receive_bytes_total", "process_network_transmit_bytes_total"} {
		if theirs[name] == nil {
			t.Errorf("client_golang no longer exports %s: docs/metrics.md says it does", name)
		}
		delete(theirs, name) // left out: see the package's doc
	}
	ours := gather(t, NewProcessCollector())
	if len(ours) != len(theirs) || len(ours) != len(descs) {
		t.Fatalf("ours has %d families, client_golang's %d, descs %d", len(ours), len(theirs), len(descs))
	}
	for name, want := range theirs {
		got, ok := ours[name]
		if !ok {
			t.Errorf("%s missing", name)
			continue
		}
		if got.GetHelp() != want.GetHelp() || got.GetType() != want.GetType() || len(got.GetMetric()) != 1 || len(got.GetMetric()[0].GetLabel()) != 0 {
			t.Errorf("%s: help %q type %v, want %q %v, one series without labels", name, got.GetHelp(), got.GetType(), want.GetHelp(), want.GetType())
			continue
		}
		g, w := value(got), value(want)
		switch name {
		case "process_start_time_seconds", "process_max_fds", "process_virtual_memory_max_bytes":
			if math.Abs(g-w) > 0.01 {
				t.Errorf("%s = %v, client_golang %v", name, g, w)
			}
		case "process_cpu_seconds_total": // read after theirs
			if g < w || g > w+1 {
				t.Errorf("%s = %v, client_golang %v just before", name, g, w)
			}
		default: // open files, memory: near
			if g < w*0.5 || g > w*2+10 {
				t.Errorf("%s = %v, client_golang %v just before", name, g, w)
			}
		}
	}
	if problems, err := testutil.CollectAndLint(NewProcessCollector()); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

func TestParseStat(t *testing.T) {
	// A command name with spaces and parentheses: the fields start after
	// the last ')'.
	line := "4242 (a) b (c) S 1 4242 4242 0 -1 4194560 3000 0 0 0 250 130 0 0 20 0 9 0 1700 1234567 89 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
	st, err := parseStat([]byte(line), 4096)
	if err != nil {
		t.Fatal(err)
	}
	if st.cpu != 3.8 || st.startTicks != 1700 || st.vsize != 1234567 || st.rss != 89*4096 {
		t.Errorf("parsed %+v, want cpu 3.8, start 1700 ticks, vsize 1234567, rss %d", st, 89*4096)
	}
	for _, bad := range []string{"4242 no name", "4242 (x) S 1 2", "4242 (x) S 1 2 3 4 5 6 7 8 9 10 x 12 13 14 15 16 17 18 19 20 21 22 23"} {
		if _, err := parseStat([]byte(bad), 4096); err == nil {
			t.Errorf("parseStat(%q) = nil error", bad)
		}
	}
}

func BenchmarkCollect(b *testing.B) {
	for _, c := range []struct {
		name string
		c    prometheus.Collector
	}{{"ours", NewProcessCollector()}, {"client_golang", collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})}} {
		b.Run(c.name, func(b *testing.B) {
			ch := make(chan prometheus.Metric, len(descs))
			for b.Loop() {
				c.c.Collect(ch)
				for len(ch) > 0 {
					<-ch
				}
			}
		})
	}
}
