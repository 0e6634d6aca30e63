package logging

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"io"
	"reflect"

	"github.com/go-kit/log"
)

// orderedJSONLogger writes one JSON object per line, like go-kit's JSON
// logger (the same conversions of keys and values), but with the keys in
// the order they were logged: go-kit's goes through a map and so sorts
// them, which would put caller before ts. A key logged twice keeps its
// first place and its last value, as go-kit's map does.
type orderedJSONLogger struct{ w io.Writer }

func (l orderedJSONLogger) Log(keyvals ...any) error {
	type field struct {
		key string
		val any
	}
	fields := make([]field, 0, (len(keyvals)+1)/2)
	at := make(map[string]int, cap(fields))
	for i := 0; i < len(keyvals); i += 2 {
		var v any = log.ErrMissingValue
		if i+1 < len(keyvals) {
			v = keyvals[i+1]
		}
		k, v := jsonKey(keyvals[i]), jsonValue(v)
		if j, ok := at[k]; ok {
			fields[j].val = v
			continue
		}
		at[k] = len(fields)
		fields = append(fields, field{k, v})
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	buf.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := enc.Encode(f.key); err != nil {
			return err
		}
		buf.Truncate(buf.Len() - 1) // Encode's newline
		buf.WriteByte(':')
		if err := enc.Encode(f.val); err != nil {
			// As go-kit's would fail the line: say why instead.
			buf.Truncate(0)
			return fmt.Errorf("json logger: key %q: %w", f.key, err)
		}
		buf.Truncate(buf.Len() - 1)
	}
	buf.WriteString("}\n")
	_, err := l.w.Write(buf.Bytes())
	return err
}

func jsonKey(k any) string {
	switch x := k.(type) {
	case string:
		return x
	case fmt.Stringer:
		return safeString(x)
	default:
		return fmt.Sprint(x)
	}
}

// jsonValue converts v as go-kit's JSON logger does: marshalers as they
// marshal, then errors and Stringers as their text.
func jsonValue(v any) any {
	switch x := v.(type) {
	case json.Marshaler, encoding.TextMarshaler:
		return v
	case error:
		return safeText(func() string { return x.Error() }, v)
	case fmt.Stringer:
		return safeString(x)
	}
	return v
}

func safeString(s fmt.Stringer) string { return safeText(s.String, s) }

// safeText calls text, turning a panic (a nil pointer's method, often)
// into a value, as go-kit does.
func safeText(text func() string, v any) (s string) {
	defer func() {
		if p := recover(); p != nil {
			if rv := reflect.ValueOf(v); rv.Kind() == reflect.Ptr && rv.IsNil() {
				s = "NULL"
			} else {
				s = fmt.Sprintf("PANIC in String method: %v", p)
			}
		}
	}()
	return text()
}
