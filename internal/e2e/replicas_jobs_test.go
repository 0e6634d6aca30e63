//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/kinds/job"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil/blackbox"
)

// jobClient is one of the clients of TestReplicasShareAgentJobs: it
// submits jobs to random replicas, with an Idempotency-Key (retrying the
// same create until it is answered) or without one (not retrying a create
// whose outcome it did not learn, as a client without a key must not).
type jobClient struct {
	id      int
	withKey bool
}

// jobTally is what the clients learned.
type jobTally struct {
	mu sync.Mutex
	// acked maps an acknowledged job id to its prompt.
	acked map[string]string
	// unanswered are the prompts of keyless creates whose answer was lost.
	unanswered map[string]bool
	// retries counts the retried creates with a key; refused the 429s.
	retries, refused int
}

// TestReplicasShareAgentJobs runs three replicas of the built binary with
// the agent job gateway on one Redis: 20 clients submit jobs to any
// replica, half with an Idempotency-Key, while the replica running the
// gateway is killed with SIGKILL, three rounds, and started again. Every
// acknowledged job is tracked and reaches its end (0 lost), no prompt is
// created twice upstream (0 twice), a create whose answer was lost is
// either tracked or reported as of unknown outcome, and a surviving
// replica takes the gateway over within the lease.
func TestReplicasShareAgentJobs(t *testing.T) {
	t.Parallel()
	const lease = 3 * time.Second
	// Redis keeps its data across the outage below, as production's must.
	redis := testutil.NewRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	fake := fakeapi.New(fakeapi.Options{Projects: []string{"p1"}, APIKey: "mint_test", JobDuration: 3 * time.Second})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	dir := t.TempDir()
	file := replicasConfig(t, dir, redis.Addr, "jobs:", lease)
	start := func(name string) *testutil.Exporter {
		x := startExporter(t, nil, "--config.file="+file, "--mintlify.api-url="+srv.URL, "--web.enable-agent-api",
			"--agent.poll-interval=200ms", "--agent.state-file="+filepath.Join(dir, name, "agent.db"), "--mintlify.max-retries=0")
		testutil.WaitHTTP(t, x.Base+"/-/ready", 15*time.Second, nil)
		return x
	}
	var rmu sync.Mutex
	replicas := map[string]*testutil.Exporter{"a": start("a"), "b": start("b"), "c": start("c")}
	bases := func() []string {
		rmu.Lock()
		defer rmu.Unlock()
		var out []string
		for _, x := range replicas {
			out = append(out, x.Base)
		}
		return out
	}
	holder := func() string {
		t.Helper()
		var name string
		blackbox.Eventually(t, 4*lease, "one replica running the gateway", func() bool {
			name = ""
			rmu.Lock()
			defer rmu.Unlock()
			for n, x := range replicas {
				m, err := blackbox.TryScrape(t.Context(), x.Base)
				if err != nil {
					continue
				}
				if m["mintlify_exporter_cluster_agent_gateway{}"] == 1 {
					name = n
				}
			}
			return name != ""
		})
		return name
	}

	tally := &jobTally{acked: map[string]string{}, unanswered: map[string]bool{}}
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	// Constant scrapes of every replica: a replica that is alive before
	// and after a scrape answers it (kills and Redis's outage included).
	var scrapes, scrapeFailures atomic.Int64
	alive := func(base string) bool { return slices.Contains(bases(), base) }
	wg.Go(func() {
		for ctx.Err() == nil {
			for _, b := range bases() {
				_, err := blackbox.TryScrape(ctx, b)
				scrapes.Add(1)
				if err != nil && ctx.Err() == nil && alive(b) {
					if _, again := blackbox.TryScrape(ctx, b); again != nil && alive(b) {
						scrapeFailures.Add(1)
						t.Errorf("scrape of a live replica %s failed: %v", b, err)
					}
				}
			}
			time.Sleep(200 * time.Millisecond) // real time: the pace of a scraper, not a wait for anything
		}
	})
	for i := range 20 {
		c := jobClient{id: i, withKey: i%2 == 0}
		wg.Go(func() { c.run(ctx, tally, bases) })
	}

	// burstOn waits until the clients got n more jobs acknowledged: the
	// burst is under way (through whichever replica runs the gateway).
	burstOn := func(n int, what string) {
		t.Helper()
		tally.mu.Lock()
		from := len(tally.acked)
		tally.mu.Unlock()
		blackbox.Eventually(t, 0, fmt.Sprintf("%d more acknowledged jobs %s", n, what), func() bool {
			tally.mu.Lock()
			defer tally.mu.Unlock()
			return len(tally.acked) >= from+n
		})
	}

	// Three rounds: kill -9 the replica running the gateway during the
	// burst; a survivor takes over; the killed one starts again.
	var takeovers []time.Duration
	for round := range 3 {
		burstOn(5, fmt.Sprintf("before kill round %d", round+1))
		name := holder()
		killedAt := time.Now()
		rmu.Lock()
		replicas[name].Kill(t)
		delete(replicas, name)
		rmu.Unlock()
		next := holder()
		takeover := time.Since(killedAt)
		takeovers = append(takeovers, takeover)
		t.Logf("round %d: killed %s, %s runs the gateway after %s", round+1, name, next, takeover.Round(10*time.Millisecond))
		rmu.Lock()
		replicas[name] = start(name)
		rmu.Unlock()
	}
	// Redis away during the burst: nothing can be recorded, so nothing
	// is accepted (503); it all resumes when Redis returns.
	burstOn(3, "before Redis goes away")
	redis.Stop()
	// Away until the holder's lease has run out and no replica runs the
	// gateway (a holder that cannot renew stops acting): then the
	// replicas elect a holder afresh when it comes back. A condition,
	// not two leases of sleep.
	blackbox.Eventually(t, 4*lease, "no replica running the gateway while Redis is away", func() bool {
		for _, b := range bases() {
			m, err := blackbox.TryScrape(t.Context(), b)
			if v, ok := m["mintlify_exporter_cluster_agent_gateway{}"]; err != nil || !ok || v != 0 {
				return false
			}
		}
		return true
	})
	redis.Start()
	t.Logf("after the Redis outage, %s runs the gateway", holder())
	burstOn(3, "after Redis came back")
	// And at least 40 in all (checked below): the burst got through.
	blackbox.Eventually(t, 0, "40 acknowledged jobs in all", func() bool {
		tally.mu.Lock()
		defer tally.mu.Unlock()
		return len(tally.acked) >= 40
	})
	stop()
	wg.Wait()
	for _, d := range takeovers {
		// Wall clock of the replicas, stretched on a busy machine by as
		// long as it deschedules them: a bound with 5s of room for that.
		if d > lease+lease/3+5*time.Second {
			t.Errorf("a takeover took %s, want within the lease %s and a renew period (and a scrape)", d, lease)
		}
	}

	// Every job reaches its end, through any replica.
	var jobs []job.View
	blackbox.Eventually(t, 60*time.Second, "every tracked job terminal", func() bool {
		var err error
		if jobs, err = listJobs(bases()[0]); err != nil {
			return false
		}
		for _, v := range jobs {
			if v.Status != "completed" && v.Status != "failed" {
				return false
			}
		}
		return true
	})
	tracked := map[string]bool{}
	for _, v := range jobs {
		tracked[v.ID] = true
	}
	lost := 0
	for id := range tally.acked {
		if !tracked[id] {
			lost++
			t.Errorf("acknowledged job %s is not tracked", id)
		}
	}
	twice := 0
	for prompt, n := range fake.Prompts("p1") {
		if n > 1 {
			twice++
			t.Errorf("prompt %q created %d times upstream", prompt, n)
		}
	}
	unknown := unknownCreates(t, bases())
	// Upstream jobs are the tracked ones, and the creates whose answer
	// the exporter never saw (reported as of unknown outcome).
	if up := fake.JobCount(); up < len(tracked) || up > len(tracked)+unknown {
		t.Errorf("%d jobs upstream, %d tracked and %d creates of unknown outcome", up, len(tracked), unknown)
	}
	t.Logf("%d scrapes of every replica during the run, %d failed", scrapes.Load(), scrapeFailures.Load())
	t.Logf("acknowledged %d, tracked %d, created upstream %d, unknown outcome %d, keyed retries %d, refused over the limit %d, keyless unanswered %d; lost %d, twice %d; takeovers %v",
		len(tally.acked), len(tracked), fake.JobCount(), unknown, tally.retries, tally.refused, len(tally.unanswered), lost, twice, takeovers)
	if len(tally.acked) < 40 {
		t.Errorf("only %d jobs acknowledged: the burst did not get through", len(tally.acked))
	}
	// The create limit (the API's 100 per project and hour) holds across
	// the replicas and the takeovers: the gateway refuses beyond it before
	// the API has to.
	if up := fake.JobCount(); up > fakeapi.CreateJobLimit {
		t.Errorf("%d jobs created upstream in an hour, over the create limit %d", up, fakeapi.CreateJobLimit)
	}
}

