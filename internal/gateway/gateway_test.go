package gateway

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/exporter-toolkit/web"
	"golang.org/x/crypto/bcrypt"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
)

// stubBackend answers without any API.
type stubBackend struct {
	creates int
	err     error
}

func (b *stubBackend) Create(_ context.Context, _, _ string) (*apiclient.Job, int, error) {
	b.creates++
	if b.err != nil {
		return nil, 0, b.err
	}
	return &apiclient.Job{ID: "job_1", Status: "active"}, http.StatusCreated, nil
}
func (b *stubBackend) Job(string, string) (JobView, bool) { return JobView{}, false }
func (b *stubBackend) Jobs(string, string) []JobView      { return nil }
func (b *stubBackend) Track(context.Context, string, string) (JobView, bool, error) {
	return JobView{}, false, &apiclient.APIError{StatusCode: 404}
}

// TestGatewayBasicAuthFromWebConfig serves the gateway the way main does,
// through exporter-toolkit with a web config file, and checks that basic
// auth guards it.
func TestAgentGatewayBasicAuthFromWebConfig(t *testing.T) {
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(cfgPath, []byte("basic_auth_users:\n  alice: "+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := &stubBackend{}
	mux := http.NewServeMux()
	mux.Handle("/api/", New(b, Options{Projects: []string{"p1"}}))
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
		req, _ := http.NewRequest("POST", base+"/api/v2/agent/p1/job", strings.NewReader(`{"prompt":"x"}`))
		req.Header.Set("Content-Type", "application/json")
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
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
	if b.creates != 0 {
		t.Fatalf("unauthenticated requests reached the backend %d times", b.creates)
	}
	if got := post("alice", "s3cret"); got != http.StatusCreated {
		t.Errorf("right credentials: HTTP %d, want 201 (the upstream's status echoed)", got)
	}
	if b.creates != 1 {
		t.Errorf("backend creates = %d, want 1", b.creates)
	}
}

func TestAgentGatewayLimiter(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newLimiter(3, time.Hour)
	for i := range 3 {
		if ok, _ := l.reserve("p", t0.Add(time.Duration(i)*time.Minute)); !ok {
			t.Fatalf("reserve %d refused", i)
		}
	}
	ok, wait := l.reserve("p", t0.Add(10*time.Minute))
	if ok || wait != 50*time.Minute {
		t.Errorf("4th: ok=%v wait=%s, want refused for 50m", ok, wait)
	}
	if ok, _ := l.reserve("q", t0); !ok {
		t.Error("limit is not per project")
	}
	l.release("p", t0.Add(2*time.Minute))
	if ok, _ := l.reserve("p", t0.Add(10*time.Minute)); !ok {
		t.Error("released slot not reusable")
	}
	if ok, _ := l.reserve("p", t0.Add(60*time.Minute)); !ok {
		t.Error("slot of t0 not freed after the window")
	}

	// Seeded from before a restart.
	l = newLimiter(2, time.Hour)
	l.seed("p", []time.Time{t0.Add(-2 * time.Hour), t0.Add(-30 * time.Minute), t0.Add(-10 * time.Minute)}, t0)
	ok, wait = l.reserve("p", t0)
	if ok || wait != 30*time.Minute {
		t.Errorf("after seed: ok=%v wait=%s, want refused for 30m", ok, wait)
	}

	// Disabled.
	l = newLimiter(-1, time.Hour)
	for range 1000 {
		if ok, _ := l.reserve("p", t0); !ok {
			t.Fatal("disabled limiter refused")
		}
	}
}

func TestAgentGatewayUpstreamErrorMapping(t *testing.T) {
	for _, c := range []struct {
		name   string
		err    error
		status int
		msg    string
	}{
		{"api error with message", &apiclient.APIError{StatusCode: 403, Message: "forbidden project"}, 403, "forbidden project"},
		{"api error without message", &apiclient.APIError{StatusCode: 500}, 500, "the Mintlify API answered HTTP 500"},
		{"api 3xx", &apiclient.APIError{StatusCode: 302}, 502, "the Mintlify API answered HTTP 302"},
		{"timeout", context.DeadlineExceeded, 504, "did not answer in time"},
		{"network", errors.New("dial tcp: refused"), 502, "could not be reached"},
		{"state", &StateError{JobID: "job_9", Err: errors.New("disk full")}, 500, "job_9"},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := New(&stubBackend{err: c.err}, Options{Projects: []string{"p1"}})
			rec := httptest.NewRecorder()
			req, _ := http.NewRequest("POST", "/api/v2/agent/p1/job", strings.NewReader(`{"prompt":"x"}`))
			req.Header.Set("Content-Type", "application/json")
			g.ServeHTTP(rec, req)
			if rec.Code != c.status || !strings.Contains(rec.Body.String(), c.msg) {
				t.Errorf("HTTP %d %s, want %d containing %q", rec.Code, rec.Body.String(), c.status, c.msg)
			}
		})
	}
}
