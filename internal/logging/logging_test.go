package logging

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-kit/log/level"
)

func TestLevelFiltersBothLoggers(t *testing.T) {
	var buf bytes.Buffer
	l, err := New(&buf, "warn", "logfmt")
	if err != nil {
		t.Fatal(err)
	}
	level.Info(l.Logger).Log("msg", "hidden-gokit")
	l.Slog.Info("hidden-slog")
	level.Warn(l.Logger).Log("msg", "shown-gokit")
	l.Slog.Warn("shown-slog", "k", "v")
	out := buf.String()
	if strings.Contains(out, "hidden") {
		t.Errorf("info lines passed a warn filter:\n%s", out)
	}
	for _, want := range []string{"msg=shown-gokit", "msg=shown-slog", "k=v", "level=warn", "caller=", "ts="} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestJSONFormatIsOneObjectPerLine(t *testing.T) {
	var buf bytes.Buffer
	l, err := New(&buf, "debug", "json")
	if err != nil {
		t.Fatal(err)
	}
	level.Debug(l.Logger).Log("msg", "a")
	l.Slog.Debug("b")
	PromHTTPErrorLogger{Logger: l.Logger}.Println("gather failed:", "boom")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 lines, got %d:\n%s", len(lines), buf.String())
	}
	for _, line := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line is not JSON: %q: %v", line, err)
		}
	}
	if !strings.Contains(lines[2], `gather failed: boom`) {
		t.Errorf("promhttp error not kept whole: %s", lines[2])
	}
}

func TestRejectsUnknownValues(t *testing.T) {
	if _, err := New(&bytes.Buffer{}, "verbose", "logfmt"); err == nil {
		t.Error("unknown level accepted")
	}
	if _, err := New(&bytes.Buffer{}, "info", "xml"); err == nil {
		t.Error("unknown format accepted")
	}
}

// TestOneTimestampKey: lines from go-kit and from slog (exporter-toolkit)
// carry the same timestamp key, in the same format, in both formats.
func TestOneTimestampKey(t *testing.T) {
	for _, format := range Formats {
		var buf bytes.Buffer
		l, err := New(&buf, "info", format)
		if err != nil {
			t.Fatal(err)
		}
		level.Info(l.Logger).Log("msg", "from go-kit")
		l.Slog.Info("from slog")
		for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			if strings.Contains(line, "time") {
				t.Errorf("%s: a line keeps slog's time key: %s", format, line)
			}
			var ts string
			if format == "json" {
				var m map[string]any
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Fatal(err)
				}
				ts, _ = m["ts"].(string)
			} else if _, rest, ok := strings.Cut(line, "ts="); ok {
				ts, _, _ = strings.Cut(rest, " ")
			}
			if _, err := time.Parse(time.RFC3339Nano, ts); err != nil || !strings.HasSuffix(ts, "Z") {
				t.Errorf("%s: ts %q is not RFC 3339 in UTC: %s", format, ts, line)
			}
		}
	}
}

// leadKeys returns the first n keys of a logfmt or JSON line, in order.
func leadKeys(t *testing.T, format, line string, n int) []string {
	t.Helper()
	var keys []string
	if format == "json" {
		dec := json.NewDecoder(strings.NewReader(line))
		if _, err := dec.Token(); err != nil {
			t.Fatal(err)
		}
		for dec.More() && len(keys) < n {
			k, err := dec.Token()
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, k.(string))
			var v any
			if err := dec.Decode(&v); err != nil {
				t.Fatal(err)
			}
		}
		return keys
	}
	for _, f := range strings.Fields(line) {
		if k, _, ok := strings.Cut(f, "="); ok && len(keys) < n {
			keys = append(keys, k)
		}
	}
	return keys
}

