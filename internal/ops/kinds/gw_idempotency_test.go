package kinds_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/gateway"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// idemEnv is the gateway over a real tracker and the fake API.
type idemEnv struct {
	t      *testing.T
	fake   *fakeapi.Server
	client *apiclient.Client
	// logs are the tracker's and the gateway's log lines.
	logs *testutil.SyncBuffer
	srv  *httptest.Server
	g    *gateway.Gateway
	// user, when set, is sent as the basic-auth user.
	user string
}

func newIdemEnv(t *testing.T, clientTimeout time.Duration) *idemEnv {
	t.Helper()
	const key = "mint_test_key_do_not_leak"
	return newIdemEnvKeys(t, clientTimeout, key, key)
}

// newIdemEnvKeys is newIdemEnv with the key the fake accepts and the one
// the exporter sends.
func newIdemEnvKeys(t *testing.T, clientTimeout time.Duration, fakeKey, key string) *idemEnv {
	t.Helper()
	fake := fakeapi.New(fakeapi.Options{Projects: []string{"p1", "p2"}, APIKey: fakeKey})
	api := httptest.NewServer(fake)
	t.Cleanup(api.Close)
	client, err := apiclient.New(apiclient.Config{BaseURL: api.URL, APIKey: key, MaxRetries: 0, Timeout: clientTimeout})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	logs := &testutil.SyncBuffer{}
	logger := log.NewLogfmtLogger(logs)
	tcfg := Defaults()
	tcfg.Projects = []string{"p1", "p2"}
	tcfg.StatePath = filepath.Join(t.TempDir(), "agent.db")
	trk, err := New(client, reg, tcfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	gcfg := gateway.Defaults()
	gcfg.Projects = tcfg.Projects
	g, err := newGatewayWith(t, trk, reg, gcfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	t.Cleanup(func() {
		srv.Close()
		if err := trk.Close(); err != nil {
			t.Error(err)
		}
	})
	return &idemEnv{t: t, fake: fake, client: client, logs: logs, srv: srv, g: g}
}

func (e *idemEnv) call(method, path, idemKey, body string) response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if method == "POST" {
		req.Header.Set("Content-Type", "application/json")
	}
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	if e.user != "" {
		req.SetBasicAuth(e.user, "pw")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: data}
}

func jobID(t *testing.T, r response) string {
	t.Helper()
	var j apiclient.Job
	if err := json.Unmarshal(r.body, &j); err != nil || j.ID == "" {
		t.Fatalf("no job in HTTP %d %s", r.status, r.body)
	}
	return j.ID
}

func TestIdempotencyKeyOverHTTP(t *testing.T) {
	t.Parallel()
	e := newIdemEnv(t, 5*time.Second)
	const path = "/api/v2/agent/p1/job"
	first := e.call("POST", path, `"a1b2-c3"`, `{"prompt":"add a page"}`)
	id := jobID(t, first)
	// The same body, spelled differently, and the key as a bare token.
	again := e.call("POST", path, "a1b2-c3", `{ "prompt" : "add a page" }`)
	if again.status != first.status || jobID(t, again) != id || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: HTTP %d %s %v (first HTTP %d)", again.status, again.body, again.header, first.status)
	}
	if first.header.Get("Idempotent-Replayed") != "" {
		t.Error("first answer marked replayed")
	}
	r := e.call("POST", path, "a1b2-c3", `{"prompt":"another page"}`)
	if r.status != http.StatusUnprocessableEntity || !strings.Contains(r.errorMessage(t), "different request body") {
		t.Errorf("other body: HTTP %d %s", r.status, r.body)
	}
	if n := e.fake.Requests(fakeapi.CreateJob); n != 1 {
		t.Errorf("%d creates upstream, want 1", n)
	}
	if got := rejected(e.g, "p1", reasonIdempotencyConflict); got != 1 {
		t.Errorf("idempotency_conflict rejections: %v", got)
	}
	// Per project.
	if r := e.call("POST", "/api/v2/agent/p2/job", "a1b2-c3", `{"prompt":"add a page"}`); jobID(t, r) == id {
		t.Error("key shared across projects")
	}
	for _, bad := range []string{strings.Repeat("x", 256), `"unterminated`, "caf\u00e9", `"a" x`} {
		r := e.call("POST", path, bad, `{"prompt":"x"}`)
		if r.status != http.StatusBadRequest || !strings.Contains(r.errorMessage(t), "Idempotency-Key") {
			t.Errorf("key %q: HTTP %d %s", bad, r.status, r.body)
		}
	}
}

