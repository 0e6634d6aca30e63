package bounded

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"unicode/utf8"
)

// Every value from the API that becomes a label value or a line of the
// status page is bounded twice: in length (Label) and in how many distinct
// values one label takes per project and window (Fold). An upstream that
// answers a 70 KB path, a 1 MB job status or 100,000 caller names then
// costs a few series of a few hundred bytes, not a /metrics of 50 MB.
// The analytics sources, the job tracker and the status page all use these
// two functions, so the rule is one rule.

// MaxLabelBytes is the longest label value (or status page string) taken
// from the API: long enough for any real path, category or status, short
// enough that a hostile answer cannot bloat every scrape.
const MaxLabelBytes = 256

// hashHexLen is the length of the hash suffix of a cut value: 48 bits, so
// that distinct long values stay distinct (a collision among a thousand
// long paths has odds of about one in a billion).
const hashHexLen = 12

// cutMark separates a cut value from its hash suffix.
const cutMark = "…"

// Label makes s a bounded label value: valid UTF-8 (invalid bytes become
// U+FFFD), at most MaxLabelBytes bytes. A longer value is cut at a UTF-8
// boundary and ends with "…" and 12 hex digits of the SHA-256 of the whole
// (valid) value, so that two long values that share their first 240 bytes
// still make two label values. A value within the cap is returned as it
// is: Label(Label(s)) == Label(s).
func Label(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= MaxLabelBytes {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	cut := MaxLabelBytes - len(cutMark) - hashHexLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + cutMark + hex.EncodeToString(sum[:])[:hashHexLen]
}

// Other is the label value that sums the values beyond a label's cap.
const Other = "other"

// MaxUnknownValues is how many undocumented values of one label are kept
// per project and window before the rest are summed under Other: enough to
// show a value the API added since the exporter was built, few enough that
// an API answering garbage adds a handful of series.
const MaxUnknownValues = 10

// Fold bounds the distinct values of one label. counts are keyed by label
// value (already made with Label). Every known value is kept (0 when
// absent, so alerts see the series before its first event); of the
// others, the maxUnknown largest are kept (ties: in name order) and the
// rest are summed under Other, which is present only when it holds
// something. A value the API calls "other" is added to Other, and Other
// may itself be a known value (the caller stats document one). Nothing is
// lost: the sum over the result equals the sum over counts. folded is how
// many distinct values were summed under Other (a literal "other" not
// counted).
func Fold[V int | int64 | float64](counts map[string]V, known []string, maxUnknown int) (kept map[string]V, folded int) {
	kept = make(map[string]V, len(known)+min(len(counts), maxUnknown)+1)
	for _, k := range known {
		kept[k] = counts[k]
	}
	type kv struct {
		k string
		v V
	}
	var unknown []kv
	for k, v := range counts {
		if _, ok := kept[k]; ok {
			continue
		}
		if k == Other {
			kept[Other] += v
			continue
		}
		unknown = append(unknown, kv{k, v})
	}
	if len(unknown) > maxUnknown {
		slices.SortFunc(unknown, func(a, b kv) int { return cmp.Or(cmp.Compare(b.v, a.v), strings.Compare(a.k, b.k)) })
		for _, u := range unknown[max(maxUnknown, 0):] {
			kept[Other] += u.v
		}
		folded = len(unknown) - max(maxUnknown, 0)
		unknown = unknown[:max(maxUnknown, 0)]
	}
	for _, u := range unknown {
		kept[u.k] = u.v
	}
	return kept, folded
}
