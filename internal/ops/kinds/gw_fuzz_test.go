package kinds_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/gateway"
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
		g, err := newGatewayWith(t, b, nil, cfg)
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
		if k, err := gateway.IdempotencyKey(req.Header); err != nil || (key != "" && !engine.ValidIdempotencyKey(k)) {
			t.Fatalf("accepted key %q (%q, %v)", key, k, err)
		}
	})
}
