package server

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-kit/log"
	"golang.org/x/crypto/bcrypt"
)

// reached counts the requests a route served.
type reached struct{ n map[string]int }

func (c *reached) handler(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		c.n[name]++
		_, _ = io.WriteString(w, name)
	})
}

func newTestServer(t *testing.T, webConfig string, allowed ...string) (http.Handler, *reached) {
	t.Helper()
	o := AuthOptions{}
	if webConfig != "" {
		o.ConfigFile = filepath.Join(t.TempDir(), "web.yml")
		if err := os.WriteFile(o.ConfigFile, []byte(webConfig), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	front, err := NewAuthFront(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = front.Close() })
	c := &reached{n: map[string]int{}}
	s, err := New(Flags{TelemetryPath: "/metrics", AllowedHosts: allowed}, Routes{
		Metrics: c.handler("metrics"), API: c.handler("api"), Reload: c.handler("reload"), Status: c.handler("status"), Front: front,
	}, log.NewNopLogger(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s.srv.Handler, c
}

func do(h http.Handler, method, url string, header map[string]string, user string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, url, strings.NewReader(`{"prompt":"x"}`))
	for k, v := range header {
		r.Header.Set(k, v)
	}
	if user != "" {
		r.SetBasicAuth(user, user+"-pw")
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// A cross-site form post (what a page elsewhere sends, with the
// credentials the browser keeps) changes nothing: POST /-/reload and the
// gateway's POSTs answer 403 in JSON, with or without basic auth; the
// exporter's own origin, and clients that are not browsers, pass.
func TestCrossSiteRequestsAreRefused(t *testing.T) {
	t.Parallel()
	hash, _ := bcrypt.GenerateFromPassword([]byte("alice-pw"), bcrypt.MinCost)
	for name, webConfig := range map[string]string{"no auth": "", "basic auth": "basic_auth_users:\n  alice: " + string(hash) + "\n"} {
		h, c := newTestServer(t, webConfig)
		for _, url := range []string{"http://127.0.0.1:9871/-/reload", "http://127.0.0.1:9871/api/v2/agent/p1/job"} {
			for _, header := range []map[string]string{
				{"Sec-Fetch-Site": "cross-site"},
				{"Sec-Fetch-Site": "same-site"},
				{"Origin": "http://evil.example"},
				{"Origin": "null"},
			} {
				w := do(h, http.MethodPost, url, header, "alice")
				if w.Code != http.StatusForbidden || w.Header().Get("Content-Type") != "application/json" || !strings.Contains(w.Body.String(), `"error":"cross-site request refused`) {
					t.Errorf("%s: POST %s with %v: %d %s, want 403 JSON", name, url, header, w.Code, w.Body)
				}
			}
			for _, header := range []map[string]string{
				{"Sec-Fetch-Site": "same-origin"},
				{"Origin": "http://127.0.0.1:9871"},
				{}, // curl
			} {
				if w := do(h, http.MethodPost, url, header, "alice"); w.Code != http.StatusOK {
					t.Errorf("%s: POST %s with %v: %d %s, want served", name, url, header, w.Code, w.Body)
				}
			}
		}
		if c.n["reload"] != 3 || c.n["api"] != 3 {
			t.Errorf("%s: reached %v, want reload and api 3 times each (the same-origin requests)", name, c.n)
		}
		// Reads are not state changes.
		if w := do(h, http.MethodGet, "http://127.0.0.1:9871/metrics", map[string]string{"Sec-Fetch-Site": "cross-site"}, "alice"); w.Code != http.StatusOK {
			t.Errorf("%s: a cross-site GET of the metrics: %d", name, w.Code)
		}
	}
}

// Without basic auth the gateway answers only localhost, IP addresses and
// the configured names in Host: a page at a name an attacker resolves to
// 127.0.0.1 (DNS rebinding) gets 403. With basic auth any name passes (the
// page has no credentials).
func TestGatewayRefusesRebindingHostsWithoutAuth(t *testing.T) {
	t.Parallel()
	h, c := newTestServer(t, "", "exporter.internal")
	for _, host := range []string{"evil.example", "evil.example:9871", "127.0.0.1.evil.example", "localhost.evil.example", ""} {
		r := httptest.NewRequest(http.MethodPost, "/api/v2/agent/p1/job", strings.NewReader("{}"))
		r.Host = host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "--web.agent-api-allowed-host") {
			t.Errorf("Host %q: %d %s, want 403 naming the flag", host, w.Code, w.Body)
		}
	}
	for _, host := range []string{"localhost:9871", "LOCALHOST", "app.localhost", "127.0.0.1:9871", "[::1]:9871", "10.1.2.3", "exporter.internal:9871", "Exporter.Internal."} {
		r := httptest.NewRequest(http.MethodGet, "/api/v2/agent/p1/jobs", nil)
		r.Host = host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			t.Errorf("Host %q: %d %s, want served", host, w.Code, w.Body)
		}
	}
	if c.n["api"] != 8 {
		t.Errorf("the gateway was reached %d times, want 8", c.n["api"])
	}
	// Other routes are not the gateway's.
	r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	r.Host = "evil.example"
	if w := httptest.NewRecorder(); func() int { h.ServeHTTP(w, r); return w.Code }() != http.StatusOK {
		t.Error("the metrics refused a host name")
	}

	hash, _ := bcrypt.GenerateFromPassword([]byte("alice-pw"), bcrypt.MinCost)
	h, _ = newTestServer(t, "basic_auth_users:\n  alice: "+string(hash)+"\n")
	r = httptest.NewRequest(http.MethodGet, "/api/v2/agent/p1/jobs", nil)
	r.Host = "exporter.example.com"
	r.SetBasicAuth("alice", "alice-pw")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Errorf("with basic auth, Host exporter.example.com: %d %s, want served", w.Code, w.Body)
	}
}

func TestAllowedHostFlagIsValidated(t *testing.T) {
	t.Parallel()
	for _, h := range []string{"", "http://x", "x:9871"} {
		f := Flags{TelemetryPath: "/metrics", AllowedHosts: []string{h}}
		if err := f.Validate(); err == nil || !strings.Contains(err.Error(), "--web.agent-api-allowed-host") {
			t.Errorf("%q: %v", h, err)
		}
	}
}

// TestLargeHeadersAreRefused: a request whose headers pass MaxHeaderBytes
// (64 KiB; Go's default is 1 MiB) gets 431 before any route sees it; one
// of 16 KiB is served.
func TestLargeHeadersAreRefused(t *testing.T) {
	front, err := NewAuthFront(AuthOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = front.Close() })
	c := &reached{n: map[string]int{}}
	s, err := New(Flags{TelemetryPath: "/metrics"}, Routes{
		Metrics: c.handler("metrics"), API: c.handler("api"), Reload: c.handler("reload"), Status: c.handler("status"), Front: front,
	}, log.NewNopLogger(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.srv.Serve(ln) }()
	t.Cleanup(func() { _ = s.srv.Close() })
	for _, tc := range []struct {
		size int
		want int
	}{{16 << 10, http.StatusOK}, {100 << 10, http.StatusRequestHeaderFieldsTooLarge}} {
		req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/api/v2/agent/p/job", strings.NewReader(`{"prompt":"x"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Padding", strings.Repeat("a", tc.size))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%d bytes of headers: %v", tc.size, err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%d bytes of headers: %d, want %d", tc.size, resp.StatusCode, tc.want)
		}
	}
	if c.n["api"] != 1 {
		t.Errorf("the gateway served %d requests, want 1 (the small one)", c.n["api"])
	}
}
