package server

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/exporter-toolkit/web"
	"golang.org/x/crypto/bcrypt"

	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// served is a front serving next through exporter-toolkit on loopback,
// as main serves the exporter.
type served struct {
	front *AuthFront
	url   string
	file  string
	logs  *testutil.SyncBuffer
}

func serveFront(t testing.TB, config string, o AuthOptions, next http.Handler) *served {
	t.Helper()
	file := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &testutil.SyncBuffer{}
	o.ConfigFile, o.Logger = file, log.NewLogfmtLogger(logs)
	f, err := NewAuthFront(o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: f.Wrap(next), ReadHeaderTimeout: 5 * time.Second}
	done := make(chan error, 1)
	go func() {
		done <- web.Serve(ln, srv, f.toolkitFlags(&web.FlagConfig{}), slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	})
	return &served{front: f, url: "http://" + ln.Addr().String(), file: file, logs: logs}
}

func usersYAML(t testing.TB, cost int, users ...string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("basic_auth_users:\n")
	for _, u := range users {
		h, err := bcrypt.GenerateFromPassword([]byte(u+"-pw"), cost)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("  " + u + ": " + string(h) + "\n")
	}
	return b.String()
}

type answer struct {
	status int
	header http.Header
	body   string
}

func call(t testing.TB, client *http.Client, method, url, user, pass string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(`{"prompt":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(body)}
}

// recorder is the protected handler: it records who reached it.
type recorder struct {
	mu    sync.Mutex
	users []string
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	user, _, _ := r.BasicAuth()
	rec.mu.Lock()
	rec.users = append(rec.users, user)
	rec.mu.Unlock()
	w.WriteHeader(http.StatusCreated)
}

func (rec *recorder) reached() []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.users)
}

// TestFailsClosedWhenUsersDisappear: exporter-toolkit alone served every
// request, unauthenticated job creates included, while the re-read file
// named no user (emptied, basic_auth_users: {}, half-written). Behind the
// front, such a version is refused: the last good users stay in force,
// the refusal is logged and shown by a metric, and a good version is
// applied again.
func TestFailsClosedWhenUsersDisappear(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	rec := &recorder{}
	s := serveFront(t, usersYAML(t, bcrypt.MinCost, "alice"), AuthOptions{Registerer: reg}, rec)
	job := s.url + "/api/v2/agent/p1/job"
	c := http.DefaultClient
	if !s.front.Protected() {
		t.Fatal("not protected")
	}

	for _, version := range []string{"", "basic_auth_users: {}\n", "basic_auth_users:\n", "# being rewritten\n",
		"basic_auth_users:\n  alice: $2y$10$trunc", "tls_server_config: [", "-"} {
		if err := os.WriteFile(s.file, []byte(version), 0o600); err != nil {
			t.Fatal(err)
		}
		a := call(t, c, "POST", job, "", "")
		if a.status != http.StatusUnauthorized || a.header.Get("Content-Type") != "application/json" ||
			!strings.Contains(a.body, `"error":"unauthorized`) || !strings.HasPrefix(a.header.Get("WWW-Authenticate"), "Basic ") {
			t.Errorf("file %q: unauthenticated POST: HTTP %d %s %q, want 401 in JSON", version, a.status, a.body, a.header)
		}
		if a := call(t, c, "POST", job, "alice", "alice-pw"); a.status != http.StatusCreated {
			t.Errorf("file %q: alice: HTTP %d %s, want her request served", version, a.status, a.body)
		}
		if got := promtestutil.ToFloat64(s.front.reloadOK); got != 0 {
			t.Errorf("file %q: last_reload_successful = %v, want 0", version, got)
		}
	}
	if err := os.Remove(s.file); err != nil {
		t.Fatal(err)
	}
	if a := call(t, c, "POST", job, "", ""); a.status != http.StatusUnauthorized {
		t.Errorf("file deleted: unauthenticated POST: HTTP %d", a.status)
	}
	if got := rec.reached(); !slices.Equal(got, slices.Repeat([]string{"alice"}, len(got))) || len(got) != 7 {
		t.Errorf("the handler was reached by %q, want alice 7 times", got)
	}
	logs := s.logs.String()
	if !strings.Contains(logs, "level=error") || !strings.Contains(logs, "basic_auth_users is empty") || strings.Count(logs, "not applied") < 5 {
		t.Errorf("the refusals are not logged:\n%s", logs)
	}

	// A good version with another user applies at once.
	if err := os.WriteFile(s.file, []byte(usersYAML(t, bcrypt.MinCost, "bob")), 0o600); err != nil {
		t.Fatal(err)
	}
	if a := call(t, c, "POST", job, "bob", "bob-pw"); a.status != http.StatusCreated {
		t.Errorf("bob after the reload: HTTP %d", a.status)
	}
	if a := call(t, c, "POST", job, "alice", "alice-pw"); a.status != http.StatusUnauthorized {
		t.Errorf("alice, removed: HTTP %d, want 401", a.status)
	}
	if got := promtestutil.ToFloat64(s.front.reloadOK); got != 1 {
		t.Errorf("last_reload_successful = %v after a good version, want 1", got)
	}
	if err := promtestutil.GatherAndCompare(reg, strings.NewReader(`
# HELP mintlify_web_auth_refused_total Requests refused by basic auth, by reason: missing, invalid, client_limited, overloaded.
# TYPE mintlify_web_auth_refused_total counter
mintlify_web_auth_refused_total{reason="client_limited"} 0
mintlify_web_auth_refused_total{reason="invalid"} 1
mintlify_web_auth_refused_total{reason="missing"} 8
mintlify_web_auth_refused_total{reason="overloaded"} 0
`), "mintlify_web_auth_refused_total"); err != nil {
		t.Error(err)
	}
}

