package kinds_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/kinds/job"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/kinds/staticexport"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// firstJobRead is a fake behind a handler that notes when the first read
// (GET) of an agent job arrived.
type firstJobRead struct {
	*fakeapi.Server
	mu sync.Mutex
	at time.Time
}

func (f *firstJobRead) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.Pattern == "" { // the outer handler: no route matched yet
		if len(r.URL.Path) > len("/v2/agent/") && r.URL.Path[:len("/v2/agent/")] == "/v2/agent/" {
			f.mu.Lock()
			if f.at.IsZero() {
				f.at = time.Now() // real time: the engine's Run ticks on it
			}
			f.mu.Unlock()
		}
	}
	f.Server.ServeHTTP(w, r)
}

func (f *firstJobRead) first() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.at
}

// TestStalledKindStarvesNoOther (issue 45, item 3): six static exports,
// each read once, whose status endpoint then stalls (every read held for an hour, as long as
// the poll timeout) hold four reads in flight at
// --agent.max-concurrent-polls=4; an agent job created then is read
// within 3 poll intervals, and the most overdue poll names the stalled
// kind. On one pool for every kind, a round waited for the stalled reads
// and the agent job was never read.
func TestStalledKindStarvesNoOther(t *testing.T) {
	t.Parallel()
	fake := &firstJobRead{Server: fakeapi.New(fakeapi.Options{APIKey: testKey})}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	client, err := apiclient.New(apiclient.Config{BaseURL: srv.URL, APIKey: testKey, Timeout: time.Hour, MaxRetries: 0})
	if err != nil {
		t.Fatal(err)
	}
	// On the wall clock, as Run's ticker; stretched on a busy machine so
	// that what is counted is intervals.
	interval := testutil.Slack(500 * time.Millisecond)
	cfg := Defaults()
	cfg.Projects, cfg.StatePath, cfg.StaticExports = []string{"p1"}, filepath.Join(t.TempDir(), "agent.db"), true
	cfg.PollInterval, cfg.MaxConcurrentPolls, cfg.PollTimeout = interval, 4, time.Hour
	trk, err := New(client, nil, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 6 {
		if _, err := trk.StartExport(ctx, ExportRequest{Project: "p1", Body: apiclient.StaticExportRequest{Domain: "docs.example.com"}}); err != nil {
			t.Fatal(err)
		}
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { // owned by the test: stopped in its cleanup
		defer close(done)
		_ = trk.Run(runCtx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = trk.Close()
	})
	// Each read once, then stalled: their next polls are scheduled, and
	// late.
	testutil.Eventually(t, 0, "each static export read", func() bool { return fake.Requests(fakeapi.StaticExportStatus) >= 6 })
	fake.SetFault(fakeapi.StaticExportStatus, fakeapi.Fault{Latency: time.Hour})
	testutil.Eventually(t, 0, "the stalled endpoint holding four reads", func() bool { return fake.Requests(fakeapi.StaticExportStatus) >= 10 })

	start := time.Now()
	if _, err := trk.Create(ctx, CreateRequest{Project: "p1", Prompt: "#fake:pr:1h"}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 20*interval, "the new agent job read while the static exports' reads stall", func() bool { return !fake.first().IsZero() })
	if n := fake.first().Sub(start).Seconds() / interval.Seconds(); n > 3 {
		t.Errorf("the agent job's first read came after %.1f poll intervals, want at most 3", n)
	}
	if got := fake.Requests(fakeapi.StaticExportStatus); got != 10 {
		t.Errorf("%d static export reads, want 6 and the 4 stalled ones only (at most 4 in flight per kind)", got)
	}
	testutil.Eventually(t, 20*interval, "the stalled kind named most overdue", func() bool {
		d, ok := trk.MostOverdue()
		return ok && d.Kind == staticexport.Name && d.Project == "p1"
	})
}

// TestFirstPollLateShows: an operation never polled (its first poll held
// back, as by a stalled round) is overdue a poll interval after it was
// followed, on the status page and the gauge; before that, it is not.
func TestFirstPollLateShows(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	cfg := e.config()
	e.open(cfg)
	j := e.create("p1", "#fake:pr:1h")
	if d, ok := e.trk.MostOverdue(); ok {
		t.Errorf("a job just followed is overdue: %+v", d)
	}
	e.clock.Advance(3 * cfg.PollInterval)
	d, ok := e.trk.MostOverdue()
	if !ok || d.Kind != job.Name || d.ID != j.ID || !d.At.Equal(t0.Add(cfg.PollInterval)) {
		t.Errorf("most overdue %+v (%v), want job %s due at %v", d, ok, j.ID, t0.Add(cfg.PollInterval))
	}
	if got, want := e.metric("mintlify_agent_poll_max_overdue_seconds", "project", "p1"), (2 * cfg.PollInterval).Seconds(); got != want {
		t.Errorf("overdue gauge %v, want %v", got, want)
	}
}

// TestFirstPollAfterRestartNotLate: an operation followed long before a
// restart and not yet polled since is due a poll interval after the
// engine opened, not since it was followed.
func TestFirstPollAfterRestartNotLate(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	cfg := e.config()
	e.open(cfg)
	e.create("p1", "#fake:pr:1h")
	e.clock.Advance(time.Hour)
	e.open(cfg)
	if d, ok := e.trk.MostOverdue(); ok {
		t.Errorf("a job just loaded is overdue: %+v", d)
	}
	e.clock.Advance(2 * cfg.PollInterval)
	if got, want := e.metric("mintlify_agent_poll_max_overdue_seconds", "project", "p1"), cfg.PollInterval.Seconds(); got != want {
		t.Errorf("overdue gauge %v, want %v (since the restart, not the hour before)", got, want)
	}
}