// run submits jobs until ctx ends. A 502 (a forwarded create whose
// gateway died) leaves the outcome unknown: a client with a key retries it,
// one without counts it unanswered.
func (c jobClient) run(ctx context.Context, tally *jobTally, bases func() []string) {
	client := &http.Client{Timeout: 5 * time.Second}
	for n := 0; ctx.Err() == nil; n++ {
		prompt := fmt.Sprintf("client %d job %d #fake:nopr:1s", c.id, n)
		key := ""
		if c.withKey {
			key = fmt.Sprintf("client-%d-job-%d", c.id, n)
		}
		for attempt := 0; ; attempt++ {
			bs := bases()
			id, answered, refused := submit(client, bs[rand.IntN(len(bs))], prompt, key)
			if refused { // over the create limit: an answer, no job
				tally.mu.Lock()
				tally.refused++
				tally.mu.Unlock()
				break
			}
			if id != "" {
				tally.mu.Lock()
				tally.acked[id] = prompt
				tally.mu.Unlock()
				break
			}
			if key == "" || ctx.Err() != nil {
				if !answered {
					tally.mu.Lock()
					tally.unanswered[prompt] = true
					tally.mu.Unlock()
				}
				break // without a key a create is never retried
			}
			tally.mu.Lock()
			tally.retries++
			tally.mu.Unlock()
			time.Sleep(200 * time.Millisecond) // real time: a client's pause before it retries
		}
		// 20 clients at one create every 4s on average: the API's 100
		// creates an hour last through the three kill rounds.
		time.Sleep(3*time.Second + rand.N(2*time.Second)) // real time: the pace of a client
	}
}

