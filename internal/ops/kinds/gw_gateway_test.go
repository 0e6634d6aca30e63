package kinds_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/exporter-toolkit/web"
	"golang.org/x/crypto/bcrypt"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/gateway"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// TestGatewayBasicAuthFromWebConfig serves the gateway the way main does,
// through exporter-toolkit with a web config file, and checks that basic
// auth guards it.
func TestBasicAuthFromWebConfig(t *testing.T) {
	t.Parallel()
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(cfgPath, []byte("basic_auth_users:\n  alice: "+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := &stubTracker{}
	mux := http.NewServeMux()
	mux.Handle("/api/", newTestGateway(t, b, testConfig(nil)))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan error, 1)
	go func() {
		done <- web.Serve(ln, srv, &web.FlagConfig{WebConfigFile: &cfgPath}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("web.Serve: %v", err)
		}
	})
	base := "http://" + ln.Addr().String()

	post := func(user, pass string) int {
		return testutil.StatusAs(t, "POST", base+"/api/v2/agent/p1/job", user, pass, strings.NewReader(`{"prompt":"x"}`))
	}
	if got := post("", ""); got != http.StatusUnauthorized {
		t.Errorf("no credentials: HTTP %d, want 401", got)
	}
	if got := post("alice", "wrong"); got != http.StatusUnauthorized {
		t.Errorf("wrong password: HTTP %d, want 401", got)
	}
	if got := post("mallory", "s3cret"); got != http.StatusUnauthorized {
		t.Errorf("unknown user: HTTP %d, want 401", got)
	}
	if n := b.createCount(); n != 0 {
		t.Fatalf("unauthenticated requests reached the tracker %d times", n)
	}
	if got := post("alice", "s3cret"); got != http.StatusCreated {
		t.Errorf("right credentials: HTTP %d, want 201 (the upstream's status echoed)", got)
	}
	if n := b.createCount(); n != 1 {
		t.Errorf("tracker creates = %d, want 1", n)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lastUser != "alice" {
		t.Errorf("the tracker was told the user %q, want alice (the submitter on the job record)", b.lastUser)
	}
}

// TestPostBodiesAreJSONOrUndeclared: no route demands a Content-Type
// (cross-site requests are refused by net/http's CrossOriginProtection in
// internal/server, the API's clients send none on bodiless POSTs); a body
// declared as anything but JSON answers 415 in JSON and reaches no
// tracker call; an undeclared JSON body is read as JSON; track, whose body
// is ignored, takes any.
func TestPostBodiesAreJSONOrUndeclared(t *testing.T) {
	t.Parallel()
	b := &stubTracker{tracked: NewlyTracked}
	g := newTestGateway(t, b, testConfig(nil))
	for _, path := range []string{"/api/v2/agent/p1/job", "/api/v2/agent/p1/job/job_7/message"} {
		for _, ct := range []string{"application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "text/plain", "application/jsonp", "application/json-seq"} {
			r := do(t, g, "POST", path, ct, []byte(`{"prompt":"x"}`))
			if r.status != http.StatusUnsupportedMediaType || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") ||
				!strings.Contains(string(r.body), `"error":"the body must be JSON`) {
				t.Errorf("POST %s as %q: HTTP %d %s, want 415 in JSON", path, ct, r.status, r.body)
			}
		}
	}
	b.mu.Lock()
	calls := b.creates + b.messages + b.tracks
	b.mu.Unlock()
	if calls != 0 {
		t.Errorf("%d refused requests reached the tracker", calls)
	}
	if r := do(t, g, "POST", "/api/v2/agent/p1/job", "", []byte(`{"prompt":"x"}`)); r.status != http.StatusCreated {
		t.Errorf("create without Content-Type: HTTP %d %s, want 201", r.status, r.body)
	}
	for _, ct := range []string{"", "text/plain", "application/json", "Application/JSON; charset=utf-8"} {
		if r := do(t, g, "POST", "/api/v2/agent/p1/job/job_7/track", ct, nil); r.status != http.StatusCreated {
			t.Errorf("track as %q: HTTP %d %s, want 201", ct, r.status, r.body)
		}
	}
}

func TestUpstreamErrorMapping(t *testing.T) {
	t.Parallel()
	clock := testutil.NewClock(t0)
	for _, c := range []struct {
		name       string
		err        error
		status     int
		msg        string
		reason     string
		retryAfter string
	}{
		// The exporter's key: never passed on as 401/403, which mean the
		// caller's own credentials.
		{"api 401", &apiclient.APIError{StatusCode: 401, Message: "invalid or missing API key"}, 502, "rejected the exporter's API key (HTTP 401)", reasonUpstreamError, ""},
		{"api 403", &apiclient.APIError{StatusCode: 403, Message: "forbidden project"}, 502, "rejected the exporter's API key (HTTP 403)", reasonUpstreamError, ""},
		// About the caller's request: passed on with the API's message.
		{"api 400", &apiclient.APIError{StatusCode: 400, Message: "prompt too vague"}, 400, "prompt too vague", reasonUpstreamError, ""},
		{"api 409", &apiclient.APIError{StatusCode: 409, Message: "job is busy"}, 409, "job is busy", reasonUpstreamError, ""},
		{"api 413", &apiclient.APIError{StatusCode: 413}, 413, "the Mintlify API answered HTTP 413", reasonUpstreamError, ""},
		{"api 422", &apiclient.APIError{StatusCode: 422, Message: "bad prompt"}, 422, "bad prompt", reasonUpstreamError, ""},
		// The API failing: a gateway error; 503 and 504 stay retryable.
		{"api 500", &apiclient.APIError{StatusCode: 500}, 502, "the Mintlify API failed (HTTP 500)", reasonUpstreamError, ""},
		{"api 500 with message", &apiclient.APIError{StatusCode: 500, Message: "boom"}, 502, "boom", reasonUpstreamError, ""},
		{"api 503", &apiclient.APIError{StatusCode: 503, RetryAfter: 20 * time.Second}, 503, "HTTP 503", reasonUpstreamError, "20"},
		{"api 504", &apiclient.APIError{StatusCode: 504}, 504, "HTTP 504", reasonUpstreamError, ""},
		// Answers the exporter should never get: a gateway error.
		{"api 3xx", &apiclient.APIError{StatusCode: 302}, 502, "the Mintlify API answered HTTP 302", reasonUpstreamError, ""},
		{"api 405", &apiclient.APIError{StatusCode: 405}, 502, "the Mintlify API answered HTTP 405", reasonUpstreamError, ""},
		{"api 415", &apiclient.APIError{StatusCode: 415, RetryAfter: time.Second}, 502, "HTTP 415", reasonUpstreamError, ""},
		{"api 429", &apiclient.APIError{StatusCode: 429, RetryAfter: 30 * time.Second}, 429, "HTTP 429", reasonRateLimited, "30"},
		{"throttled", &apiclient.ThrottledError{Until: t0.Add(90 * time.Second)}, 429, "request not sent", reasonRateLimited, "90"},
		{"timeout", context.DeadlineExceeded, 504, "did not answer in time", reasonUpstreamError, ""},
		{"network", errors.New("dial tcp: refused"), 502, "could not be reached", reasonUpstreamError, ""},
		// Never a 2xx for a job that is not tracked.
		{"id collision", &IDCollisionError{What: "agent job", ID: "job_1", Intent: "ci_1"}, 502, "the new one is not followed", reasonUpstreamError, ""},
		// Not a rejection: the job exists and is tracked in memory.
		{"state", &StateError{ID: "job_9", Err: errors.New("disk full")}, 500, "job_9", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			g := newTestGateway(t, &stubTracker{createErr: c.err}, testConfig(clock))
			r := submit(t, g, "p1", "x")
			if r.status != c.status || !strings.Contains(r.errorMessage(t), c.msg) || r.header.Get("Retry-After") != c.retryAfter {
				t.Errorf("HTTP %d Retry-After %q %s, want %d %q containing %q", r.status, r.header.Get("Retry-After"), r.body, c.status, c.retryAfter, c.msg)
			}
			for _, reason := range rejectReasons {
				want := 0.0
				if reason == c.reason {
					want = 1
				}
				if got := rejected(g, "p1", reason); got != want {
					t.Errorf("rejected{reason=%q} = %v, want %v", reason, got, want)
				}
			}
			// The same failure of a track is answered alike, never counted.
			g = newTestGateway(t, &stubTracker{trackErr: c.err}, testConfig(clock))
			r = do(t, g, "POST", "/api/v2/agent/p1/job/job_7/track", "application/json", nil)
			if r.status != c.status {
				t.Errorf("track: HTTP %d, want %d", r.status, c.status)
			}
			for _, reason := range rejectReasons {
				if got := rejected(g, "p1", reason); got != 0 {
					t.Errorf("track failure counted as rejected{reason=%q}", reason)
				}
			}
		})
	}
}

