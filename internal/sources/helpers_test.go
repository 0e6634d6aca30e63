package sources_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

const (
	key     = "mint_sources_test"
	project = "docs"
)

// The fake's data moves with the time of day: a fixed clock keeps it still.
func fixedNow() time.Time { return time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC) }

type env struct {
	t     testing.TB
	fake  *fakeapi.Server
	clock *testutil.Clock
	cfg   sources.Config
}

// start serves a fake over HTTP and a client with no retries (a fault
// shows at once) unless mod changes the config. Fuzz targets and
// benchmarks walk real snapshots too, hence testing.TB.
func start(t testing.TB, opts fakeapi.Options, mod func(*sources.Config)) *env {
	t.Helper()
	clock := testutil.NewClock(fixedNow())
	opts.APIKey, opts.Projects, opts.Now = key, []string{project}, clock.Now
	if opts.Location == nil {
		opts.Location = time.UTC
	}
	fake := fakeapi.New(opts)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	client, err := apiclient.New(apiclient.Config{BaseURL: srv.URL, APIKey: key, Timeout: 5 * time.Second, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	cfg := sources.Config{Client: client, Location: opts.Location, Now: clock.Now, StateDir: t.TempDir()}
	if mod != nil {
		mod(&cfg)
	}
	return &env{t: t, fake: fake, clock: clock, cfg: cfg}
}

func (e *env) source(name string) sources.Source {
	e.t.Helper()
	def, ok := sources.ByName(name)
	if !ok {
		e.t.Fatalf("no source %q", name)
	}
	s, err := def.New(e.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// ctx is the context of a walk against the fake API: a hang guard only. A
// walk of hundreds of pages under -race on a machine whose cores are busy
// takes far longer than on a quiet one (a 20s deadline failed there), and
// nothing here judges its duration: go test's own -timeout would dump the
// goroutines of a real hang.
func ctx(t testing.TB) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	t.Cleanup(cancel)
	return c
}

// window is the query of the last days days up to today at the env's
// clock.
func (e *env) window(days int) sources.Query {
	today := time.Date(e.clock.Now().Year(), e.clock.Now().Month(), e.clock.Now().Day(), 0, 0, 0, 0, time.UTC)
	return sources.Query{Project: project,
		DateFrom: today.AddDate(0, 0, 1-days).Format(time.DateOnly), DateTo: today.AddDate(0, 0, 1).Format(time.DateOnly)}
}

// bounds are the instants of a query's range in the fake's zone.
func (e *env) bounds(q sources.Query) (time.Time, time.Time) {
	loc := e.cfg.Location
	f, _ := time.Parse(time.DateOnly, q.DateFrom)
	to, _ := time.Parse(time.DateOnly, q.DateTo)
	return time.Date(f.Year(), f.Month(), f.Day(), 0, 0, 0, 0, loc), time.Date(to.Year(), to.Month(), to.Day(), 0, 0, 0, 0, loc)
}

func (e *env) walk(s sources.Source, q sources.Query) sources.Snapshot {
	e.t.Helper()
	snap, err := s.Walk(ctx(e.t), q)
	if err != nil {
		e.t.Fatalf("%s walk: %v", s.Name(), err)
	}
	return snap
}

// samples are a snapshot's samples by family name and label values
// (joined by "|"); a series emitted twice fails the test.
type samples map[string]map[string]float64

func collect(t *testing.T, s sources.Source, snap sources.Snapshot, window string) samples {
	t.Helper()
	out := samples{}
	for _, f := range s.Families() {
		series := map[string]float64{}
		out[f.Name] = series
		f.Emit(snap, project, window, func(v float64, lv ...string) {
			if len(lv) != len(f.Labels) {
				t.Fatalf("%s: %d label values for labels %v", f.Name, len(lv), f.Labels)
			}
			for _, l := range lv {
				if strings.Contains(l, "PRIVATE") {
					t.Fatalf("%s: free text in a label: %q", f.Name, l)
				}
			}
			k := strings.Join(lv, "|")
			if _, dup := series[k]; dup {
				t.Fatalf("%s: series %s emitted twice", f.Name, k)
			}
			series[k] = v
		})
	}
	return out
}

// want compares one series.
func (s samples) want(t *testing.T, family string, want float64, lv ...string) {
	t.Helper()
	got, ok := s[family][strings.Join(lv, "|")]
	if !ok {
		t.Errorf("%s{%s} missing", family, strings.Join(lv, ","))
		return
	}
	if got != want {
		t.Errorf("%s{%s} = %v, the API says %v", family, strings.Join(lv, ","), got, want)
	}
}

func ceilDiv(a, b int) int { return max(1, (a+b-1)/b) }

// pin is what a source's test file pins of it: its families' names and
// label names, and whether its counts add up across days.
type pin struct {
	additive bool
	families map[string][]string
}

// pinned are the pins of every source, by name.
var pinned = map[string]pin{}

// pinSource records a source's pin (from its own test file, so that
// adding a source touches no shared list).
func pinSource(name string, p pin) bool {
	pinned[name] = p
	return true
}
