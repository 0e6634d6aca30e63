package sources_test

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// BenchmarkWalkPeakHeap walks a site of 20,000 and of 100,000 paths of 1 KB at
// paths.max 1,000 against the fake API over HTTP, and reports the peak
// heap in use during the walk and the heap the snapshot keeps after it,
// both above the process before the walk (the fake's own copy of the site
// is in that baseline: it is warmed by a first walk). The heap is sampled
// every millisecond, so peaks are lower bounds: peak-heap is HeapInuse
// (garbage included, which GOGC lets grow with the process's live heap),
// peak-live the live heap found by the GC cycles of the walk (what the walk
// holds).
//
//	go test -run '^$' -bench BenchmarkWalkPeakHeap -benchtime 3x ./internal/sources/
func BenchmarkWalkPeakHeap(b *testing.B) {
	for _, paths := range []int{20_000, 100_000} {
		b.Run(fmt.Sprintf("paths=%d", paths), func(b *testing.B) { benchWalkPeakHeap(b, paths) })
	}
}

func benchWalkPeakHeap(b *testing.B, paths int) {
	const pathBytes, maxPaths = 1024, 1000
	e := start(b, fakeapi.Options{Paths: paths, PathBytes: pathBytes}, func(c *sources.Config) {
		c.Paths.MaxPaths = maxPaths
	})
	s := e.source(sources.NameVisitors)
	q := e.window(1)
	e.walk(s, q) // the fake builds and caches its ranking of the site
	var peak, peakLive, retained uint64
	for b.Loop() {
		runtime.GC()
		base, baseLive := heapInUse(), liveHeap()
		stop := sampleHeap()
		snap := e.walk(s, q)
		top, topLive := stop()
		runtime.GC()
		after := heapInUse()
		if n := len(snap.(*sources.TrafficSnapshot).Paths); n != maxPaths {
			b.Fatalf("%d paths exported, want %d", n, maxPaths)
		}
		peak = max(peak, top-min(top, base))
		peakLive = max(peakLive, topLive-min(topLive, baseLive))
		retained = max(retained, after-min(after, base))
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(peakLive)/(1<<20), "peak-live-MiB")
	b.ReportMetric(float64(retained)/(1<<20), "retained-heap-MiB")
}

func heapInUse() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// liveHeap is the heap the last GC found live (runtime/metrics): what the
// walk holds, without the garbage GOGC lets pile up between cycles.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// sampleHeap samples HeapInuse and the live heap every millisecond until
// the returned stop, which returns the largest values seen.
func sampleHeap() (stop func() (heap, live uint64)) {
	var peak, peakLive atomic.Uint64
	peak.Store(heapInUse())
	peakLive.Store(liveHeap())
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if h := heapInUse(); h > peak.Load() {
					peak.Store(h)
				}
				if l := liveHeap(); l > peakLive.Load() {
					peakLive.Store(l)
				}
			}
		}
	}()
	return func() (uint64, uint64) {
		close(done)
		wg.Wait()
		return max(peak.Load(), heapInUse()), max(peakLive.Load(), liveHeap())
	}
}
