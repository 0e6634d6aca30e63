package flagvalue

import (
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kingpin/v2"
)

func TestValuesParseAndNameTheirFlagOnError(t *testing.T) {
	t.Parallel()
	app := kingpin.New("t", "")
	d := Duration(app, "d", "", "5m")
	n := Int(app, "n", "", "3")
	e := Enum(app, "e", "", "b", "a", "b")
	b := Bytes(app, "b", "", "64KiB")
	if _, err := app.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if *d != 5*time.Minute || *n != 3 || *e != "b" || *b != 64<<10 {
		t.Fatalf("defaults: %v %v %v %v", *d, *n, *e, *b)
	}
	if _, err := app.Parse([]string{"--d=7d", "--n=-2", "--e=a", "--b=1000"}); err != nil {
		t.Fatal(err)
	}
	if *d != 7*24*time.Hour || *n != -2 || *e != "a" || *b != 1000 {
		t.Fatalf("parsed: %v %v %v %v", *d, *n, *e, *b)
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
	for _, f := range []struct{ name, def string }{{"d", "1w"}, {"z", "0s"}, {"n", "4"}, {"b", "64KiB"}} {
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