func TestIdempotencyKeyInFlightAndUnknownOutcome(t *testing.T) {
	t.Parallel()
	e := newIdemEnv(t, 5*time.Second)
	const path = "/api/v2/agent/p1/job"
	// The API creates the job, slowly, and the connection drops before
	// its answer: the job exists upstream, the exporter cannot know.
	e.fake.SetFault(fakeapi.CreateJob, fakeapi.Fault{Latency: 300 * time.Millisecond, DropAnswer: true, Remaining: 1})
	var wg sync.WaitGroup
	var first response
	wg.Go(func() { first = e.call("POST", path, "slow", `{"prompt":"slow one"}`) })
	testutil.Eventually(t, 0, "the create at the API", func() bool { return e.fake.Requests(fakeapi.CreateJob) > 0 })
	if r := e.call("POST", path, "slow", `{"prompt":"slow one"}`); r.status != http.StatusConflict || !strings.Contains(r.errorMessage(t), "still being processed") {
		t.Errorf("in flight: HTTP %d %s", r.status, r.body)
	}
	wg.Wait()
	if first.status != http.StatusBadGateway || !strings.Contains(first.errorMessage(t), "unknown-creates") {
		t.Fatalf("slow create: HTTP %d %s", first.status, first.body)
	}
	var list UnknownCreateList
	r := e.call("GET", "/api/v2/agent/p1/unknown-creates", "", "")
	if r.status != 200 || json.Unmarshal(r.body, &list) != nil || len(list.UnknownCreates) != 1 {
		t.Fatalf("list: HTTP %d %s", r.status, r.body)
	}
	u := list.UnknownCreates[0]
	if u.IdempotencyKey != "slow" || u.PromptExcerpt != "slow one" || u.Project != "p1" || u.StartedAt.IsZero() {
		t.Errorf("listed: %+v", u)
	}
	// A retry: 409, saying how to resolve it; nothing sent.
	r = e.call("POST", path, "slow", `{"prompt":"slow one"}`)
	if r.status != http.StatusConflict || !strings.Contains(r.errorMessage(t), "outcome") || !strings.Contains(r.errorMessage(t), u.ID) {
		t.Errorf("retry: HTTP %d %s", r.status, r.body)
	}
	if n := e.fake.Requests(fakeapi.CreateJob); n != 1 {
		t.Errorf("%d creates upstream, want 1", n)
	}
	// The operator finds the job upstream and tracks it with the intent.
	jobs := e.fake.JobIDs("p1")
	if len(jobs) != 1 {
		t.Fatalf("fake has %d jobs", len(jobs))
	}
	if r := e.call("POST", "/api/v2/agent/p1/job/"+jobs[0]+"/track?intent=ci_nope", "", ""); r.status != http.StatusNotFound {
		t.Errorf("unknown intent: HTTP %d %s", r.status, r.body)
	}
	if r := e.call("POST", "/api/v2/agent/p1/job/"+jobs[0]+"/track?intent="+u.ID, "", ""); r.status != http.StatusCreated {
		t.Fatalf("track with intent: HTTP %d %s", r.status, r.body)
	}
	if r := e.call("GET", "/api/v2/agent/p1/unknown-creates", "", ""); !strings.Contains(string(r.body), `"unknownCreates":[]`) {
		t.Errorf("still listed: %s", r.body)
	}
	r = e.call("POST", path, "slow", `{"prompt":"slow one"}`)
	if jobID(t, r) != jobs[0] || r.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("retry after resolve: HTTP %d %s", r.status, r.body)
	}
	if r := e.call("DELETE", "/api/v2/agent/p1/unknown-creates/"+u.ID, "", ""); r.status != http.StatusNotFound {
		t.Errorf("dismiss resolved: HTTP %d %s", r.status, r.body)
	}
}
