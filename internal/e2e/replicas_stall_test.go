//go:build e2e

package e2e

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil/blackbox"
)

// TestRedisStallKeepsAcknowledgedOperations (issue 36, 4.1), for every
// kind: two replicas on a real redis-server; an operation is started
// through the replica running the gateway, and Redis is stopped (kill
// -STOP, 6 s) while the API's answer is on its way, so that the answer
// comes when nothing can be saved and the lease runs out. Once Redis is
// back (kill -CONT), whichever replica runs the gateway follows the
// operation to its end, counts it once, shows it on both replicas, and
// answers a retry with its Idempotency-Key with it (nothing sent again).
// Before, the client was told it was "followed in memory", the operation
// answered 404 on both replicas, was never counted, and the retry got 409.
func TestRedisStallKeepsAcknowledgedOperations(t *testing.T) {
	t.Parallel()
	for _, k := range stallKinds {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			redisStall(t, k)
		})
	}
}

func redisStall(t *testing.T, k stallKind) {
	const lease = 3 * time.Second
	redis := testutil.NewRedis(t)
	fake := fakeapi.New(fakeapi.Options{Projects: []string{"p1"}, APIKey: "mint_test", StaticExportDuration: e2eExportDuration})
	srv := httptest.NewServer(fake)
	defer srv.Close()
	replicas := startOpsReplicas(t, redis.Addr, srv.URL, "stall:", lease, k)
	client := &http.Client{Timeout: 90 * time.Second}
	call := func(x *testutil.Exporter, method, path, body, key string) (int, []byte, http.Header) {
		return call(t, client, method, x.Base+path, key, body)
	}
	var holder string
	blackbox.Eventually(t, 4*lease, "one replica running the gateway", func() bool {
		for n, x := range replicas {
			if m, err := blackbox.TryScrape(t.Context(), x.Base); err == nil && m["mintlify_exporter_cluster_agent_gateway{}"] == 1 {
				holder = n
				return true
			}
		}
		return false
	})

	// The API answers 1.5 s after the request: Redis is stopped by then.
	fake.SetFault(k.endpoint, fakeapi.Fault{Latency: 1500 * time.Millisecond, Remaining: 1})
	answered := make(chan int, 1)
	go func() { // owned by the test: it waits for the answer below
		code, _, _ := call(replicas[holder], "POST", k.start, k.body, "stall-1")
		answered <- code
	}()
	blackbox.Eventually(t, 0, "the request upstream", func() bool { return fake.Requests(k.endpoint) == 1 })
	redis.Pause()
	// Real time: a stall of Redis is what is tested, and the lease (3 s)
	// must run out during it, as in the attack run (6 s).
	time.Sleep(6 * time.Second)
	redis.Resume()
	code := <-answered
	t.Logf("the client was answered HTTP %d during the stall", code)

	ids := k.ids(fake)
	if len(ids) != 1 {
		t.Fatalf("%d %ss upstream, want 1", len(ids), k.name)
	}
	id := ids[0]
	for n, x := range replicas {
		blackbox.Eventually(t, 0, k.name+" "+id+" followed to its end, seen through replica "+n, func() bool {
			status, data, _ := call(x, "GET", k.view(id), "", "")
			var v struct{ Status string }
			return status == http.StatusOK && json.Unmarshal(data, &v) == nil && v.Status == k.final
		})
	}
	var total float64
	blackbox.Eventually(t, 0, "the end counted by the replica running the gateway", func() bool {
		total = 0
		for _, x := range replicas {
			if m, err := blackbox.TryScrape(t.Context(), x.Base); err == nil {
				total += m[k.finished]
			}
		}
		return total >= 1
	})
	if total != 1 {
		t.Errorf("%s = %v over the replicas, want 1", k.finished, total)
	}
	status, data, hdr := call(replicas[holder], "POST", k.start, k.body, "stall-1")
	if status/100 != 2 || hdr.Get("Idempotent-Replayed") != "true" || !strings.Contains(string(data), id) {
		t.Errorf("retry with the Idempotency-Key: HTTP %d %s (replayed %q), want the %s %s replayed", status, data, hdr.Get("Idempotent-Replayed"), k.name, id)
	}
	if n := len(k.ids(fake)); n != 1 {
		t.Errorf("%d %ss upstream after the retry, want 1", n, k.name)
	}
	for _, x := range replicas {
		x.Stop(t)
	}
}