// TestWithoutUsersEverythingPasses: a web config without users (TLS only,
// or none) protects nothing, as with exporter-toolkit alone; users added
// later are enforced from then on, and cannot be dropped again.
func TestWithoutUsersEverythingPasses(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	s := serveFront(t, "http_server_config:\n  headers:\n    X-Frame-Options: deny\n", AuthOptions{}, rec)
	a := call(t, http.DefaultClient, "GET", s.url+"/metrics", "", "")
	if a.status != http.StatusCreated || a.header.Get("X-Frame-Options") != "deny" {
		t.Errorf("HTTP %d, headers %v: want served, with the toolkit's configured header", a.status, a.header)
	}
	if err := os.WriteFile(s.file, []byte(usersYAML(t, bcrypt.MinCost, "alice")), 0o600); err != nil {
		t.Fatal(err)
	}
	if a := call(t, http.DefaultClient, "GET", s.url+"/metrics", "", ""); a.status != http.StatusUnauthorized {
		t.Errorf("users added: HTTP %d, want 401", a.status)
	}
	if err := os.WriteFile(s.file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if a := call(t, http.DefaultClient, "GET", s.url+"/metrics", "", ""); a.status != http.StatusUnauthorized {
		t.Errorf("users dropped again: HTTP %d, want 401", a.status)
	}
}

func TestNewFrontRefusesABadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"bad hash":    "basic_auth_users:\n  alice: plain\n",
		"unknown key": "basic_auth_user:\n  alice: x\n",
		"bad yaml":    "basic_auth_users: [",
		"bad header":  "http_server_config:\n  headers:\n    Server: x\n",
		"no cert":     "tls_server_config:\n  cert_file: missing.crt\n  key_file: missing.key\n",
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".yml")
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if f, err := NewAuthFront(AuthOptions{ConfigFile: p}); err == nil || !strings.HasPrefix(err.Error(), "--web.config.file: ") {
			if f != nil {
				f.Close()
			}
			t.Errorf("%s: %v, want an error naming --web.config.file", name, err)
		}
	}
	if _, err := NewAuthFront(AuthOptions{ConfigFile: filepath.Join(dir, "missing.yml")}); err == nil {
		t.Error("a missing file was accepted")
	}
}

// TestClientLimiter: each address has a bucket of attempts; failures keep
// their token, successes give it back, and the bucket refills with time.
func TestClientLimiter(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1e9, 0)
	l := newClientLimiter(3, time.Second, 2)
	for i := range 3 {
		if ok, _ := l.take("a", t0); !ok {
			t.Fatalf("attempt %d refused", i)
		}
	}
	if ok, wait := l.take("a", t0); ok || wait != time.Second {
		t.Errorf("4th attempt: %v, wait %s; want refused for 1s", ok, wait)
	}
	if ok, _ := l.take("b", t0); !ok {
		t.Error("the limit is not per address")
	}
	if ok, _ := l.take("a", t0.Add(time.Second)); !ok {
		t.Error("no token back after the interval")
	}
	l.give("a", t0.Add(time.Second))
	if ok, _ := l.take("a", t0.Add(time.Second)); !ok {
		t.Error("a given-back token is not usable")
	}
	// Full: a third address is let through untracked while a and b are
	// not idle, and tracked once b's bucket is full again.
	if ok, _ := l.take("c", t0.Add(time.Second)); !ok || len(l.buckets) != 2 {
		t.Errorf("third address: %v with %d buckets", ok, len(l.buckets))
	}
	if ok, _ := l.take("c", t0.Add(time.Hour)); !ok || l.buckets["c"] == nil || len(l.buckets) != 2 {
		t.Errorf("idle buckets not forgotten: %d buckets", len(l.buckets))
	}
}

