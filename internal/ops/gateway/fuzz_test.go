package gateway

import (
	"net/http"
	"strings"
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
)

// FuzzIdempotencyKey parses fuzzed Idempotency-Key headers: a key it
// accepts is valid, and every valid key sent as the draft's quoted string
// reads back as itself.
func FuzzIdempotencyKey(f *testing.F) {
	for _, s := range []string{"abc", `"abc"`, `"a\"b"`, `"a\\b"`, `""`, `"`, "caf\u00e9", "a\tb", ` "x" `, `"x"y"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		k, err := IdempotencyKey(http.Header{"Idempotency-Key": {v}})
		if err == nil && !engine.ValidIdempotencyKey(k) {
			t.Fatalf("%q accepted as %q", v, k)
		}
		if !engine.ValidIdempotencyKey(v) {
			return
		}
		quoted := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
		if k, err := IdempotencyKey(http.Header{"Idempotency-Key": {quoted}}); err != nil || k != v {
			if len(quoted) <= 2+engine.MaxIdempotencyKeyLen || err == nil {
				t.Fatalf("%q quoted as %q reads %q (%v)", v, quoted, k, err)
			}
		}
	})
}
