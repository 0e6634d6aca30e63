//go:build e2e

package e2e

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
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil/blackbox"
)

// TestReplicasEveryKind runs two replicas of the built binary on one
// Redis, for every kind of operation: one started through the replica that
// does not run the gateway is followed to its end by the one that does,
// which alone exports the kind's series; a second one, running when that
// replica is killed with SIGKILL, is followed to its end by the other once
// it takes the gateway over, counted once there. (It was
// TestReplicasFollowDeployments, for deployments alone; agent jobs keep
// their own longer TestReplicasShareAgentJobs.)
func TestReplicasEveryKind(t *testing.T) {
	t.Parallel()
	for _, k := range kill9Kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			replicasFollow(t, k)
		})
	}
}

func replicasFollow(t *testing.T, k kill9Kind) {
	const lease = 3 * time.Second
	redis := testutil.NewRedis(t)
	fake := fakeapi.New(fakeapi.Options{Projects: []string{"p1"}, APIKey: "mint_test", StaticExportDuration: e2eExportDuration})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	replicas := startOpsReplicas(t, redis.Addr, srv.URL, "kinds:", lease, k.stallKind)
	holder := func() (string, string) {
		t.Helper()
		var name, other string
		blackbox.Eventually(t, 4*lease, "one replica running the gateway", func() bool {
			name = ""
			for n, x := range replicas {
				if m, err := blackbox.TryScrape(t.Context(), x.Base); err == nil && m["mintlify_exporter_cluster_agent_gateway{}"] == 1 {
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
		req, err := http.NewRequest(method, x.Base+path, strings.NewReader(body))
		if err != nil {
			t.Error(err)
			return 0, nil
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
	start := func(x *testutil.Exporter) string {
		t.Helper()
		before := len(k.ids(fake))
		if code, data := call(x, "POST", k.start, k.body); code/100 != 2 || len(k.ids(fake)) != before+1 {
			t.Fatalf("start through a replica: HTTP %d %s", code, data)
		}
		return newest(k.ids(fake), before)
	}
	statusOf := func(x *testutil.Exporter, id string) string {
		code, data := call(x, "GET", k.view(id), "")
		var v struct{ Status string }
		if code != http.StatusOK || json.Unmarshal(data, &v) != nil {
			return ""
		}
		return v.Status
	}

	h, o := holder()
	first := start(replicas[o]) // forwarded to the holder
	blackbox.Eventually(t, 0, "the first followed to its end", func() bool { return statusOf(replicas[o], first) == k.final })
	blackbox.WaitMetrics(t, replicas[h].Base, 0, map[string]float64{k.finished: 1})
	if m := withPrefix(blackbox.Scrape(t, replicas[o].Base), k.series); len(m) != 0 {
		t.Errorf("the replica without the gateway exports %s series: %v", k.series, m)
	}

	k.hold(fake, true)
	second := start(replicas[o])
	blackbox.Eventually(t, 0, "the second running", func() bool { return statusOf(replicas[o], second) == k.running })
	replicas[h].Kill(t)
	delete(replicas, h)
	if now, _ := holder(); now != o {
		t.Fatalf("replica %s runs the gateway after %s was killed, want %s", now, h, o)
	}
	if got := statusOf(replicas[o], second); got != k.running && got != k.final {
		t.Errorf("after the takeover the second is %q, want %s (or %s)", got, k.running, k.final)
	}
	k.hold(fake, false)
	blackbox.Eventually(t, 0, "the second followed to its end by the new holder", func() bool { return statusOf(replicas[o], second) == k.final })
	m := blackbox.WaitMetrics(t, replicas[o].Base, 0, map[string]float64{k.finished: 1})
	if got := m[k.runningSeries]; got != 0 {
		t.Errorf("%s after both ended: %v", k.runningSeries, got)
	}
	if n := len(k.ids(fake)); n != 2 {
		t.Errorf("%d %ss upstream, want 2", n, k.name)
	}
	replicas[o].Stop(t)
}

// newest is the id of ids that is not among the first before of them
// (ids are sorted and the fake numbers them in order).
func newest(ids []string, before int) string {
	if len(ids) > before {
		return ids[len(ids)-1]
	}
	return ""
}

// startOpsReplicas starts two replicas, "a" and "b", of the built binary
// on the Redis at addr, for project p1 taking every kind (and the routes of
// every kind on: k's flags and keys), polling every 200 ms. Each listens
// on a second loopback address that it advertises to the other in its own
// copy of the file: this host's address (the default) does not reach a
// listener on loopback, and forwarding is what the replica tests test.
func startOpsReplicas(t *testing.T, addr, api, prefix string, lease time.Duration, k stallKind) map[string]*testutil.Exporter {
	t.Helper()
	dir := t.TempDir()
	cfg, err := os.ReadFile(replicasConfig(t, dir, addr, prefix, lease))
	if err != nil {
		t.Fatal(err)
	}
	shared := strings.Replace(string(cfg), "    agent_jobs: true\n", k.keys(), 1)
	replicas := map[string]*testutil.Exporter{}
	for _, name := range []string{"a", "b"} {
		fwd := testutil.FreeAddr(t)
		own := filepath.Join(dir, name+".yml")
		blackbox.WriteFile(t, own, shared+"  advertise_url: http://"+fwd+"\n")
		args := append([]string{"--config.file=" + own, "--mintlify.api-url=" + api,
			"--agent.poll-interval=200ms", "--agent.state-file=" + filepath.Join(dir, name, "agent.db"), "--mintlify.max-retries=0"}, k.flags()...)
		// One listener, the advertised one: a second from StartExporter
		// once drew the same port and the replica failed to start.
		x := testutil.StartExporterAt(t, k.binary(t), fwd, nil, args...)
		testutil.WaitHTTP(t, x.Base+"/-/ready", 15*time.Second, nil)
		replicas[name] = x
	}
	return replicas
}

// keys are a project's keys of every kind (the toy's too, for its row).
func (k stallKind) keys() string {
	out := ""
	for _, kind := range engine.Kinds() {
		s := kind.Declare().Setting
		if s.IDs != nil {
			out += "    " + s.Key + ": [\"" + s.IDs.Any + "\"]\n"
		} else {
			out += "    " + s.Key + ": true\n"
		}
	}
	if k.toy {
		out += "    toys: true\n"
	}
	return out
}
