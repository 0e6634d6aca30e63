//go:build e2e

package e2e

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil/blackbox"
)

// TestReplicasRefuseLostAgentState: two replicas of the built binary run
// the agent job gateway on a Redis without persistence, which restarts
// empty after a job was acknowledged. The replicas notice the state is
// gone: a retry of the create with its Idempotency-Key is refused with a
// 503 naming what to do, and the prompt is created upstream once, not
// twice; `state accept-empty` lets the gateway run again.
func TestReplicasRefuseLostAgentState(t *testing.T) {
	t.Parallel()
	const lease = 2 * time.Second
	redis := testutil.NewRedis(t)
	fake := fakeapi.New(fakeapi.Options{Projects: []string{"p1"}, APIKey: "mint_test", JobDuration: time.Hour})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	dir := t.TempDir()
	file := replicasConfig(t, dir, redis.Addr, "mintlify_exporter:", lease)
	var bases []string
	for _, name := range []string{"a", "b"} {
		x := startExporter(t, nil, "--config.file="+file, "--mintlify.api-url="+srv.URL, "--web.enable-agent-api",
			"--agent.poll-interval=200ms", "--agent.state-file="+filepath.Join(dir, name, "agent.db"))
		testutil.WaitHTTP(t, x.Base+"/-/ready", 15*time.Second, nil)
		bases = append(bases, x.Base)
	}
	create := func(base string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, base+"/api/v2/agent/p1/job", strings.NewReader(`{"prompt":"write the changelog"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "k-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	var code int
	var body string
	blackbox.Eventually(t, 4*lease, "the job acknowledged", func() bool {
		// The holder answers (this host's advertised address may not
		// reach the other replica's loopback listener).
		for _, b := range bases {
			if code, body = create(b); code/100 == 2 {
				return true
			}
		}
		return false
	})
	lost := func(want float64) func() bool {
		return func() bool {
			for _, b := range bases {
				if m, err := blackbox.TryScrape(t.Context(), b); err != nil || m["mintlify_exporter_cluster_agent_state_lost{}"] != want {
					return false
				}
			}
			return true
		}
	}

	redis.Stop()
	redis.Start()
	blackbox.Eventually(t, 6*lease, "every replica finding the agent state lost", lost(1))
	for _, b := range bases {
		code, body = create(b)
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "state accept-empty") {
			t.Errorf("retry with the Idempotency-Key after the loss via %s: %d %s, want 503 naming state accept-empty", b, code, body)
		}
	}
	if n := fake.Prompts("p1")["write the changelog"]; n != 1 {
		t.Errorf("the prompt was created %d times upstream, want once", n)
	}

	if rc, _, _ := runExporter(t, "state", "accept-empty", "--config.file="+file); rc != 0 {
		t.Fatalf("state accept-empty exited %d", rc)
	}
	blackbox.Eventually(t, 6*lease, "every replica taking the accepted state", lost(0))
	blackbox.Eventually(t, 4*lease, "a create accepted again", func() bool {
		for _, b := range bases {
			if code, body = create(b); code/100 == 2 {
				return true
			}
		}
		return false
	})
}

// replicasConfig writes, in dir, the configuration file of replicas that
// share the Redis at addr (keys under prefix) and run the agent job
// gateway for project p1, and returns its path.
func replicasConfig(t *testing.T, dir, addr, prefix string, lease time.Duration) string {
	t.Helper()
	file := filepath.Join(dir, "mintlify.yml")
	blackbox.WriteFile(t, file, `organizations:
  - name: acme
    api_key_file: `+blackbox.KeyFile(t, dir, "key", "mint_test")+`
projects:
  - id: p1
    windows: [1d]
    timezone: `+blackbox.NoonZone()+`
    sources: {visitors: {}}
    agent_jobs: true
cluster:
  address: `+addr+`
  key_prefix: "`+prefix+`"
  timeout: 500ms
  lease_duration: `+lease.String()+`
  forward_secret_file: `+blackbox.KeyFile(t, dir, "forward-secret", "a secret the replicas share")+`
`)
	return file
}