func TestBadInputNeverReachesTracker(t *testing.T) {
	t.Parallel()
	b := &stubTracker{}
	cfg := testConfig(nil)
	cfg.MaxPromptBytes = 1024
	g := newTestGateway(t, b, cfg)

	big := strings.Repeat("a", 1025)
	huge := `{"prompt":"` + strings.Repeat("b", 8192) + `"}`
	cases := []struct {
		name        string
		contentType string
		body        string
		status      int
		reason      string
	}{
		{"text/plain", "text/plain", `{"prompt":"x"}`, 415, reasonUnsupportedMediaType},
		{"form", "application/x-www-form-urlencoded", `prompt=x`, 415, reasonUnsupportedMediaType},
		{"empty body", "application/json", ``, 400, reasonBadRequest},
		{"malformed", "application/json", `{"prompt":`, 400, reasonBadRequest},
		{"not an object", "application/json", `["x"]`, 400, reasonBadRequest},
		{"null body", "application/json", `null`, 400, reasonBadRequest},
		{"string body", "application/json", `"x"`, 400, reasonBadRequest},
		{"trailing data", "application/json", `{"prompt":"x"} {"prompt":"y"}`, 400, reasonBadRequest},
		{"missing prompt", "application/json", `{"promt":"x"}`, 400, reasonBadRequest},
		{"null prompt", "application/json", `{"prompt":null}`, 400, reasonBadRequest},
		{"empty prompt", "application/json", `{"prompt":""}`, 400, reasonBadRequest},
		{"blank prompt", "application/json", `{"prompt":"  \n\t"}`, 400, reasonBadRequest},
		{"number prompt", "application/json", `{"prompt":42}`, 400, reasonBadRequest},
		{"object prompt", "application/json", `{"prompt":{"text":"x"}}`, 400, reasonBadRequest},
		{"prompt over the limit", "application/json; charset=utf-8", `{"prompt":"` + big + `"}`, 413, reasonTooLarge},
		{"body over the limit", "application/json", huge, 413, reasonTooLarge},
	}
	want := map[string]float64{}
	for _, c := range cases {
		r := do(t, g, "POST", "/api/v2/agent/p1/job", c.contentType, []byte(c.body))
		if r.status != c.status {
			t.Errorf("%s: HTTP %d, want %d: %s", c.name, r.status, c.status, r.body)
		}
		r.errorMessage(t)
		if ct := r.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q", c.name, ct)
		}
		want[c.reason]++
	}
	if n := b.createCount(); n != 0 {
		t.Errorf("%d bad requests reached the tracker", n)
	}
	for reason, n := range want {
		if got := rejected(g, "p1", reason); got != n {
			t.Errorf("rejected{reason=%q} = %v, want %v", reason, got, n)
		}
	}
	// The limit is on the body: exactly at it is accepted, a byte over is not.
	atLimit := `{"prompt":"` + strings.Repeat("c", 1024-len(`{"prompt":""}`)) + `"}`
	if r := do(t, g, "POST", "/api/v2/agent/p1/job", "application/json", []byte(atLimit+" ")); r.status != 413 {
		t.Errorf("1025-byte body: HTTP %d, want 413", r.status)
	}
	if r := do(t, g, "POST", "/api/v2/agent/p1/job", "application/json", []byte(atLimit)); r.status != 201 {
		t.Errorf("1024-byte body: HTTP %d, want 201 (the upstream's status echoed): %s", r.status, r.body)
	}
}

