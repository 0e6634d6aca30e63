//go:build soak

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/exporter"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/logging"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil/blackbox"
)

// Endpoints the soak puts faults on: every analytics endpoint (every source
// is exported), the cursor endpoints, and the job endpoints.
var (
	analytics = []string{fakeapi.Visitors, fakeapi.Views, fakeapi.FeedbackByPage, fakeapi.Feedback,
		fakeapi.Searches, fakeapi.Assistant, fakeapi.AssistantCallerStats}
	paged   = []string{fakeapi.Visitors, fakeapi.Views, fakeapi.Feedback, fakeapi.Searches, fakeapi.Assistant}
	cursors = []string{fakeapi.Feedback, fakeapi.Searches, fakeapi.Assistant}
	jobs    = []string{fakeapi.CreateJob, fakeapi.GetJob}
)

// soakFaults are every fault of the fake API, each on the endpoints it
// applies to.
var soakFaults = []struct {
	name      string
	endpoints []string
	fault     fakeapi.Fault
}{
	{"429 Retry-After 1", slices.Concat(analytics, jobs), fakeapi.Fault{Status: 429, RetryAfter: "1"}},
	{"500", slices.Concat(analytics, jobs), fakeapi.Fault{Status: 500}},
	{"503 Retry-After 1", slices.Concat(analytics, []string{fakeapi.GetJob}), fakeapi.Fault{Status: 503, RetryAfter: "1"}},
	{"401", slices.Concat(analytics, []string{fakeapi.GetJob}), fakeapi.Fault{Status: 401}},
	{"404", []string{fakeapi.GetJob}, fakeapi.Fault{Status: 404, Remaining: 2}},
	{"latency 2s", slices.Concat(analytics, jobs), fakeapi.Fault{Latency: 2 * time.Second}},
	{"malformed JSON", slices.Concat(analytics, jobs), fakeapi.Fault{MalformedJSON: true}},
	{"endless hasMore", paged, fakeapi.Fault{EndlessHasMore: true}},
	{"repeated cursor", cursors, fakeapi.Fault{RepeatedCursor: true}},
	{"missing cursor", []string{fakeapi.Feedback, fakeapi.Assistant}, fakeapi.Fault{MissingCursor: true}},
	{"unknown enum", []string{fakeapi.Feedback, fakeapi.Assistant, fakeapi.AssistantCallerStats}, fakeapi.Fault{UnknownEnum: true}},
	{"duplicate paths", slices.Concat(paged, []string{fakeapi.FeedbackByPage}), fakeapi.Fault{DuplicatePath: true}},
	{"negative counts", []string{fakeapi.Visitors, fakeapi.Views, fakeapi.FeedbackByPage, fakeapi.Searches, fakeapi.AssistantCallerStats}, fakeapi.Fault{NegativeCounts: true}},
	{"dropped create answer", []string{fakeapi.CreateJob}, fakeapi.Fault{DropAnswer: true, Remaining: 1}},
}

type soakRun struct {
	stop func() error
	base string
}

// startInProcess runs serve in this process, as main does, and returns its
// base URL and a stop function that returns serve's error once every
// goroutine it started has ended.
func startInProcess(t *testing.T, logs io.Writer, args ...string) *soakRun {
	t.Helper()
	addr := testutil.FreeAddr(t)
	cfg, err := parseFlags(append([]string{"--web.listen-address=" + addr}, args...))
	if err != nil {
		t.Fatal(err)
	}
	// No local create limit (it has no flag): the soak submits far more
	// than the API's 100 an hour, and the fake has no limit either.
	cfg.gateway.Config.CreateLimitPerHour = 0
	loggers, err := logging.New(logs, "warn", "logfmt")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- exporter.Serve(ctx, cfg.options(), loggers) }()
	base := "http://" + addr
	testutil.WaitHTTP(t, base+"/-/ready", 15*time.Second, nil)
	return &soakRun{base: base, stop: func() error {
		cancel()
		return <-done
	}}
}