// submit creates a job; answered is false when no answer came (the
// create's outcome is unknown to the client), refused is a 429.
func submit(client *http.Client, base, prompt, key string) (id string, answered, refused bool) {
	req, _ := http.NewRequest(http.MethodPost, base+"/api/v2/agent/p1/job", strings.NewReader(fmt.Sprintf(`{"prompt":%q}`, prompt)))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", false, false
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", false, false
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		return "", true, true
	}
	if resp.StatusCode/100 != 2 {
		// A 503 (no replica runs the gateway, or the state cannot be
		// written) or a 4xx says no job was created; a 502 does not.
		return "", resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode/100 == 4, false
	}
	var j struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(data, &j) != nil || j.ID == "" {
		return "", false, false
	}
	return j.ID, true, false
}

func listJobs(base string) ([]job.View, error) {
	body, status, err := testutil.Get(context.Background(), base+"/api/v2/agent/p1/jobs")
	if err != nil || status != http.StatusOK {
		return nil, fmt.Errorf("list jobs: HTTP %d %v", status, err)
	}
	var l jobList
	if err := json.Unmarshal([]byte(body), &l); err != nil {
		return nil, err
	}
	return l.Jobs, nil
}

// jobsRow is a project's row of the status page's agent jobs (its JSON
// section "projects").
type jobsRow struct {
	Project        string         `json:"project"`
	ByStatus       map[string]int `json:"by_status"`
	UnknownCreates int            `json:"unknown_creates"`
}

// unknownCreates counts the creates of unknown outcome that the replica
// running the gateway reports (only its status page has the jobs).
func unknownCreates(t *testing.T, bases []string) int {
	t.Helper()
	n := 0
	blackbox.Eventually(t, 10*time.Second, "a status page with the jobs", func() bool {
		for _, b := range bases {
			r, err := blackbox.TryStatusReport(b)
			if err != nil || r.Jobs == nil {
				continue
			}
			n = 0
			for _, p := range statusRows[jobsRow](t, r, "projects") {
				n += p.UnknownCreates
			}
			return true
		}
		return false
	})
	return n
}
