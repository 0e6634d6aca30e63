package secrets

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"
	"sync"
	"testing"
)

const key = "mint_7Hq2ZpX9vLkR4sWb3NcY"

// jsonEscape spells every character as \u00XX, as an encoder that escapes
// everything would.
func jsonEscape(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		fmt.Fprintf(&b, `\u%04x`, c)
	}
	return b.String()
}

func urlEscapeAll(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

func TestStringMasksAlteredEchoes(t *testing.T) {
	t.Parallel()
	r := NewRedactor(key)
	for name, echo := range map[string]string{
		"exact":                 key,
		"minus its last":        key[:len(key)-1],
		"minus its first":       key[1:],
		"minus one inside":      key[:12] + key[13:],
		"upper-cased":           strings.ToUpper(key),
		"JSON-escaped":          jsonEscape(key),
		"half JSON-escaped":     key[:10] + jsonEscape(key[10:]),
		"JSON in JSON":          strings.ReplaceAll(jsonEscape(key), `\`, `\\`),
		"URL-encoded":           urlEscapeAll(key),
		"URL-encoded lowercase": strings.ToLower(urlEscapeAll(key)),
		"path-escaped":          url.PathEscape("/docs/" + key),
		"hex-escaped":           strings.ReplaceAll(jsonEscape(key), `\u00`, `\x`),
		"a fragment":            key[5:14],
	} {
		text := `{"error":"invalid token ` + echo + `","path":"/docs"}`
		got := r.String(text)
		if !strings.Contains(got, Mask) || !strings.HasPrefix(got, `{"error":"invalid token `) || !strings.HasSuffix(got, `","path":"/docs"}`) {
			t.Errorf("%s: %q -> %q, want the echo masked and the rest kept", name, text, got)
		}
		// No run of MinFragment of the key's characters survives, in
		// any spelling.
		for _, spelling := range []string{got, strings.ToLower(got)} {
			for i := 0; i+MinFragment <= len(key); i++ {
				if strings.Contains(spelling, strings.ToLower(key[i:i+MinFragment])) || strings.Contains(spelling, key[i:i+MinFragment]) {
					t.Errorf("%s: %q survives in %q", name, key[i:i+MinFragment], got)
				}
			}
		}
		if rest := strings.ReplaceAll(got, "%2F", ""); strings.Contains(rest, `\u`) || strings.Contains(rest, "%") || strings.Contains(rest, `\x`) {
			t.Errorf("%s: escapes of the key left behind: %q", name, got)
		}
	}
}

func TestStringLeavesOtherTextAlone(t *testing.T) {
	t.Parallel()
	r := NewRedactor(key)
	for _, s := range []string{
		"", "short", "mint_", "the key mint_ is a prefix", `{"error":"unauthorized"}`, "/docs/getting-started",
		"100% done, 50%2 off", `a \u0041 b \\ c`, key[:MinFragment-1], "GET /v1/analytics/acme/visitors?dateFrom=2026-01-01",
	} {
		if got := r.String(s); got != s {
			t.Errorf("%q -> %q, want unchanged", s, got)
		}
	}
	var nilR *Redactor
	if got := nilR.String(key); got != key {
		t.Error("a nil Redactor changed the text")
	}
	if got := NewRedactor().String(key); got != key {
		t.Error("a Redactor without secrets changed the text")
	}
}

func TestShortSecretIsMaskedWhole(t *testing.T) {
	t.Parallel()
	r := NewRedactor("pw123")
	if got := r.String("password pw123 and PW123"); got != "password <redacted> and <redacted>" {
		t.Errorf("got %q", got)
	}
}

func TestErrorKeepsChain(t *testing.T) {
	t.Parallel()
	r := NewRedactor(key)
	err := fmt.Errorf("calling with %s: %w", key[:20], fs.ErrNotExist)
	red := r.Error(err)
	if strings.Contains(red.Error(), key[:MinFragment]) || !strings.Contains(red.Error(), Mask) {
		t.Errorf("%q not redacted", red)
	}
	if !errors.Is(red, fs.ErrNotExist) {
		t.Error("the chain is lost")
	}
	plain := errors.New("nothing secret")
	if r.Error(plain) != plain || r.Error(nil) != nil {
		t.Error("an error without the key was replaced")
	}
}

// TestAddWhileUsed: secrets are added (one per organization's key) while
// other goroutines redact; each added key is masked from then on.
func TestAddWhileUsed(t *testing.T) {
	t.Parallel()
	r := NewRedactor()
	var wg sync.WaitGroup
	keys := []string{"mint_aaaaaaaaaaaa1", "mint_bbbbbbbbbbbb2", "mint_cccccccccccc3"}
	for _, k := range keys {
		wg.Add(2)
		go func() { defer wg.Done(); r.Add(k) }()
		go func() { defer wg.Done(); _ = r.String("x " + k) }()
	}
	wg.Wait()
	for _, k := range keys {
		if got := r.String("x " + k); got != "x "+Mask {
			t.Errorf("%s -> %q", k, got)
		}
	}
}

func FuzzString(f *testing.F) {
	f.Add("token " + key)
	f.Add(jsonEscape(key))
	f.Add("%" + urlEscapeAll(key))
	f.Fuzz(func(t *testing.T, s string) {
		r := NewRedactor(key)
		got := r.String(s)
		if strings.Contains(got, key) {
			t.Fatalf("%q -> %q keeps the key", s, got)
		}
		if !strings.Contains(s, Mask) && !strings.Contains(got, Mask) && got != s {
			t.Fatalf("%q -> %q changed without masking", s, got)
		}
	})
}