func randomPassword() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// TestRememberedCredentialsNeedNoCheck: with every bcrypt slot taken and
// no room to wait (as under an attack of wrong passwords), a credential
// that needs a check is refused at once (503), while a verified one is
// served, and a known-bad one refused (401), from memory: an
// authenticated scrape never waits for bcrypt. (Its latency under a
// 200-client attack: BenchmarkScrapeDuringWrongPasswordAttack.)
func TestRememberedCredentialsNeedNoCheck(t *testing.T) {
	t.Parallel()
	s := serveFront(t, usersYAML(t, bcrypt.MinCost, "alice"), AuthOptions{MaxConcurrentChecks: 1, MaxWaitingChecks: 1,
		FailureBurst: 1000, FailureDelay: time.Nanosecond}, &recorder{})
	c := http.DefaultClient
	wrong := randomPassword()
	if a := call(t, c, "GET", s.url+"/metrics", "alice", wrong); a.status != http.StatusUnauthorized {
		t.Fatalf("wrong password: HTTP %d", a.status)
	}
	if a := call(t, c, "GET", s.url+"/metrics", "alice", "alice-pw"); a.status != http.StatusCreated {
		t.Fatalf("right password: HTTP %d", a.status)
	}

	// The attack: the only slot taken, the only waiting place too.
	s.front.slots <- struct{}{}
	s.front.waiting.Add(1)
	defer func() { s.front.waiting.Add(-1); <-s.front.slots }()
	if a := call(t, c, "GET", s.url+"/metrics", "alice", randomPassword()); a.status != http.StatusServiceUnavailable {
		t.Errorf("a new password during the attack: HTTP %d, want 503 (it needs a check)", a.status)
	}
	for range 3 {
		if a := call(t, c, "GET", s.url+"/metrics", "alice", "alice-pw"); a.status != http.StatusCreated {
			t.Errorf("the verified credential during the attack: HTTP %d %s, want served from memory", a.status, a.body)
		}
		a := call(t, c, "GET", s.url+"/metrics", "alice", wrong)
		var m map[string]string
		if a.status != http.StatusUnauthorized || json.Unmarshal([]byte(a.body), &m) != nil || m["error"] == "" {
			t.Errorf("the known-bad password during the attack: HTTP %d %q, want a JSON 401 from memory", a.status, a.body)
		}
	}
}

// TestFIFOAsWebConfig: --web.config.file naming a FIFO is refused at the
// start with one line; one that becomes a FIFO while the exporter runs
// (the file is re-read for every request) hangs no request: the last good
// version stays in force and the change is logged as refused.
func TestFIFOAsWebConfig(t *testing.T) {
	t.Parallel()
	fifo := filepath.Join(t.TempDir(), "web.yml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewAuthFront(AuthOptions{ConfigFile: fifo}); err == nil || !strings.Contains(err.Error(), "FIFO") || strings.Contains(err.Error(), "\n") {
		t.Errorf("NewAuthFront on a FIFO: %v, want one line saying it is a FIFO", err)
	}

	rec := &recorder{}
	s := serveFront(t, usersYAML(t, bcrypt.MinCost, "alice"), AuthOptions{}, rec)
	if err := os.Remove(s.file); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(s.file, 0o600); err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Timeout: 30 * time.Second}
	for range 3 {
		if a := call(t, c, "GET", s.url+"/-/healthy", "alice", "alice-pw"); a.status != http.StatusCreated { // the recorder answers 201
			t.Errorf("alice with the web config a FIFO: HTTP %d %s, want served", a.status, a.body)
		}
		if a := call(t, c, "GET", s.url+"/-/healthy", "", ""); a.status != http.StatusUnauthorized {
			t.Errorf("no credentials with the web config a FIFO: HTTP %d, want 401 (the last good users)", a.status)
		}
	}
	if logs := s.logs.String(); strings.Count(logs, "is a FIFO") != 1 {
		t.Errorf("want the FIFO logged once:\n%s", logs)
	}
}
