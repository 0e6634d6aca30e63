package kinds_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/kinds/deployment"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

// BenchmarkDeploymentPollRound measures one poll round over 1,000
// deployments in progress beside 1,000 finished ones (which are never read
// again), against the fake API over loopback HTTP, and the heap a followed
// deployment takes:
//
//	go test -run '^$' -bench DeploymentPollRound -benchtime 20x ./internal/ops/kinds/
func BenchmarkDeploymentPollRound(b *testing.B) {
	const running, finished = 1000, 1000
	fake := fakeapi.New(fakeapi.Options{PreviewLimit: -1})
	fake.HoldDeployments(true) // in progress for as long as the benchmark runs
	srv := httptest.NewServer(fake)
	b.Cleanup(srv.Close)
	client, err := apiclient.New(apiclient.Config{BaseURL: srv.URL, APIKey: "mint_bench"})
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "agent.db")
	cfg := Defaults()
	cfg.LockTimeout = time.Second
	st, err := store.Open(path, storeOptions(cfg))
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	var ops []store.Op
	for i := range running + finished {
		rec := deployment.Record{Kind: KindPreview, Branch: fmt.Sprintf("branch-%d", i), Op: engine.Op{Project: "p1", Origin: OriginGateway, TrackedAt: now}}
		if i < running {
			t, err := client.TriggerPreview(context.Background(), "p1", rec.Branch)
			if err != nil {
				b.Fatal(err)
			}
			rec.StatusID, rec.PreviewURL = t.StatusID, t.PreviewURL
			// Read twice, as the tracker would have: queued, then in
			// progress, the state it is stored in.
			var d *apiclient.Deployment
			for range 2 {
				if d, err = client.DeploymentStatus(context.Background(), "p1", rec.StatusID); err != nil {
					b.Fatal(err)
				}
			}
			rec.Saw(d, now, now, engine.SeenLive)
		} else {
			rec.StatusID, rec.Status, rec.Counted, rec.TerminalAt, rec.EndedAt = fmt.Sprintf("done_%d", i), "success", true, now, now
		}
		data, err := json.Marshal(&rec)
		if err != nil {
			b.Fatal(err)
		}
		ops = append(ops, store.Op{Bucket: bucketDeployments, Key: storeKey("p1", rec.StatusID), Value: data})
	}
	if err := st.Apply(ops...); err != nil { // one transaction
		b.Fatal(err)
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	clock := now
	cfg.Projects, cfg.StatePath, cfg.Deployments = []string{"p1"}, path, true
	cfg.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	before := heapAlloc()
	svc, err := newTracker(client, nil, cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	perDeployment := float64(int64(heapAlloc())-int64(before)) / (running + finished)
	b.Cleanup(func() { _ = svc.Close() })
	ctx := context.Background()
	tick := func() {
		mu.Lock()
		clock = clock.Add(cfg.PollInterval)
		mu.Unlock()
		svc.round(ctx)
	}
	tick() // a first round, as after a restart: nothing changed, nothing written
	start := fake.Requests(fakeapi.DeploymentStatus)
	b.ResetTimer()
	for b.Loop() {
		tick()
	}
	b.StopTimer()
	reads := fake.Requests(fakeapi.DeploymentStatus) - start
	if reads != int64(b.N)*running {
		b.Fatalf("%d reads in %d rounds, want %d per round: the finished ones are never read", reads, b.N, running)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(reads), "ns/poll")
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/round")
	b.ReportMetric(perDeployment, "heap-bytes/deployment")
}
