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
		if bytes.IndexByte(s, '\\') >= 0 || !utf8.Valid(s) || hasControl(s) {
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

// number reads key then a JSON number, as encoding/json does into a
// float64.
func number(b []byte, key string) (float64, []byte, bool) {
	b, ok := cut(b, key)
	if !ok {
		return 0, nil, false
	}
	n := 0
	for n < len(b) && (b[n] >= '0' && b[n] <= '9' || b[n] == '-' || b[n] == '+' || b[n] == '.' || b[n] == 'e' || b[n] == 'E') {
		n++
	}
	if n == 0 || !jsonNumber(b[:n]) {
		return 0, nil, false
	}
	v, err := strconv.ParseFloat(string(b[:n]), 64)
	if err != nil {
		return 0, nil, false // out of range: encoding/json's error
	}
	return v, b[n:], true
}

// hasControl reports a byte JSON does not allow in a string as it is.
func hasControl(s []byte) bool {
	for _, c := range s {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// jsonNumber reports whether b is a number as JSON writes it:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func jsonNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		if i = digits(b, i+1); b[i-1] == '.' {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return false
		}
		i = j
	}
	return i == len(b)
}

// digits is the index after the digits of b from i.
func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// fastTraffic reads b when it is a traffic snapshot exactly as
// EncodeSnapshot writes it, {"format":N,"kind":"traffic","data":{"meta":
// {…},"site":{…},"paths":[…],"dropped":N}}, with paths fastPaths reads:
// without encoding/json's two scans of the whole data (half a restore's
// CPU). Anything else, ok false, goes through decodeEnvelope, which
// decides as before; meta and site are read by encoding/json.
// trafficPrefix starts a traffic snapshot in the layout EncodeSnapshot
// writes, of this build's wire format (another format is not ours to read
// fast, nor at all).
var trafficPrefix = `{"format":` + strconv.Itoa(wireFormat) + `,"kind":"traffic","data":{"meta":`

func fastTraffic(b []byte) (*wireTraffic, bool) {
	rest, ok := cut(b, trafficPrefix)
	if !ok {
		return nil, false
	}
	var w wireTraffic
	if rest, ok = strictObject(rest, &w.Meta); !ok {
		return nil, false
	}
	if rest, ok = cut(rest, `,"site":`); !ok {
		return nil, false
	}
	if rest, ok = strictObject(rest, &w.Site); !ok {
		return nil, false
	}
	if rest, ok = cut(rest, `,"paths":`); !ok {
		return nil, false
	}
	end := bytes.LastIndex(rest, []byte(`,"dropped":`))
	if end < 0 {
		return nil, false
	}
	switch paths := rest[:end]; {
	case string(paths) == "null":
	default:
		if w.Paths, ok = fastPaths(paths); !ok {
			return nil, false
		}
	}
	n, ok := bytes.CutSuffix(rest[end+len(`,"dropped":`):], []byte("}}"))
	if !ok || !jsonNumber(n) || bytes.ContainsAny(n, ".eE") {
		return nil, false
	}
	d, err := strconv.Atoi(string(n))
	if err != nil {
		return nil, false
	}
	w.Dropped = d
	return &w, true
}

// strictObject decodes the flat object (no object or array inside) at the
// start of b into v, refusing unknown fields, and returns what follows.
func strictObject(b []byte, v any) ([]byte, bool) {
	if len(b) == 0 || b[0] != '{' {
		return nil, false
	}
	end := bytes.IndexByte(b, '}')
	if end < 0 || bytes.ContainsAny(b[1:end], "{[") {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(b[:end+1]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil || dec.More() {
		return nil, false
	}
	return b[end+1:], true
}
