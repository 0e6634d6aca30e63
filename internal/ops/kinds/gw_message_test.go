package kinds_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/gateway"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

const messagePath = "/api/v2/agent/p1/job/job_1/message"

func sendMessage(t *testing.T, h http.Handler, project, id, prompt string) response {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"prompt": prompt})
	return do(t, h, "POST", "/api/v2/agent/"+project+"/job/"+id+"/message", "application/json", body)
}

func TestMessageBadInputNeverReachesTracker(t *testing.T) {
	t.Parallel()
	b := &stubTracker{}
	cfg := testConfig(nil)
	cfg.MaxPromptBytes = 1024
	g := newTestGateway(t, b, cfg)
	cases := []struct {
		name, contentType, body string
		status                  int
		reason                  string
	}{
		{"empty body", "application/json", ``, 400, reasonBadRequest},
		{"malformed", "application/json", `{"prompt":`, 400, reasonBadRequest},
		{"missing prompt", "application/json", `{}`, 400, reasonBadRequest},
		{"empty prompt", "application/json", `{"prompt":""}`, 400, reasonBadRequest},
		{"blank prompt", "application/json", `{"prompt":" "}`, 400, reasonBadRequest},
		{"number prompt", "application/json", `{"prompt":7}`, 400, reasonBadRequest},
		{"null prompt", "application/json", `{"prompt":null}`, 400, reasonBadRequest},
		{"over the limit", "application/json", `{"prompt":"` + strings.Repeat("a", 1024) + `"}`, 413, reasonTooLarge},
	}
	want := map[string]float64{}
	for _, c := range cases {
		r := do(t, g, "POST", messagePath, c.contentType, []byte(c.body))
		if r.status != c.status {
			t.Errorf("%s: HTTP %d, want %d: %s", c.name, r.status, c.status, r.body)
		}
		r.errorMessage(t)
		want[c.reason]++
	}
	rq := httptest.NewRequest("POST", messagePath, strings.NewReader(`{"prompt":"x"}`))
	rq.Header.Set("Content-Type", "application/json")
	rq.Header.Set("Idempotency-Key", "\x01bad")
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, rq)
	if rec.Code != 400 {
		t.Errorf("bad Idempotency-Key: HTTP %d", rec.Code)
	}
	want[reasonBadRequest]++
	if n := b.messageCount(); n != 0 {
		t.Errorf("%d bad requests reached the tracker", n)
	}
	for _, reason := range messageRejectReasons {
		if got := msgRejected(g, "p1", reason); got != want[reason] {
			t.Errorf("message rejected{reason=%q} = %v, want %v", reason, got, want[reason])
		}
		// Creates' counter is not touched.
		if got := rejected(g, "p1", reason); reason != reasonJobNotFound && got != 0 {
			t.Errorf("submit rejected{reason=%q} = %v, want 0", reason, got)
		}
	}
	// Wrong method: 405 in JSON; unknown project: 404.
	if r := do(t, g, "GET", messagePath, "", nil); r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "POST" {
		t.Errorf("GET: HTTP %d Allow %q", r.status, r.header.Get("Allow"))
	}
	if r := sendMessage(t, g, "nope", "job_1", "x"); r.status != http.StatusNotFound {
		t.Errorf("unknown project: HTTP %d", r.status)
	}
}

