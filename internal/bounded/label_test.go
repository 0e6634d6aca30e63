package bounded

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLabelCutsLongValuesDistinctly(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "/docs/intro", strings.Repeat("a", MaxLabelBytes)} {
		if got := Label(s); got != s {
			t.Errorf("Label(%d bytes) changed a value within the cap: %q", len(s), got)
		}
	}
	if got := Label("/b\xff"); got != "/b\uFFFD" {
		t.Errorf("invalid UTF-8 gives %q", got)
	}
	// A 70 KB path, and two 1 MB values that differ only in their last
	// byte; multi-byte runes around the cut.
	long := "/" + strings.Repeat("é", 35_000)
	a, b := strings.Repeat("x", 1<<20)+"a", strings.Repeat("x", 1<<20)+"b"
	seen := map[string]string{}
	for _, s := range []string{long, a, b, strings.Repeat("x", MaxLabelBytes+1)} {
		got := Label(s)
		if len(got) > MaxLabelBytes || !utf8.ValidString(got) {
			t.Fatalf("Label(%d bytes) = %d bytes, valid %v", len(s), len(got), utf8.ValidString(got))
		}
		if !strings.HasPrefix(s, strings.SplitN(got, cutMark, 2)[0]) || !strings.Contains(got, cutMark) {
			t.Errorf("Label(%d bytes) = %q: not a prefix of the value with a hash", len(s), got)
		}
		if prev, dup := seen[got]; dup {
			t.Errorf("two distinct values (%d and %d bytes) made one label value %q", len(prev), len(s), got)
		}
		seen[got] = s
		if Label(got) != got {
			t.Errorf("Label is not idempotent on %q", got)
		}
	}
}

func TestFold(t *testing.T) {
	t.Parallel()
	counts := map[string]int64{"answer": 5, "other": 2}
	for i := range 100 {
		counts[fmt.Sprintf("weird_%03d", i)] = int64(i % 7)
	}
	kept, folded := Fold(counts, []string{"answer", "clarifying_question"}, 3)
	if folded != 97 {
		t.Errorf("folded %d values, want 97", folded)
	}
	if len(kept) != 2+3+1 {
		t.Errorf("kept %d values, want 6: %v", len(kept), kept)
	}
	if _, ok := kept["clarifying_question"]; !ok || kept["answer"] != 5 {
		t.Errorf("known values not kept: %v", kept)
	}
	// The largest unknown values, ties in name order: 6 is the largest
	// count (weird_006, _013, _020).
	for _, k := range []string{"weird_006", "weird_013", "weird_020"} {
		if kept[k] != 6 {
			t.Errorf("%s not kept: %v", k, kept)
		}
	}
	var in, out int64
	for _, v := range counts {
		in += v
	}
	for _, v := range kept {
		out += v
	}
	if in != out {
		t.Errorf("sum %d after folding, %d before", out, in)
	}
	// Within the cap nothing changes and no other appears.
	small := map[string]int{"a": 1, "b": 2}
	if kept, folded := Fold(small, nil, 10); folded != 0 || len(kept) != 2 {
		t.Errorf("Fold within the cap = %v, %d", kept, folded)
	}
}
