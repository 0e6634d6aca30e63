package kinds_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/kinds/job"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

const benchJobs = 10_000

// benchJob is a job shaped like the API's (and the fake's).
func benchJob(i int, status string, createdAt time.Time) apiclient.Job {
	id := fmt.Sprintf("job_%06d", i)
	j := apiclient.Job{
		ID:        id,
		Status:    status,
		Source:    apiclient.Source{Repository: "https://github.com/acme/docs", Ref: "mintlify/" + id},
		Model:     "claude-sonnet-4-5",
		CreatedAt: createdAt,
	}
	if status == apiclient.StatusCompleted {
		link := "https://github.com/acme/docs/pull/" + id[4:]
		j.PRLink = &link
	}
	return j
}

// seedState writes jobs of project p1 to a new state file, concurrently so
// that bbolt batches the commits.
func seedState(b *testing.B, path string, jobs []apiclient.Job, trackedAt time.Time) {
	b.Helper()
	cfg := Defaults()
	cfg.LockTimeout = time.Second
	st, err := store.Open(path, storeOptions(cfg))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	var g errgroup.Group
	g.SetLimit(256)
	for _, j := range jobs {
		g.Go(func() error {
			rec := map[string]any{"project": "p1", "job": j, "origin": OriginGateway, "trackedAt": trackedAt} // its state form (recordV1)
			if apiclient.IsTerminal(j.Status) {
				rec["terminalAt"], rec["counted"], rec["prCounted"] = trackedAt, 1, j.PRLink != nil // completed
			}
			data, err := json.Marshal(rec)
			if err != nil {
				return err
			}
			return st.Put(storeKey("p1", j.ID), data)
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
}

func heapAlloc() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkAgentMemoryPerJob loads 10,000 tracked jobs (70% completed with
// a PR, the rest active) from a state file and reports the heap they take.
func BenchmarkAgentMemoryPerJob(b *testing.B) {
	now := time.Now()
	jobs := make([]apiclient.Job, benchJobs)
	for i := range jobs {
		st := apiclient.StatusActive
		if i%10 < 7 {
			st = apiclient.StatusCompleted
		}
		jobs[i] = benchJob(i, st, now.Add(-time.Duration(i)*time.Second))
	}
	path := filepath.Join(b.TempDir(), "agent.db")
	seedState(b, path, jobs, now)
	cfg := Defaults()
	cfg.Projects, cfg.StatePath = []string{"p1"}, path
	var perJob float64
	b.ResetTimer()
	for b.Loop() {
		before := heapAlloc()
		svc, err := newTracker(stubUpstream{}, nil, cfg, nil)
		if err != nil {
			b.Fatal(err)
		}
		after := heapAlloc()
		if n := len(svc.Ops(job.Name).List("")); n != benchJobs {
			b.Fatalf("loaded %d jobs", n)
		}
		perJob = float64(int64(after)-int64(before)) / benchJobs
		runtime.KeepAlive(svc)
		_ = svc.Close()
	}
	b.ReportMetric(perJob, "heap-bytes/job")
}

// stubUpstream answers get-job from memory, instantly.
type stubUpstream struct {
	jobs map[string]*apiclient.Job
	gets *atomic.Int64
}

func (s stubUpstream) CreateJobWithStatus(context.Context, string, string) (*apiclient.Job, int, error) {
	return nil, 0, fmt.Errorf("not supported")
}

func (s stubUpstream) GetJob(_ context.Context, _, id string) (*apiclient.Job, error) {
	s.gets.Add(1)
	return s.jobs[id], nil
}

func (s stubUpstream) SendMessage(context.Context, string, string, string) (*apiclient.Job, int, error) {
	return nil, 0, fmt.Errorf("not supported")
}

func (s stubUpstream) ThrottledUntil(string) time.Time { return time.Time{} }

// BenchmarkAgentPollRound measures one poll round over 10,000 active jobs:
// "http" against the fake API over loopback HTTP (the client, the fake's
// handler and the tracker share this machine's CPUs), "bookkeeping" with an
// in-memory upstream, i.e. the tracker's own cost per round (scheduling,
// bounded concurrency, applying unchanged results).
func BenchmarkAgentPollRound(b *testing.B) {
	for _, mode := range []string{"bookkeeping", "http"} {
		for _, conc := range []int{4, 16} {
			b.Run(fmt.Sprintf("%s/concurrency=%d", mode, conc), func(b *testing.B) {
				benchPollRound(b, mode, conc, benchJobs, 0)
			})
		}
	}
}

// BenchmarkAgentPollRoundLatency measures one poll round over 1,000 active
// jobs against the fake API answering get-job in 40 ms, as a real API far
// away does: the round takes jobs × latency / concurrency, the basis of the
// docs/agent-gateway.md's sizing of --agent.max-concurrent-polls.
//
//	go test -run '^$' -bench PollRoundLatency -benchtime 1x ./internal/ops/kinds/
func BenchmarkAgentPollRoundLatency(b *testing.B) {
	for _, conc := range []int{4, 16, 64} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) {
			benchPollRound(b, "http", conc, 1000, 40*time.Millisecond)
		})
	}
}

func benchPollRound(b *testing.B, mode string, concurrency, njobs int, latency time.Duration) {
	var (
		api  upstream
		jobs []apiclient.Job
		gets func() int64
	)
	switch mode {
	case "http":
		fake := fakeapi.New(fakeapi.Options{JobDuration: 24 * time.Hour, CreateLimit: -1})
		srv := httptest.NewServer(fake)
		b.Cleanup(srv.Close)
		client, err := apiclient.New(apiclient.Config{BaseURL: srv.URL, APIKey: "mint_bench"})
		if err != nil {
			b.Fatal(err)
		}
		jobs = make([]apiclient.Job, njobs)
		var g errgroup.Group
		g.SetLimit(32)
		for i := range jobs {
			g.Go(func() error {
				j, err := client.CreateJob(context.Background(), "p1", "bench #fake:pr:24h")
				if err == nil {
					jobs[i] = *j
				}
				return err
			})
		}
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
		if latency > 0 {
			fake.SetFault(fakeapi.GetJob, fakeapi.Fault{Latency: latency})
		}
		api = client
		gets = func() int64 { return fake.Requests(fakeapi.GetJob) }
	default:
		now := time.Now()
		st := stubUpstream{jobs: map[string]*apiclient.Job{}, gets: &atomic.Int64{}}
		jobs = make([]apiclient.Job, njobs)
		for i := range jobs {
			jobs[i] = benchJob(i, apiclient.StatusActive, now)
			j := jobs[i]
			st.jobs[j.ID] = &j
		}
		api = st
		gets = st.gets.Load
	}
	path := filepath.Join(b.TempDir(), "agent.db")
	seedState(b, path, jobs, time.Now())

	// A clock that moves one poll interval per round, so every job is due
	// in every round.
	var mu sync.Mutex
	clock := time.Now()
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	cfg := Defaults()
	cfg.Projects, cfg.StatePath, cfg.MaxConcurrentPolls, cfg.Now = []string{"p1"}, path, concurrency, now
	svc, err := newTracker(api, nil, cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = svc.Close() })
	ctx := context.Background()
	start := gets()
	b.ResetTimer()
	for b.Loop() {
		svc.round(ctx)
		mu.Lock()
		clock = clock.Add(cfg.PollInterval)
		mu.Unlock()
	}
	b.StopTimer()
	polls := gets() - start
	if polls != int64(b.N)*int64(njobs) {
		b.Fatalf("%d polls in %d rounds, want %d per round", polls, b.N, njobs)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(polls), "ns/poll")
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/round")
}