func TestMessageLocalLimit(t *testing.T) {
	t.Parallel()
	clock := testutil.NewClock(t0)
	b := &stubTracker{}
	g := newTestGateway(t, b, testConfig(clock))
	for i := range 100 {
		if r := sendMessage(t, g, "p1", "job_1", "x"); r.status != 200 {
			t.Fatalf("message %d: HTTP %d: %s", i+1, r.status, r.body)
		}
		clock.Advance(time.Second)
	}
	r := sendMessage(t, g, "p1", "job_2", "one too many")
	if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") != strconv.Itoa(3600-100) {
		t.Fatalf("101st message: HTTP %d Retry-After %q: %s", r.status, r.header.Get("Retry-After"), r.body)
	}
	if !strings.Contains(r.errorMessage(t), "100 follow-up messages") {
		t.Errorf("message %q", r.errorMessage(t))
	}
	if n := b.messageCount(); n != 100 {
		t.Errorf("%d messages reached the tracker, want 100", n)
	}
	if got := msgRejected(g, "p1", reasonRateLimited); got != 1 {
		t.Errorf("rate_limited = %v", got)
	}
	// Its own limit: creates still go through, and the other project too.
	if r := submit(t, g, "p1", "a create"); r.status != 201 {
		t.Errorf("create after the message limit: HTTP %d", r.status)
	}
	if r := sendMessage(t, g, "p2", "job_1", "x"); r.status != 200 {
		t.Errorf("other project: HTTP %d", r.status)
	}

	// A restart does not reset the window: the tracker's recent messages
	// seed it.
	var recent []time.Time
	for i := range 100 {
		recent = append(recent, clock.Now().Add(-time.Duration(100-i)*time.Second))
	}
	b2 := &stubTracker{recentMessages: map[string][]time.Time{"p1": recent}}
	g2 := newTestGateway(t, b2, testConfig(clock))
	if r := sendMessage(t, g2, "p1", "job_1", "x"); r.status != http.StatusTooManyRequests {
		t.Errorf("after a restart with 100 recent messages: HTTP %d", r.status)
	}
	// A message that certainly was not sent gives its slot back.
	b3 := &stubTracker{msgErr: &NotSentError{Err: errors.New("state file")}}
	cfg := testConfig(clock)
	cfg.MessageLimitPerHour = 1
	g3 := newTestGateway(t, b3, cfg)
	for range 3 {
		sendMessage(t, g3, "p1", "job_1", "x")
	}
	if n := b3.messageCount(); n != 3 {
		t.Errorf("%d messages reached the tracker, want 3 (no slot taken by those not sent)", n)
	}
}

func TestMessageUpstreamAnswers(t *testing.T) {
	t.Parallel()
	clock := testutil.NewClock(t0)
	cases := []struct {
		name   string
		err    error
		status int
		reason string
		msg    string
	}{
		{"unknown job", &NotSentError{Err: &apiclient.APIError{Endpoint: "get_job", StatusCode: 404}}, 404, reasonJobNotFound, "job not found upstream"},
		{"unknown job at send", &apiclient.APIError{Endpoint: "send_message", StatusCode: 404}, 404, reasonJobNotFound, "job not found upstream"},
		{"upstream 500", &apiclient.APIError{StatusCode: 500, Message: "boom"}, 502, reasonUpstreamError, "boom"},
		{"exporter's key rejected", &apiclient.APIError{StatusCode: 401}, 502, reasonUpstreamError, "rejected the exporter's API key"},
		{"upstream 429", &apiclient.APIError{StatusCode: 429, RetryAfter: 30 * time.Second}, 429, reasonRateLimited, "HTTP 429"},
		{"unknown outcome", &MessageOutcomeUnknownError{Project: "p1", JobID: "job_1", At: t0, Err: errors.New("connection reset")}, 502, reasonUpstreamError, "is unknown"},
		{"retry of an unknown outcome", &MessageOutcomeUnknownError{Project: "p1", JobID: "job_1", At: t0}, 409, reasonIdempotencyConflict, "is unknown"},
		{"key reused", ErrIdempotencyKeyReused, 422, reasonIdempotencyConflict, "different request"},
		{"turn not written", fmt.Errorf("job job_1 accepted the follow-up message upstream, but its new turn could not be saved: %w",
			&StateError{ID: "job_1", Err: errors.New("disk full"), What: "agent job"}), 500, "", "its new turn could not be saved"},
		{"intent not written", &NotSentError{Err: &IntentError{Err: errors.New("disk full"), What: "follow-up message"}}, 503, reasonStateError, "follow-up message could not be recorded"},
	}
	for _, c := range cases {
		g := newTestGateway(t, &stubTracker{msgErr: c.err}, testConfig(clock))
		r := sendMessage(t, g, "p1", "job_1", "x")
		if r.status != c.status || !strings.Contains(r.errorMessage(t), c.msg) {
			t.Errorf("%s: HTTP %d %s, want %d containing %q", c.name, r.status, r.body, c.status, c.msg)
		}
		// Each failure counts under its reason; one that is no refusal (the
		// message was accepted upstream) under none.
		for _, reason := range messageRejectReasons {
			want := 0.0
			if reason == c.reason {
				want = 1
			}
			if got := msgRejected(g, "p1", reason); got != want {
				t.Errorf("%s: rejected{reason=%q} = %v, want %v", c.name, reason, got, want)
			}
		}
	}
}

