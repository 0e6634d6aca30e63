package logging

import (
	"bytes"
	"encoding/json"
	"strings"
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