// liveHeap is the heap still reachable after a collection (HeapAlloc right
// after GC; HeapInuse would count the spans' free space too).
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// ownGoroutines counts the goroutines apart from those of HTTP
// connections (a pooled connection holds a read and a write loop on the
// client side and a serve loop on the server side). Pooled connections
// come and go with the exporter's polls, up to the transport's idle limit;
// they are bounded separately, by counting the fake API's open
// connections, so a leaked connection still fails the soak.
func ownGoroutines() (int, string) {
	buf := make([]byte, 4<<20)
	dump := string(buf[:runtime.Stack(buf, true)])
	n := 0
	for _, g := range strings.Split(dump, "\n\n") {
		if !strings.Contains(g, "net/http.(*persistConn)") && !strings.Contains(g, "net/http.(*conn).serve") &&
			!strings.Contains(g, "net/http.(*Transport).dialConn") {
			n++
		}
	}
	return n, dump
}

// settledGoroutines waits until the count of count() stops moving at or
// below limit.
func settledGoroutines(limit int, count func() int) int {
	n := count()
	for range 50 {
		time.Sleep(100 * time.Millisecond) // real time: goroutines of real connections wind down on the wall clock
		m := count()
		if m <= limit && m == n {
			return m
		}
		n = m
	}
	return n
}

func allGoroutines() int { return runtime.NumGoroutine() }

func ownGoroutineCount() int { n, _ := ownGoroutines(); return n }

