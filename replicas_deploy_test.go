package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/tracker"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// TestReplicasFollowDeployments runs two replicas of the built binary with
// the deployment routes on one Redis: an update triggered through the
// replica that does not run the gateway is followed to its end by the one
// that does, which alone exports the deployment series; a second one,
// in progress when that replica is killed with SIGKILL, is followed to its
// end by the other once it takes the gateway over, counted once there.
func TestReplicasFollowDeployments(t *testing.T) {
	t.Parallel()
	const lease = 3 * time.Second
	redis := testutil.NewRedis(t)
	fake := fakeapi.New(fakeapi.Options{Projects: []string{"p1"}, APIKey: "mint_test"})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	replicas := startOpsReplicas(t, redis.Addr, srv.URL, "deploy:", lease, "--web.enable-deployment-api")
	holder := func() (string, string) {
		t.Helper()
		var name, other string
		eventually(t, 4*lease, "one replica running the gateway", func() bool {
			name = ""
			for n, x := range replicas {
				if m, err := tryScrape(t.Context(), x.Base); err == nil && m["mintlify_exporter_cluster_agent_gateway{}"] == 1 {
					name = n
				} else {
					other = n
				}
			}
			return name != ""
		})
		return name, other
	}
	client := &http.Client{Timeout: 10 * time.Second}
	call := func(x *testutil.Exporter, method, path, body string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, x.Base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, data
	}
	trigger := func(x *testutil.Exporter) string {
		t.Helper()
		status, data := call(x, "POST", "/api/v1/project/update/p1", "")
		var out struct{ StatusID string }
		if status != http.StatusAccepted || json.Unmarshal(data, &out) != nil || out.StatusID == "" {
			t.Fatalf("update through a replica: HTTP %d %s", status, data)
		}
		return out.StatusID
	}
	statusOf := func(x *testutil.Exporter, id string) string {
		status, data := call(x, "GET", "/api/v1/project/update-status/"+id, "")
		var v tracker.DeploymentView
		if status != http.StatusOK || json.Unmarshal(data, &v) != nil {
			return ""
		}
		return v.Status
	}
	const finished = "mintlify_deployments_finished_total{kind=update,project=p1,status=success}"

	h, o := holder()
	first := trigger(replicas[o]) // forwarded to the holder
	eventually(t, 0, "the first update followed to its end", func() bool { return statusOf(replicas[o], first) == "success" })
	waitMetrics(t, replicas[h].Base, 0, map[string]float64{finished: 1})
	if m := withPrefix(scrape(t, replicas[o].Base), "mintlify_deployment"); len(m) != 0 {
		t.Errorf("the replica without the gateway exports deployment series: %v", m)
	}

	fake.HoldDeployments(true)
	second := trigger(replicas[o])
	eventually(t, 0, "the second update in progress", func() bool { return statusOf(replicas[o], second) == "in_progress" })
	replicas[h].Kill(t)
	delete(replicas, h)
	if now, _ := holder(); now != o {
		t.Fatalf("replica %s runs the gateway after %s was killed, want %s", now, h, o)
	}
	if got := statusOf(replicas[o], second); got != "in_progress" {
		t.Errorf("after the takeover the second update is %q, want in_progress", got)
	}
	fake.HoldDeployments(false)
	eventually(t, 0, "the second update followed to its end by the new holder", func() bool { return statusOf(replicas[o], second) == "success" })
	m := waitMetrics(t, replicas[o].Base, 0, map[string]float64{finished: 1})
	if got := m["mintlify_deployments_in_progress{kind=update,project=p1}"]; got != 0 {
		t.Errorf("in progress after both ended: %v", got)
	}
	if n := fake.Deployments("p1", "update"); n != 2 {
		t.Errorf("%d updates upstream, want 2", n)
	}
	replicas[o].Stop(t)
}

// startOpsReplicas starts two replicas, "a" and "b", of the built binary
// on the Redis at addr, for project p1 with agent jobs and deployments,
// polling every 200 ms, with flags (the gateways to enable). Each listens
// on a second loopback address that it advertises to the other in its own
// copy of the file: this host's address (the default) does not reach a
// listener on loopback, and forwarding is what the replica tests test.
func startOpsReplicas(t *testing.T, addr, api, prefix string, lease time.Duration, flags ...string) map[string]*testutil.Exporter {
	t.Helper()
	dir := t.TempDir()
	cfg, err := os.ReadFile(replicasConfig(t, dir, addr, prefix, lease))
	if err != nil {
		t.Fatal(err)
	}
	shared := strings.Replace(string(cfg), "    agent_jobs: true\n", "    agent_jobs: true\n    deployments: true\n", 1)
	replicas := map[string]*testutil.Exporter{}
	for _, name := range []string{"a", "b"} {
		fwd := testutil.FreeAddr(t)
		own := filepath.Join(dir, name+".yml")
		writeFile(t, own, shared+"  advertise_url: http://"+fwd+"\n")
		args := append([]string{"--config.file=" + own, "--mintlify.api-url=" + api, "--web.listen-address=" + fwd,
			"--agent.poll-interval=200ms", "--agent.state-file=" + filepath.Join(dir, name, "agent.db"), "--mintlify.max-retries=0"}, flags...)
		x := startExporter(t, nil, args...)
		testutil.WaitHTTP(t, x.Base+"/-/ready", 15*time.Second, nil)
		replicas[name] = x
	}
	return replicas
}