func TestUnknownProject(t *testing.T) {
	t.Parallel()
	b := &stubTracker{}
	cfg := testConfig(nil)
	cfg.Projects = []string{"p1"}
	g := newTestGateway(t, b, cfg)
	for _, r := range []response{
		submit(t, g, "p2", "hello"),
		do(t, g, "POST", "/api/v2/agent/p2/job", "text/plain", []byte("x")),
		do(t, g, "GET", "/api/v2/agent/p2/jobs", "", nil),
		do(t, g, "GET", "/api/v2/agent/p2/job/job_1", "", nil),
		do(t, g, "POST", "/api/v2/agent/p2/job/job_1/track", "application/json", nil),
	} {
		if r.status != http.StatusNotFound {
			t.Errorf("HTTP %d, want 404: %s", r.status, r.body)
		}
		r.errorMessage(t)
	}
	if n := b.createCount(); n != 0 {
		t.Errorf("%d creates reached the tracker", n)
	}
	v, _ := registries.Load(g)
	reg := v.(*prometheus.Registry)
	if n := countSeries(t, reg, "mintlify_agent_job_submit_rejected_total"); n != len(rejectReasons) {
		t.Errorf("%d rejected series, want %d: p1's only, and every reason at 0", n, len(rejectReasons))
	}
	if problems, err := promtestutil.GatherAndLint(reg); err != nil || len(problems) != 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
}