// walkedWell waits until no walk is in flight and the last walk of every
// demand on the status page at base succeeded (after the faults: the
// walks they failed have been retried), not for a guessed number of
// seconds.
func walkedWell(t *testing.T, base, what string) {
	t.Helper()
	var late []string // the demands not walked well at the last look, for the failure
	testutil.Eventually(t, testutil.Slack(testutil.Patience), what, func() bool {
		body, status, err := blackbox.GetBody(base + "/?format=json")
		if err != nil || status != http.StatusOK {
			return false
		}
		var r struct {
			Demands []struct {
				Project string `json:"project"`
				Source  string `json:"source"`
				Window  string `json:"window"`
				Result  string `json:"result"`
				Running bool   `json:"running"`
			} `json:"demands"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			return false
		}
		late = late[:0]
		for _, d := range r.Demands {
			// A walk whose pages did not end (the endless and repeated
			// cursor faults) waits a budget window by design
			// (refresh.retryInterval): it serves its last good data.
			if d.Running || (d.Window != "yesterday" && d.Result != "ok" && d.Result != "pagination") {
				late = append(late, fmt.Sprintf("%s/%s/%s %s running=%v", d.Project, d.Source, d.Window, d.Result, d.Running))
			}
		}
		return len(late) == 0 && len(r.Demands) > 0
	}, func() string { return strings.Join(late, "; ") })
}

// TestSoak runs the exporter in this process against the fake API for
// SOAK_DURATION (default 3m), toggling every fault of the fake while
// scrapers read /metrics and clients submit keyed jobs, then checks:
// no 5xx on /metrics, no acknowledged job lost (also across a restart),
// every key with one job or an unknown outcome and never two jobs,
// goroutines and heap back to their baseline, and every goroutine gone
// once the exporter stopped.
func TestSoak(t *testing.T) {
	duration := 3 * time.Minute
	if v := os.Getenv("SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("SOAK_DURATION: %v", err)
		}
		duration = d
	}
	projects := []string{"p1", "p2"}
	fake := fakeapi.New(fakeapi.Options{Projects: projects, APIKey: "mint_soak", CreateLimit: -1})
	// The fake's open connections: the exporter's pooled connections are
	// bounded by its transport's idle limit, a leaked one never closes.
	var openConns atomic.Int64
	api := httptest.NewUnstartedServer(fake)
	api.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			openConns.Add(1)
		case http.StateClosed, http.StateHijacked:
			openConns.Add(-1)
		}
	}
	api.Start()
	defer api.Close()
	statePath := filepath.Join(t.TempDir(), "agent.db")
	t.Setenv("MINTLIFY_API_KEY", "mint_soak")
	args := []string{
		"--mintlify.api-url=" + api.URL, "--mintlify.project=p1", "--mintlify.project=p2",
		"--web.enable-agent-api", "--agent.state-file=" + statePath,
		"--agent.poll-interval=500ms", "--agent.archive-watch=0s",
		"--mintlify.analytics-budget=100000", "--mintlify.timeout=1s", "--mintlify.max-retries=1",
		"--visitors.cache-ttl=1s", "--analytics.window=1d", "--analytics.window=7d", "--analytics.max-staleness=10s",
		"--analytics.search-top-queries=20",
	}
	for _, src := range sources.Names() { // every source, under every fault
		args = append(args, "--analytics.source="+src)
	}
	before := settledGoroutines(1<<20, allGoroutines)
	// The exporter's log goes to a file: kept in memory it would count
	// as heap growth.
	logs, err := os.Create(filepath.Join(t.TempDir(), "exporter.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	x := startInProcess(t, logs, args...)
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()

	// Warm up without faults until every demand has data, then take the
	// baseline.
	walkedWell(t, x.base, "every demand walked once")
	// Idle keep-alive connections (ours to the exporter, the exporter's
	// to the API) hold goroutines that are pooled, not leaked: close them
	// before every count.
	dropConns := func() {
		client.CloseIdleConnections()
		api.CloseClientConnections()
	}
	dropConns()
	baseG, baseHeap := settledGoroutines(1<<20, ownGoroutineCount), liveHeap()

	var (
		scrapes, scrape5xx, scrapeErrs atomic.Int64
		scrapeMu                       sync.Mutex
		scrapeDur                      []time.Duration
		mu                             sync.Mutex
		keys                           = map[string]string{} // key -> project/prompt
		acked                          = map[string]string{} // key -> job id
		statuses                       = map[int]int{}
		wg                             sync.WaitGroup
		toggles                        []string
	)
	ctx, stopLoad := context.WithTimeout(context.Background(), duration)
	defer stopLoad()
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil {
				start := time.Now()
				resp, err := client.Get(x.base + "/metrics")
				if err != nil {
					scrapeErrs.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				scrapes.Add(1)
				if resp.StatusCode >= 500 {
					scrape5xx.Add(1)
				}
				scrapeMu.Lock()
				scrapeDur = append(scrapeDur, time.Since(start))
				scrapeMu.Unlock()
				time.Sleep(50 * time.Millisecond) // real time: the pace of a scraper
			}
		})
	}
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				project := projects[(w+i)%2]
				key := fmt.Sprintf("soak-%d-%d", w, i)
				prompt := fmt.Sprintf("soak %d/%d #fake:nopr:1s", w, i)
				mu.Lock()
				keys[key] = project + "\x00" + prompt
				mu.Unlock()
				// Retry with the same key, as the client of docs/agent-gateway.md does.
				for attempt := 0; attempt < 20 && ctx.Err() == nil; attempt++ {
					status, msg, err := blackbox.SubmitKeyed(client, x.base+"/api/v2/agent/"+project+"/job", key, prompt)
					mu.Lock()
					statuses[status]++
					if err == nil && status/100 == 2 {
						acked[key] = project + "/" + msg
					}
					mu.Unlock()
					if err == nil && (status/100 == 2 || status == 422 || (status == 409 && strings.Contains(msg, "unknown"))) {
						break
					}
					time.Sleep(200 * time.Millisecond) // real time: a client's pause before it retries
				}
				time.Sleep(250 * time.Millisecond) // real time: the pace of a client
			}
		})
	}
	// Toggle every fault in turn.
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			f := soakFaults[i%len(soakFaults)]
			for _, ep := range f.endpoints {
				fake.SetFault(ep, f.fault)
			}
			toggles = append(toggles, f.name)
			select {
			case <-ctx.Done():
			case <-time.After(1500 * time.Millisecond):
			}
			fake.ClearFaults()
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	})
	wg.Wait()
	fake.ClearFaults()

	// Settle: every acknowledged job tracked; every key with a job or an
	// unknown outcome.
	listJobs := func(project string) map[string]bool {
		body, status, err := blackbox.GetBody(x.base + "/api/v2/agent/" + project + "/jobs")
		if err != nil || status != 200 {
			t.Fatalf("jobs: HTTP %d %v", status, err)
		}
		var l struct {
			Jobs []struct {
				ID string `json:"id"`
			} `json:"jobs"`
		}
		if err := json.Unmarshal(body, &l); err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, v := range l.Jobs {
			out[project+"/"+v.ID] = true
		}
		return out
	}
	tracked := map[string]bool{}
	unknown := 0
	for _, p := range projects {
		maps := listJobs(p)
		for k := range maps {
			tracked[k] = true
		}
		body, _, err := blackbox.GetBody(x.base + "/api/v2/agent/" + p + "/unknown-creates")
		if err != nil {
			t.Fatal(err)
		}
		var l struct {
			UnknownCreates []json.RawMessage `json:"unknownCreates"`
		}
		if err := json.Unmarshal(body, &l); err != nil {
			t.Fatal(err)
		}
		unknown += len(l.UnknownCreates)
	}
	lost := 0
	for key, id := range acked {
		if !tracked[id] {
			lost++
			t.Errorf("acknowledged job %s (key %s) not tracked", id, key)
		}
	}
	jobsUpstream := fake.JobCount()
	if jobsUpstream > len(tracked)+unknown {
		t.Errorf("%d jobs upstream, %d tracked and %d of unknown outcome: a duplicate", jobsUpstream, len(tracked), unknown)
	}
	if n := scrape5xx.Load(); n > 0 {
		t.Errorf("%d scrapes of /metrics answered 5xx", n)
	}

	// Back to baseline once the load is gone: every demand walked well
	// again after the last fault (or waiting after pages that never ended).
	walkedWell(t, x.base, "every demand walked well again after the faults")
	dropConns()
	endG, endHeap := settledGoroutines(baseG+5, ownGoroutineCount), liveHeap()
	if endG > baseG+5 {
		_, dump := ownGoroutines()
		t.Errorf("goroutines (apart from HTTP connections): %d at the baseline, %d after the soak\n%s", baseG, endG, dump)
	}
	// 8 idle connections per host (apiclient's transport) and one in
	// flight per poll lane and analytics walk at most.
	endConns := openConns.Load()
	if endConns > 16 {
		t.Errorf("%d connections to the API open after the soak (allowed 16): a response body left unclosed?", endConns)
	}
	// The heap holds the tracked jobs (kept for --agent.retention, 7d) and
	// the fake's jobs: allow for them, and nothing else.
	perJob := int64(endHeap-baseHeap) / int64(max(len(acked), 1))
	if endHeap > baseHeap+4<<20+uint64(len(acked))*4<<10 {
		t.Errorf("live heap: %.1f MiB at the baseline, %.1f MiB after the soak with %d jobs (%d bytes a job, allowed 4 KiB)",
			float64(baseHeap)/(1<<20), float64(endHeap)/(1<<20), len(acked), perJob)
	}
	if err := x.stop(); err != nil {
		t.Errorf("serve: %v", err)
	}
	client.CloseIdleConnections()
	api.CloseClientConnections()
	afterG := settledGoroutines(before+2, allGoroutines)
	if afterG > before+2 {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines: %d before the exporter started, %d after it stopped\n%s", before, afterG, buf[:runtime.Stack(buf, true)])
	}

	// A restart on the same state file keeps every acknowledged job.
	x = startInProcess(t, logs, args...)
	for _, p := range projects {
		for k := range listJobs(p) {
			delete(tracked, k)
		}
	}
	if len(tracked) > 0 {
		t.Errorf("%d tracked jobs missing after a restart", len(tracked))
	}
	if err := x.stop(); err != nil {
		t.Errorf("serve after restart: %v", err)
	}

	scrapeMu.Lock()
	slices.Sort(scrapeDur)
	p50, p99, pmax := scrapeDur[len(scrapeDur)/2], scrapeDur[len(scrapeDur)*99/100], scrapeDur[len(scrapeDur)-1]
	scrapeMu.Unlock()
	codes := []string{}
	for c, n := range statuses {
		codes = append(codes, fmt.Sprintf("%d:%d", c, n))
	}
	sort.Strings(codes)
	t.Logf("soak %s: %d fault toggles (%d kinds); %d scrapes (%d 5xx, %d transport errors), scrape p50 %s p99 %s max %s",
		duration, len(toggles), len(soakFaults), scrapes.Load(), scrape5xx.Load(), scrapeErrs.Load(), p50.Round(time.Millisecond), p99.Round(time.Millisecond), pmax.Round(time.Millisecond))
	t.Logf("submissions: %d keys, %d acknowledged, %d lost, %d of unknown outcome; %d jobs upstream; answers %s",
		len(keys), len(acked), lost, unknown, jobsUpstream, strings.Join(codes, " "))
	t.Logf("goroutines: %d before start, %d baseline, %d after the soak (HTTP connections apart: %d open to the API), %d after stop; live heap: %.1f MiB baseline, %.1f MiB after (%d bytes per tracked job, the fake's included)",
		before, baseG, endG, endConns, afterG, float64(baseHeap)/(1<<20), float64(endHeap)/(1<<20), perJob)
	if t.Failed() {
		if data, err := os.ReadFile(logs.Name()); err == nil {
			t.Logf("exporter log (warn and above), last 4000 bytes:\n%s", data[max(0, len(data)-4000):])
		}
	}
}
