package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
	"github.com/prometheus/common/model"
)

func TestValuesParseAndNameTheirFlagOnError(t *testing.T) {
	t.Parallel()
	app := kingpin.New("t", "")
	d, n, b := 5*time.Minute, 3, int64(64<<10)
	DurationVar(app, "d", "", &d)
	IntVar(app, "n", "", &n)
	e := Enum(app, "e", "", "b", "a", "b")
	BytesVar(app, "b", "", &b)
	if _, err := app.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if d != 5*time.Minute || n != 3 || *e != "b" || b != 64<<10 {
		t.Fatalf("defaults: %v %v %v %v", d, n, *e, b)
	}
	if _, err := app.Parse([]string{"--d=7d", "--n=-2", "--e=a", "--b=1000"}); err != nil {
		t.Fatal(err)
	}
	if d != 7*24*time.Hour || n != -2 || *e != "a" || b != 1000 {
		t.Fatalf("parsed: %v %v %v %v", d, n, *e, b)
	}
	for _, bad := range []string{"--d=-5m", "--d=abc", "--n=1.5", "--e=c", "--b=lots"} {
		_, err := app.Parse([]string{bad})
		name := strings.SplitN(bad, "=", 2)[0]
		if err == nil || !strings.HasPrefix(err.Error(), name+":") {
			t.Errorf("%s: error %v does not start with %s:", bad, err, name)
		}
	}
}

func TestVarsDefaultToTheCurrentValue(t *testing.T) {
	t.Parallel()
	app := kingpin.New("t", "")
	d, n, b := 7*24*time.Hour, 4, int64(64<<10)
	zero := time.Duration(0)
	DurationVar(app, "d", "", &d)
	DurationVar(app, "z", "", &zero)
	IntVar(app, "n", "", &n)
	BytesVar(app, "b", "", &b)
	for _, f := range []struct{ name, def string }{{"d", "7d"}, {"z", "0s"}, {"n", "4"}, {"b", "64KiB"}} {
		if got := app.GetFlag(f.name).Model().Default; len(got) != 1 || got[0] != f.def {
			t.Errorf("--%s default %v, want %s", f.name, got, f.def)
		}
	}
	if _, err := app.Parse([]string{"--n=9"}); err != nil {
		t.Fatal(err)
	}
	if d != 7*24*time.Hour || zero != 0 || n != 9 || b != 64<<10 {
		t.Errorf("after parse: %v %v %v %v", d, zero, n, b)
	}
}

func TestFormatDuration(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		0: "0s", 30 * time.Second: "30s", 5 * time.Minute: "5m", 90 * time.Minute: "1h30m", time.Hour: "1h",
		24 * time.Hour: "24h", 72 * time.Hour: "72h", 7 * 24 * time.Hour: "7d", 30 * 24 * time.Hour: "30d",
		8*24*time.Hour + 3*time.Hour: "8d3h", 1500 * time.Millisecond: "1s500ms",
	} {
		got := FormatDuration(d)
		if got != want {
			t.Errorf("FormatDuration(%s) = %q, want %q", d, got, want)
		}
		if back, err := model.ParseDuration(got); err != nil || time.Duration(back) != d {
			t.Errorf("%q does not read back as %s: %v, %v", got, d, back, err)
		}
	}
}

// TestDurationDefaultsShowAsTheDocsWriteThem: --help showed
// --agent.archive-watch=1d and --agent.retention=1w where the docs say 24h
// and 7d. A default set from a Config value is shown as written, and every
// duration default in the flag tables of the README and docs/ is one that
// FormatDuration writes back unchanged.
func TestDurationDefaultsShowAsTheDocsWriteThem(t *testing.T) {
	t.Parallel()
	app := kingpin.New("t", "")
	watch, retention := 24*time.Hour, 7*24*time.Hour
	DurationVar(app, "agent.archive-watch", "Watch.", &watch)
	DurationVar(app, "agent.retention", "Keep.", &retention)
	var help strings.Builder
	app.UsageWriter(&help)
	app.Usage(nil)
	for _, want := range []string{"--agent.archive-watch=24h", "--agent.retention=7d"} {
		if !strings.Contains(help.String(), want) {
			t.Errorf("help lacks %s:\n%s", want, help.String())
		}
	}

	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	var docs []byte
	for _, p := range append([]string{"../../README.md"}, pages...) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, b...)
	}
	row := regexp.MustCompile("(?m)^\\| `(--[a-z.-]+)`[^|]* \\| `([0-9][0-9a-z]*)` \\|")
	n := 0
	for _, m := range row.FindAllStringSubmatch(string(docs), -1) {
		d, err := model.ParseDuration(m[2])
		if err != nil || strings.Trim(m[2], "0123456789") == "" || m[1] == "--analytics.window" {
			continue // not a duration: a count, a size, a window of days
		}
		n++
		if got := FormatDuration(time.Duration(d)); got != m[2] {
			t.Errorf("docs: %s defaults to %s, but --help would show %s", m[1], m[2], got)
		}
	}
	if n < 5 {
		t.Errorf("found %d duration defaults in the docs' flag tables; the pattern no longer matches them", n)
	}
}