func TestRoutes(t *testing.T) {
	t.Parallel()
	link := "https://github.com/acme/docs/pull/3"
	b := &stubTracker{views: []JobView{
		{Job: apiclient.Job{ID: "job_3", Status: "failed"}},
		{Job: apiclient.Job{ID: "job_2", Status: "active", PRLink: &link}},
		{Job: apiclient.Job{ID: "job_1", Status: "active"}},
	}}
	g := newTestGateway(t, b, testConfig(nil))
	r := do(t, g, "GET", "/api/v2/agent/p1/job", "", nil)
	if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "POST" {
		t.Errorf("GET .../job: HTTP %d Allow %q", r.status, r.header.Get("Allow"))
	}
	r.errorMessage(t)
	if r = do(t, g, "DELETE", "/api/v2/agent/p1/job/x", "", nil); r.status != http.StatusMethodNotAllowed {
		t.Errorf("DELETE .../job/x: HTTP %d", r.status)
	}
	if r = do(t, g, "GET", "/api/v1/whatever", "", nil); r.status != http.StatusNotFound {
		t.Errorf("unknown path: HTTP %d", r.status)
	}
	r.errorMessage(t)
	if r = do(t, g, "GET", "/api/v2/agent/p1/job/job_nope", "", nil); r.status != http.StatusNotFound {
		t.Errorf("untracked job: HTTP %d", r.status)
	}
	if r = do(t, g, "GET", "/api/v2/agent/p1/job/job_2", "", nil); r.status != http.StatusOK || !strings.Contains(string(r.body), link) {
		t.Errorf("tracked job: HTTP %d %s", r.status, r.body)
	}

	list := func(query string) []string {
		t.Helper()
		r := do(t, g, "GET", "/api/v2/agent/p1/jobs"+query, "", nil)
		if r.status != http.StatusOK {
			t.Fatalf("list%s: HTTP %d: %s", query, r.status, r.body)
		}
		var l JobList
		if err := json.Unmarshal(r.body, &l); err != nil || l.Jobs == nil {
			t.Fatalf("list%s: %v: %s", query, err, r.body)
		}
		var ids []string
		for _, v := range l.Jobs {
			ids = append(ids, v.ID)
		}
		return ids
	}
	for query, want := range map[string][]string{
		"":                         {"job_3", "job_2", "job_1"},
		"?status=active":           {"job_2", "job_1"},
		"?status=archived":         nil,
		"?limit=2":                 {"job_3", "job_2"},
		"?status=active&limit=1":   {"job_2"},
		"?status=failed&limit=100": {"job_3"},
	} {
		if got := list(query); !slices.Equal(got, want) {
			t.Errorf("list%s = %v, want %v", query, got, want)
		}
	}
	// A status that is none of the documented ones is a typo: 400 naming
	// them, not an empty list that reads as "no such jobs".
	for _, q := range []string{"?limit=0", "?limit=-1", "?limit=x", "?status=bogus", "?status=Active", "?status=bogus&limit=1"} {
		r := do(t, g, "GET", "/api/v2/agent/p1/jobs"+q, "", nil)
		if r.status != 400 || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
			t.Errorf("%s: HTTP %d %q, want 400 in JSON", q, r.status, r.header.Get("Content-Type"))
		}
		if strings.Contains(q, "status=") && !strings.Contains(string(r.body), "active, completed, failed, archived, lost") {
			t.Errorf("%s: %s does not list the accepted statuses", q, r.body)
		}
	}
	// The list carries the API's field names.
	r = do(t, g, "GET", "/api/v2/agent/p1/jobs", "", nil)
	for _, field := range []string{`"id"`, `"status"`, `"source"`, `"repository"`, `"ref"`, `"model"`, `"prLink"`, `"createdAt"`, `"archivedAt"`, `"tracking"`} {
		if !strings.Contains(string(r.body), field) {
			t.Errorf("list body lacks %s", field)
		}
	}

	// Track: 201 when newly tracked, 200 when already, 404 when unknown upstream.
	for _, c := range []struct {
		b      *stubTracker
		status int
	}{
		{&stubTracker{tracked: NewlyTracked}, http.StatusCreated},
		{&stubTracker{tracked: AlreadyTracked}, http.StatusOK},
		{&stubTracker{trackErr: &apiclient.APIError{StatusCode: 404}}, http.StatusNotFound},
	} {
		g := newTestGateway(t, c.b, testConfig(nil))
		if r := do(t, g, "POST", "/api/v2/agent/p1/job/job_7/track", "application/json", nil); r.status != c.status {
			t.Errorf("track (%+v): HTTP %d, want %d", c.b, r.status, c.status)
		}
	}
}