// TestMessageOverTracker: the gateway over a real tracker and the fake API:
// a follow-up to a job created through the gateway, a retry with its key,
// a follow-up to a job created elsewhere (tracked by it), and one to a job
// the API does not know.
func TestMessageOverTracker(t *testing.T) {
	t.Parallel()
	e := newIdemEnv(t, 5*time.Second)
	id := jobID(t, e.call("POST", "/api/v2/agent/p1/job", "", `{"prompt":"add a page #fake:pr:1s"}`))
	path := "/api/v2/agent/p1/job/" + id + "/message"

	r := e.call("POST", path, "m1", `{"prompt":"and a second one #fake:pr:1h"}`)
	var v JobView
	if r.status != 200 || json.Unmarshal(r.body, &v) != nil || v.ID != id || v.Status != "active" || v.Tracking.Turn != 2 {
		t.Fatalf("message: HTTP %d %s, want the job active in turn 2", r.status, r.body)
	}
	again := e.call("POST", path, "m1", `{"prompt":"and a second one #fake:pr:1h"}`)
	if again.status != 200 || again.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("retry: HTTP %d %s", again.status, again.body)
	}
	if n := e.fake.Messages("p1", id); n != 1 {
		t.Errorf("the fake got %d messages, want 1", n)
	}
	if r := e.call("GET", "/api/v2/agent/p1/job/"+id, "", ""); !strings.Contains(string(r.body), `"turn":2`) {
		t.Errorf("get: %s", r.body)
	}

	// Created elsewhere: tracked by the message.
	elsewhere, err := e.client.CreateJob(t.Context(), "p2", "x #fake:pr:1s")
	if err != nil {
		t.Fatal(err)
	}
	if r := e.call("GET", "/api/v2/agent/p2/job/"+elsewhere.ID, "", ""); r.status != 404 {
		t.Fatalf("tracked before the message: HTTP %d", r.status)
	}
	r = e.call("POST", "/api/v2/agent/p2/job/"+elsewhere.ID+"/message", "", `{"prompt":"more"}`)
	if r.status != 200 || json.Unmarshal(r.body, &v) != nil || v.Tracking.Origin != OriginTrack || v.Tracking.Turn != 2 {
		t.Errorf("message to a job created elsewhere: HTTP %d %s", r.status, r.body)
	}
	if r := e.call("GET", "/api/v2/agent/p2/job/"+elsewhere.ID, "", ""); r.status != 200 {
		t.Errorf("not tracked after the message: HTTP %d", r.status)
	}

	before := e.fake.Requests(fakeapi.SendMessage)
	if r := e.call("POST", "/api/v2/agent/p1/job/job_999999/message", "", `{"prompt":"x"}`); r.status != 404 {
		t.Errorf("unknown job: HTTP %d %s", r.status, r.body)
	}
	if d := e.fake.Requests(fakeapi.SendMessage) - before; d != 0 {
		t.Errorf("%d messages sent for an unknown job", d)
	}
	if r := e.call("GET", "/api/v2/agent/p1/job/job_999999", "", ""); r.status != 404 {
		t.Errorf("an unknown job is tracked: HTTP %d", r.status)
	}
	if got := msgRejected(e.g, "p1", reasonJobNotFound); got != 1 {
		t.Errorf("job_not_found = %v", got)
	}
}

// TestExporterKeyRejected: with a key the API refuses, every call through
// the gateway answers 502 saying so, never the API's 401, which would read
// as the caller's own credentials; the key never appears in an answer.
func TestExporterKeyRejected(t *testing.T) {
	t.Parallel()
	e := newIdemEnvKeys(t, 5*time.Second, "mint_the_right_key", "mint_a_revoked_key")
	for _, c := range []struct{ path, body string }{
		{"/api/v2/agent/p1/job", `{"prompt":"x"}`},
		{"/api/v2/agent/p1/job/job_000001/message", `{"prompt":"x"}`},
		{"/api/v2/agent/p1/job/job_000001/track", ``},
	} {
		r := e.call("POST", c.path, "", c.body)
		if r.status != http.StatusBadGateway || !strings.Contains(r.errorMessage(t), "rejected the exporter's API key (HTTP 401)") {
			t.Errorf("%s: HTTP %d %s, want 502 naming the exporter's key", c.path, r.status, r.body)
		}
		if strings.Contains(string(r.body), "revoked") {
			t.Errorf("%s: the answer leaks the key: %s", c.path, r.body)
		}
	}
}