// TestKeyOrder: every line starts with ts, caller, level, msg, whichever
// library logged it (exporter-toolkit's slog put caller before ts, go-kit
// level before ts), in both formats; JSON keeps the logged order after them.
func TestKeyOrder(t *testing.T) {
	for _, format := range Formats {
		var buf bytes.Buffer
		l, err := New(&buf, "debug", format)
		if err != nil {
			t.Fatal(err)
		}
		level.Info(l.Logger).Log("msg", "from go-kit", "zeta", 1, "alpha", 2)
		l.Slog.Warn("from slog", "zeta", 1, "alpha", 2)
		PromHTTPErrorLogger{Logger: l.Logger}.Println("boom")
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if len(lines) != 3 {
			t.Fatalf("%s: %d lines:\n%s", format, len(lines), buf.String())
		}
		for i, line := range lines {
			got := strings.Join(leadKeys(t, format, line, 6), " ")
			want := "ts caller level msg zeta alpha"
			if i == 2 {
				want = "ts caller level msg err"
			}
			if got != want {
				t.Errorf("%s line %d: keys %q, want %q: %s", format, i, got, want, line)
			}
		}
	}
}

func TestJSONDuplicateKeyKeepsFirstPlaceLastValue(t *testing.T) {
	var buf bytes.Buffer
	if err := (orderedJSONLogger{w: &buf}).Log("a", 1, "b", 2, "a", 3, "odd"); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(buf.String()); got != `{"a":3,"b":2,"odd":"(MISSING)"}` {
		t.Errorf("got %s", got)
	}
}

// TestSecretsNeverLogged: a key added to the redactor is masked in every
// value of both loggers, in both formats, also when an upstream echoed it
// JSON-escaped or cut, and inside an error.
func TestSecretsNeverLogged(t *testing.T) {
	const key = "mint_Zx81Kq2Lw93Mv04N"
	var esc strings.Builder
	for _, c := range []byte(key) {
		esc.WriteString(`\u00` + hex2(c))
	}
	for _, format := range Formats {
		var buf bytes.Buffer
		l, err := New(&buf, "debug", format)
		if err != nil {
			t.Fatal(err)
		}
		l.Redactor.Add(key)
		level.Debug(l.Logger).Log("msg", "API request", "body", `{"echo":"`+esc.String()+`"}`)
		level.Warn(l.Logger).Log("msg", "upstream error", "err", errors.New("HTTP 401: token "+key[:len(key)-1]+" unknown"))
		l.Slog.Error("toolkit line "+strings.ToUpper(key), "k", key)
		out := buf.String()
		for i := 0; i+8 <= len(key); i++ {
			if strings.Contains(strings.ToLower(out), strings.ToLower(key[i:i+8])) {
				t.Errorf("%s: %q of the key is logged:\n%s", format, key[i:i+8], out)
			}
		}
		if strings.Count(out, "<redacted>") < 4 {
			t.Errorf("%s: want the key's places marked:\n%s", format, out)
		}
	}
}

func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&15]})
}

// TestClientGoneIsDebug: a scraper that hung up (broken pipe, reset) is the
// client's doing and logged at debug; other serving errors at error.
func TestClientGoneIsDebug(t *testing.T) {
	var buf bytes.Buffer
	l, err := New(&buf, "info", "logfmt")
	if err != nil {
		t.Fatal(err)
	}
	pl := PromHTTPErrorLogger{Logger: l.Logger}
	pipe := &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}
	pl.Println("error encoding and sending metric family:", pipe)
	pl.Println("error encoding and sending metric family:", fmt.Errorf("gzip: %w", &net.OpError{Op: "write", Net: "tcp", Err: syscall.ECONNRESET}))
	if buf.Len() != 0 {
		t.Errorf("a client hang-up is logged above debug:\n%s", buf.String())
	}
	pl.Println("error gathering metrics:", errors.New("collector failed"))
	if !strings.Contains(buf.String(), "level=error") || !strings.Contains(buf.String(), "collector failed") {
		t.Errorf("a gather error is not logged at error:\n%s", buf.String())
	}

	buf.Reset()
	l, _ = New(&buf, "debug", "logfmt")
	PromHTTPErrorLogger{Logger: l.Logger}.Println("error encoding and sending metric family:", pipe)
	if !strings.Contains(buf.String(), "level=debug") || !strings.Contains(buf.String(), "broken pipe") {
		t.Errorf("a client hang-up is not logged at debug:\n%s", buf.String())
	}
}