func TestLocalRateLimit(t *testing.T) {
	t.Parallel()
	clock := testutil.NewClock(t0)
	b := &stubTracker{}
	g := newTestGateway(t, b, testConfig(clock))
	for i := range 100 {
		if r := submit(t, g, "p1", "x"); r.status != 201 {
			t.Fatalf("submission %d: HTTP %d: %s", i+1, r.status, r.body)
		}
		clock.Advance(time.Second)
	}
	r := submit(t, g, "p1", "one too many")
	if r.status != http.StatusTooManyRequests {
		t.Fatalf("101st submission: HTTP %d, want 429: %s", r.status, r.body)
	}
	r.errorMessage(t)
	// The first slot frees an hour after it was taken: 3600s - 100s.
	if got := r.header.Get("Retry-After"); got != strconv.Itoa(3600-100) {
		t.Errorf("Retry-After %q, want 3500", got)
	}
	if n := b.createCount(); n != 100 {
		t.Errorf("%d creates reached the tracker, want 100", n)
	}
	if got := rejected(g, "p1", reasonRateLimited); got != 1 {
		t.Errorf("rate_limited = %v", got)
	}
	// The limit is per project.
	if r := submit(t, g, "p2", "other project"); r.status != 201 {
		t.Errorf("other project: HTTP %d", r.status)
	}
	// The window slides.
	clock.Advance(3500 * time.Second)
	if r := submit(t, g, "p1", "a slot freed"); r.status != 201 {
		t.Errorf("after the first slot freed: HTTP %d", r.status)
	}

	// A restart does not reset the window: the tracker's recent creates
	// seed it.
	var recent []time.Time
	for i := range 100 {
		recent = append(recent, clock.Now().Add(-time.Duration(i)*time.Second))
	}
	b = &stubTracker{recent: map[string][]time.Time{"p1": recent}}
	g = newTestGateway(t, b, testConfig(clock))
	if r := submit(t, g, "p1", "after restart"); r.status != http.StatusTooManyRequests {
		t.Errorf("after restart: HTTP %d, want 429", r.status)
	}
	if n := b.createCount(); n != 0 {
		t.Errorf("%d creates reached the tracker after restart", n)
	}
	// Nor does a reload that adds a project whose creates the tracker
	// reads from an earlier run's state as it adds the project.
	b = &stubTracker{}
	g = newTestGateway(t, b, testConfig(clock))
	b.recent = map[string][]time.Time{"p3": recent}
	setProjects(g, []string{"p1", "p2", "p3"})
	if r := submit(t, g, "p3", "added by a reload"); r.status != http.StatusTooManyRequests {
		t.Errorf("project added by a reload: HTTP %d, want 429", r.status)
	}
	if n := b.createCount(); n != 0 {
		t.Errorf("%d creates reached the tracker for the added project", n)
	}

	// 0 disables the local limit.
	cfg := testConfig(clock)
	cfg.CreateLimitPerHour = 0
	g = newTestGateway(t, b, cfg)
	for i := range 150 {
		if r := submit(t, g, "p1", "x"); r.status != 201 {
			t.Fatalf("no limit, submission %d: HTTP %d", i+1, r.status)
		}
	}
}

