package sources

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// wirePaths are a traffic snapshot's paths, most of a restore's series:
// decoded through encoding/json's reflection they were 60% of a restore's
// CPU (BENCHMARKS.md). UnmarshalJSON reads what json.Marshal writes of
// them, [{"path":"…","human":N,"ai":N,"total":N},…], directly, and hands
// anything else (other spacing, order or case of keys, escapes, a field
// more or less, null) to encoding/json, which decides as before: the
// result is the same either way.
type wirePaths []wirePath

// UnmarshalJSON implements json.Unmarshaler. b is one valid JSON value
// (the decoder checked it before calling).
func (p *wirePaths) UnmarshalJSON(b []byte) error {
	if paths, ok := fastPaths(b); ok {
		*p = paths
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields() // as the snapshot's decoder
	var out []wirePath
	if err := dec.Decode(&out); err != nil {
		return err
	}
	*p = out
	return nil
}

// fastPaths reads b when it is exactly what json.Marshal writes of paths
// without escapes; ok is false otherwise.
func fastPaths(b []byte) (wirePaths, bool) {
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' {
		return nil, false
	}
	rest := b[1 : len(b)-1]
	out := make(wirePaths, 0, bytes.Count(rest, []byte(`{"path":"`)))
	for len(rest) > 0 {
		var w wirePath
		var ok bool
		if rest, ok = cut(rest, `{"path":"`); !ok {
			return nil, false
		}
		end := bytes.IndexByte(rest, '"')
		if end < 0 {
			return nil, false
		}
		s := rest[:end]
		if bytes.IndexByte(s, '\\') >= 0 || !utf8.Valid(s) {
			return nil, false
		}
		w.Path, rest = string(s), rest[end+1:]
		if w.Human, rest, ok = number(rest, `,"human":`); !ok {
			return nil, false
		}
		if w.AI, rest, ok = number(rest, `,"ai":`); !ok {
			return nil, false
		}
		if w.Total, rest, ok = number(rest, `,"total":`); !ok {
			return nil, false
		}
		if rest, ok = cut(rest, "}"); !ok {
			return nil, false
		}
		out = append(out, w)
		if len(rest) > 0 {
			if rest, ok = cut(rest, ","); !ok || len(rest) == 0 {
				return nil, false
			}
		}
	}
	return out, true
}

func cut(b []byte, prefix string) ([]byte, bool) {
	if len(b) < len(prefix) || string(b[:len(prefix)]) != prefix {
		return nil, false
	}
	return b[len(prefix):], true
}

// number reads key then a JSON number (b is valid JSON: the characters of
// a number are one), as encoding/json does into a float64.
func number(b []byte, key string) (float64, []byte, bool) {
	b, ok := cut(b, key)
	if !ok {
		return 0, nil, false
	}
	n := 0
	for n < len(b) && (b[n] >= '0' && b[n] <= '9' || b[n] == '-' || b[n] == '+' || b[n] == '.' || b[n] == 'e' || b[n] == 'E') {
		n++
	}
	if n == 0 {
		return 0, nil, false
	}
	v, err := strconv.ParseFloat(string(b[:n]), 64)
	if err != nil {
		return 0, nil, false // out of range: encoding/json's error
	}
	return v, b[n:], true
}
