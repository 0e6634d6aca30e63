package gateway

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/tracker"
)

// FuzzCreateRequest sends fuzzed create requests (Content-Type,
// Idempotency-Key, body) to the gateway: never a panic, always a JSON
// answer with a known status, and a create reaches the tracker only for a
// JSON body with a non-blank string prompt and a valid key.
func FuzzCreateRequest(f *testing.F) {
	f.Add("application/json", "", `{"prompt":"add a page"}`)
	f.Add("application/json; charset=utf-8", `"8e03978e-40d5-43e8-bc93-6894a57f9324"`, `{"prompt":"x"}`)
	f.Add("application/json", `"a\"b\\c"`, `{"prompt":"x"}`)
	f.Add("application/json", "\"unterminated", `{"prompt":"x"}`)
	f.Add("text/plain", "k", `{"prompt":"x"}`)
	f.Add("application/json", "k", `{"prompt":null}`)
	f.Add("application/json", "k", `{"prompt":"   "}`)
	f.Add("application/json", "k", `{"prompt":"x"} {"prompt":"y"}`)
	f.Add("application/json", "k", `{"prompt":["x"]}`)
	f.Add("application/json", "k", `{"prompt":"\ud800"}`)
	f.Add("application/json", "", ``)
	f.Add("application/json", "", `[`+strings.Repeat(`[`, 100))
	f.Add("application/json", strings.Repeat("k", 256), `{"prompt":"x"}`)
	known := map[int]bool{201: true, 400: true, 413: true, 415: true}
	f.Fuzz(func(t *testing.T, contentType, key, body string) {
		b := &stubTracker{}
		cfg := testConfig(nil)
		cfg.MaxPromptBytes = 1 << 10
		cfg.CreateLimitPerHour = 0
		g, err := New(b, nil, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest("POST", "/api/v2/agent/p1/job", strings.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		if key != "" {
			req.Header["Idempotency-Key"] = []string{key}
		}
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, req)
		if !known[rec.Code] {
			t.Fatalf("HTTP %d for %q %q %q: %s", rec.Code, contentType, key, body, rec.Body)
		}
		if !json.Valid(rec.Body.Bytes()) || rec.Header().Get("Content-Type") != "application/json" {
			t.Fatalf("answer is not JSON: %q", rec.Body)
		}
		if rec.Code != http.StatusCreated {
			if b.createCount() != 0 {
				t.Fatal("refused, but the tracker was called")
			}
			return
		}
		var req2 struct {
			Prompt string `json:"prompt"`
		}
		if json.Unmarshal([]byte(body), &req2) != nil || strings.TrimSpace(req2.Prompt) == "" || len(body) > 1<<10 {
			t.Fatalf("accepted body %q", body)
		}
		if k, err := IdempotencyKey(req.Header); err != nil || (key != "" && !tracker.ValidIdempotencyKey(k)) {
			t.Fatalf("accepted key %q (%q, %v)", key, k, err)
		}
	})
}

// FuzzIdempotencyKey parses fuzzed Idempotency-Key headers: a key it
// accepts is valid, and every valid key sent as the draft's quoted string
// reads back as itself.
func FuzzIdempotencyKey(f *testing.F) {
	for _, s := range []string{"abc", `"abc"`, `"a\"b"`, `"a\\b"`, `""`, `"`, "caf\u00e9", "a\tb", ` "x" `, `"x"y"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		k, err := IdempotencyKey(http.Header{"Idempotency-Key": {v}})
		if err == nil && !tracker.ValidIdempotencyKey(k) {
			t.Fatalf("%q accepted as %q", v, k)
		}
		if !tracker.ValidIdempotencyKey(v) {
			return
		}
		quoted := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
		if k, err := IdempotencyKey(http.Header{"Idempotency-Key": {quoted}}); err != nil || k != v {
			if len(quoted) <= 2+tracker.MaxIdempotencyKeyLen || err == nil {
				t.Fatalf("%q quoted as %q reads %q (%v)", v, quoted, k, err)
			}
		}
	})
}