func TestThrottledCreateGivesItsSlotBack(t *testing.T) {
	t.Parallel()
	clock := testutil.NewClock(t0)
	b := &stubTracker{createErr: &apiclient.ThrottledError{Until: t0.Add(time.Minute)}}
	cfg := testConfig(clock)
	cfg.CreateLimitPerHour = 1
	g := newTestGateway(t, b, cfg)
	if r := submit(t, g, "p1", "x"); r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") != "60" {
		t.Fatalf("throttled: HTTP %d Retry-After %q", r.status, r.header.Get("Retry-After"))
	}
	b.mu.Lock()
	b.createErr = nil
	b.mu.Unlock()
	if r := submit(t, g, "p1", "x"); r.status != 201 {
		t.Errorf("after a create that was never sent: HTTP %d, want 201 (its slot given back)", r.status)
	}
}

func TestDisabled(t *testing.T) {
	t.Parallel()
	r := do(t, gateway.Disabled(), "POST", "/api/v2/agent/p1/job", "application/json", []byte(`{"prompt":"x"}`))
	if r.status != http.StatusNotFound || !strings.Contains(r.errorMessage(t), "--web.enable-agent-api") {
		t.Errorf("HTTP %d %s", r.status, r.body)
	}
}

func TestGatewayConfigValidate(t *testing.T) {
	t.Parallel()
	good := testConfig(nil)
	if err := good.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	// (Its projects are the engine's, which checks them: TestConfigValidate.)
	for field, mutate := range map[string]func(*gateway.Config){
		"MaxPromptBytes":     func(c *gateway.Config) { c.MaxPromptBytes = 0 },
		"CreateLimitPerHour": func(c *gateway.Config) { c.CreateLimitPerHour = -1 },
		"UpstreamTimeout":    func(c *gateway.Config) { c.UpstreamTimeout = 0 },
	} {
		c := good
		mutate(&c)
		var fe *config.FieldError
		if err := c.Validate(); !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("bad %s: %v", field, err)
		}
		if _, err := newGatewayWith(t, &stubTracker{}, nil, c); err == nil {
			t.Errorf("New with a bad %s succeeded", field)
		}
	}
	big := good
	big.MaxPromptBytes = 16<<20 + 1
	if err := big.Validate(); err == nil {
		t.Error("MaxPromptBytes over 16MiB accepted")
	}
}

func TestTrackerErrorsAnswered(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err    error
		status int
		reason string
		// freed: the create limit slot taken (the stub admits every
		// create) is given back, because nothing was sent. The real
		// tracker admits no replay or key conflict at all.
		freed bool
		slot  bool // check freed
	}{
		{&IntentError{Err: errors.New("disk full")}, http.StatusServiceUnavailable, reasonStateError, true, true},
		{ErrIdempotencyKeyReused, http.StatusUnprocessableEntity, reasonIdempotencyConflict, false, false},
		{ErrIdempotencyKeyInFlight, http.StatusConflict, reasonIdempotencyConflict, false, false},
		{&OutcomeUnknownError{Intent: "ci_1", Project: "p1", What: "create"}, http.StatusConflict, reasonIdempotencyConflict, false, false},
		{&OutcomeUnknownError{Intent: "ci_1", Project: "p1", What: "create", Err: context.DeadlineExceeded}, http.StatusGatewayTimeout, reasonUpstreamError, false, true},
	} {
		b := &stubTracker{createErr: tc.err}
		cfg := testConfig(testutil.NewClock(t0))
		cfg.CreateLimitPerHour = 1
		g := newTestGateway(t, b, cfg)
		r := submit(t, g, "p1", "x")
		if r.status != tc.status || rejected(g, "p1", tc.reason) != 1 || !strings.Contains(r.errorMessage(t), strings.SplitN(tc.err.Error(), ":", 2)[0]) {
			t.Errorf("%v: HTTP %d %s", tc.err, r.status, r.body)
		}
		b.mu.Lock()
		b.createErr = nil
		b.mu.Unlock()
		if got := submit(t, g, "p1", "x").status; tc.slot && (got == http.StatusCreated) != tc.freed {
			t.Errorf("%v: next create HTTP %d, slot given back: %v", tc.err, got, tc.freed)
		}
	}
}
