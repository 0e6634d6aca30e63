package deployment

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/gateway"
)

// FuzzPreviewBody reads fuzzed preview bodies as the preview route does:
// never a panic; a refusal is a 400 or 413; an accepted branch is one
// JSON object's non-blank string of at most MaxBranchBytes bytes
// of UTF-8 without control characters, exactly as sent.
func FuzzPreviewBody(f *testing.F) {
	for _, s := range []string{`{"branch":"main"}`, `{"branch":""}`, `{"branch":null}`, `{"branch":7}`, `{}`, ``, `[]`,
		`{"branch":"a\u0000b"}`, `{"branch":"\ud800"}`, `{"branch":"a"} {}`, `{"branch":"` + strings.Repeat("b", 300) + `"}`,
		`{"branch":"feature/ü"}`, strings.Repeat(`{"a":`, 50)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "/", strings.NewReader(body))
		var v struct {
			Branch json.RawMessage `json:"branch"`
		}
		if bad := gateway.ReadBody(rec, req, &v, false, maxBodyBytes, ""); bad != nil {
			if bad.Status != 400 && bad.Status != 413 {
				t.Fatalf("refused %q with %d", body, bad.Status)
			}
			return
		}
		branch, err := parseBranch(v.Branch)
		if err != nil {
			return
		}
		if strings.TrimSpace(branch) == "" || len(branch) > MaxBranchBytes || !utf8.ValidString(branch) || strings.ContainsFunc(branch, unicode.IsControl) {
			t.Fatalf("accepted branch %q from %q", branch, body)
		}
	})
}
