// This file removes secrets (API keys) from text the exporter writes
// or answers: error texts, log lines, label values. An upstream that echoes
// a key back may alter it (cut, JSON-escaped, URL-encoded, upper-cased), so
// exact matching is not enough: any run of MinFragment or more of a
// secret's characters is masked, found in the text as it reads after
// decoding JSON \u and \x escapes and URL %XX escapes, case-insensitively.

package secrets

import (
	"strings"
	"sync"
	"sync/atomic"
)

// MinFragment is the shortest run of a secret's characters that is
// masked. Shorter runs (the key's mint_ prefix, a few characters left
// around a cut) are too common to tell from ordinary text, and reveal too
// little of a key to matter.
const MinFragment = 8

// Mask replaces each masked run.
const Mask = "<redacted>"

// maxPasses bounds the decoding rounds, for text escaped more than once
// (a JSON string inside a JSON string: \\u006d).
const maxPasses = 3

// Redactor masks the secrets added to it. The zero value and nil mask
// nothing; it is safe for concurrent use.
type Redactor struct {
	mu    sync.Mutex // serialises Add
	grams atomic.Pointer[gramSet]
}

// gramSet is immutable once published.
type gramSet struct {
	// byLen holds, per length, the lower-cased runs of that length of
	// every secret: MinFragment, or a whole secret shorter than that.
	byLen map[int]map[string]struct{}
	// minLen is the shortest length in byLen.
	minLen int
}

// NewRedactor returns a Redactor of secrets.
func NewRedactor(secrets ...string) *Redactor {
	r := &Redactor{}
	for _, s := range secrets {
		r.Add(s)
	}
	return r
}

// Add makes r mask secret from now on. An empty secret is ignored.
func (r *Redactor) Add(secret string) {
	if r == nil || secret == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	next := &gramSet{byLen: map[int]map[string]struct{}{}}
	if old := r.grams.Load(); old != nil {
		for n, set := range old.byLen {
			next.byLen[n] = make(map[string]struct{}, len(set))
			for g := range set {
				next.byLen[n][g] = struct{}{}
			}
		}
	}
	lower := string(asciiLower([]byte(secret)))
	n := min(MinFragment, len(lower))
	if next.byLen[n] == nil {
		next.byLen[n] = map[string]struct{}{}
	}
	for i := 0; i+n <= len(lower); i++ {
		next.byLen[n][lower[i:i+n]] = struct{}{}
	}
	next.minLen = n
	for l := range next.byLen {
		next.minLen = min(next.minLen, l)
	}
	r.grams.Store(next)
}

// String returns s with every run of MinFragment or more characters of a
// secret replaced by Mask, the escapes that spelled them included.
func (r *Redactor) String(s string) string {
	if r == nil {
		return s
	}
	set := r.grams.Load()
	if set == nil || len(s) < set.minLen {
		return s
	}
	text := decoded{text: []byte(s), start: make([]int, len(s)), end: make([]int, len(s))}
	for i := range s {
		text.start[i], text.end[i] = i, i+1
	}
	masked := make([]bool, len(s)) // by byte of s
	found := false
	for pass := 0; ; pass++ {
		if set.mark(&text, masked) {
			found = true
		}
		if pass == maxPasses-1 {
			break
		}
		next, changed := text.unescape()
		if !changed {
			break
		}
		text = next
	}
	if !found {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if !masked[i] {
			b.WriteByte(s[i])
			i++
			continue
		}
		b.WriteString(Mask)
		for i < len(s) && masked[i] {
			i++
		}
	}
	return b.String()
}

// mark marks the bytes of the original text behind every run of a secret
// in t, and reports whether it found one.
func (g *gramSet) mark(t *decoded, masked []bool) bool {
	lower := asciiLower(t.text)
	found := false
	for n, set := range g.byLen {
		for i := 0; i+n <= len(lower); i++ {
			if _, ok := set[string(lower[i:i+n])]; !ok {
				continue
			}
			found = true
			for j := t.start[i]; j < t.end[i+n-1]; j++ {
				masked[j] = true
			}
		}
	}
	return found
}

// decoded is a text with, for each of its bytes, the span of the original
// text it was decoded from.
type decoded struct {
	text       []byte
	start, end []int
}

// unescape decodes one round of escapes: JSON \uXXXX (ASCII only: a key is
// ASCII), \xXX, \/ and \\, and URL %XX.
func (d decoded) unescape() (decoded, bool) {
	out := decoded{text: make([]byte, 0, len(d.text)), start: make([]int, 0, len(d.text)), end: make([]int, 0, len(d.text))}
	changed := false
	emit := func(c byte, from, to int) { // to: exclusive index into d
		out.text = append(out.text, c)
		out.start = append(out.start, d.start[from])
		out.end = append(out.end, d.end[to-1])
	}
	t := d.text
	for i := 0; i < len(t); {
		c, n := escapeAt(t[i:])
		if n == 0 {
			c, n = t[i], 1
		} else {
			changed = true
		}
		emit(c, i, i+n)
		i += n
	}
	return out, changed
}

// escapeAt decodes the escape t starts with: the byte it stands for and
// its length, or a length of 0 when t starts with none.
func escapeAt(t []byte) (byte, int) {
	switch t[0] {
	case '\\':
		return backslashEscape(t)
	case '%':
		if len(t) >= 3 && isHex(t[1]) && isHex(t[2]) {
			return hexByte(t[1], t[2]), 3
		}
	}
	return 0, 0
}

// backslashEscape decodes the escape t starts with after its backslash:
// \u00XX (ASCII only: a key is ASCII), \xXX, \/ and \\.
func backslashEscape(t []byte) (byte, int) {
	if len(t) < 2 {
		return 0, 0
	}
	switch t[1] {
	case 'u':
		if len(t) >= 6 && t[2] == '0' && t[3] == '0' && isHex(t[4]) && isHex(t[5]) && unhex(t[4]) < 8 {
			return hexByte(t[4], t[5]), 6
		}
	case 'x':
		if len(t) >= 4 && isHex(t[2]) && isHex(t[3]) {
			return hexByte(t[2], t[3]), 4
		}
	case '/', '\\':
		return t[1], 2
	}
	return 0, 0
}

// hexByte is the byte of two hex digits.
func hexByte(hi, lo byte) byte { return unhex(hi)<<4 | unhex(lo) }

// asciiLower lower-cases ASCII letters only, byte for byte: the offsets
// must stay those of the text (strings.ToLower rewrites invalid UTF-8).
func asciiLower(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	default:
		return c - 'a' + 10
	}
}

// Error returns err with its text redacted, keeping its chain (errors.Is
// and errors.As still see what it wraps); err itself when nothing was
// masked.
func (r *Redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if red := r.String(msg); red != msg {
		return redactedError{err: err, msg: red}
	}
	return err
}

// redactedError holds the redacted text, not the secret: a %#v of the error
// prints its fields.
type redactedError struct {
	err error
	msg string
}

func (e redactedError) Error() string { return e.msg }
func (e redactedError) Unwrap() error { return e.err }