// TestAuditTrail: each submission, track and follow-up is logged at info
// with project, job, user, remote address and idempotency key, never the
// prompt; the job record keeps who submitted it and who started its turn.
func TestAuditTrail(t *testing.T) {
	t.Parallel()
	e := newIdemEnv(t, 5*time.Second)
	const secret = "the confidential roadmap for Q3"
	e.user = "alice"
	id := jobID(t, e.call("POST", "/api/v2/agent/p1/job", "create-1", `{"prompt":"`+secret+` #fake:pr:1h"}`))
	e.user = "bob"
	if r := e.call("POST", "/api/v2/agent/p1/job/"+id+"/message", "msg-1", `{"prompt":"`+secret+` again"}`); r.status != 200 {
		t.Fatalf("message: HTTP %d %s", r.status, r.body)
	}
	elsewhere, err := e.client.CreateJob(t.Context(), "p2", "x")
	if err != nil {
		t.Fatal(err)
	}
	e.user = "carol"
	if r := e.call("POST", "/api/v2/agent/p2/job/"+elsewhere.ID+"/track", "", ""); r.status != 201 {
		t.Fatalf("track: HTTP %d", r.status)
	}

	var v JobView
	if r := e.call("GET", "/api/v2/agent/p1/job/"+id, "", ""); json.Unmarshal(r.body, &v) != nil ||
		v.Tracking.SubmittedBy != "alice" || v.Tracking.TurnStartedBy != "bob" {
		t.Errorf("job %s: %s, want submittedBy alice, turnStartedBy bob", id, r.body)
	}
	if r := e.call("GET", "/api/v2/agent/p2/job/"+elsewhere.ID, "", ""); json.Unmarshal(r.body, &v) != nil || v.Tracking.SubmittedBy != "carol" {
		t.Errorf("tracked job: %s, want submittedBy carol", r.body)
	}

	logs := e.logs.String()
	if strings.Contains(logs, "confidential") {
		t.Errorf("the prompt reached the log:\n%s", logs)
	}
	for _, want := range []string{
		`level=info msg="agent job submitted" project=p1 job=` + id + ` user=alice remote=127.0.0.1:`,
		`idempotency_key=create-1`,
		`level=info msg="agent job follow-up message sent" project=p1 job=` + id + ` user=bob remote=127.0.0.1:`,
		`idempotency_key=msg-1 turn=2`,
		`level=info msg="agent job tracked" project=p2 job=` + elsewhere.ID + ` user=carol remote=127.0.0.1:`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("no log line with %q in:\n%s", want, logs)
		}
	}
}

// TestAuditNamesTheForwardedClient: a request another replica forwarded
// (and that the leader authenticated: only it sets WithClient) is logged
// and recorded with the client's address and user as that replica passed
// them, and the replica's own address as "via"; a client's headers naming
// another address change nothing.
func TestAuditNamesTheForwardedClient(t *testing.T) {
	t.Parallel()
	e := newIdemEnv(t, 5*time.Second)
	post := func(ctx func(*http.Request) *http.Request, key string) string {
		req := httptest.NewRequest("POST", "/api/v2/agent/p1/job", strings.NewReader(`{"prompt":"x #fake:pr:1h"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("X-Mintlify-Exporter-Client", "198.51.100.66:1")
		req.Header.Set("X-Forwarded-For", "198.51.100.66")
		req.RemoteAddr = "10.0.0.2:4000"
		rec := httptest.NewRecorder()
		e.srv.Config.Handler.ServeHTTP(rec, ctx(req))
		if rec.Code/100 != 2 {
			t.Fatalf("create: HTTP %d %s", rec.Code, rec.Body)
		}
		var j struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(rec.Body.Bytes(), &j)
		return j.ID
	}
	id := post(func(r *http.Request) *http.Request {
		return r.WithContext(gateway.WithClient(r.Context(), gateway.Client{Addr: "203.0.113.7:5555", User: "dave"}))
	}, "fwd-1")
	spoofed := post(func(r *http.Request) *http.Request { return r }, "direct-1")
	logs := e.logs.String()
	for _, want := range []string{
		`msg="agent job submitted" project=p1 job=` + id + ` user=dave remote=203.0.113.7:5555 via=10.0.0.2:4000`,
		`msg="agent job submitted" project=p1 job=` + spoofed + ` remote=10.0.0.2:4000 idempotency_key=direct-1`, // no empty user=
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("no log line with %q in:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, "198.51.100.66") {
		t.Errorf("a client's own header reached the audit log:\n%s", logs)
	}
	var v JobView
	if r := e.call("GET", "/api/v2/agent/p1/job/"+id, "", ""); json.Unmarshal(r.body, &v) != nil || v.Tracking.SubmittedBy != "dave" {
		t.Errorf("forwarded job: %s, want submittedBy dave", r.body)
	}
}
