package statecmd

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alecthomas/kingpin/v2"
)

func TestCheckAndSalvage(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "tracker", "testdata", "state-v1.db"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	good := filepath.Join(dir, "good.db")
	if err := os.WriteFile(good, data, 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		app := kingpin.New("t", "")
		c := Register(app)
		cmd, err := app.Parse(args)
		if err != nil {
			t.Fatal(err)
		}
		if !c.Handles(cmd) {
			t.Fatalf("%v not handled", args)
		}
		var out bytes.Buffer
		err = c.Run(cmd, &out)
		return out.String(), err
	}
	out, err := run("state", "check", good)
	if err != nil || !strings.Contains(out, "readable jobs: 8") || !strings.Contains(out, "schema: 1") || !strings.Contains(out, "status: healthy") {
		t.Fatalf("check of release 1's file: %v\n%s", err, out)
	}
	if after, _ := os.ReadFile(good); !bytes.Equal(after, data) {
		t.Error("check changed the file")
	}
	bad := filepath.Join(dir, "bad.db")
	if err := os.WriteFile(bad, data[:3*4096], 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = run("state", "check", bad)
	if !errors.Is(err, ErrDamaged) || !strings.Contains(out, "DAMAGED") || !strings.Contains(err.Error(), "state salvage") {
		t.Fatalf("check of a file cut short: %v\n%s", err, out)
	}
	out, err = run("state", "salvage", good, filepath.Join(dir, "copy.db"))
	if err != nil || !strings.Contains(out, "salvaged 8 values") {
		t.Fatalf("salvage: %v\n%s", err, out)
	}
	if _, err := run("state", "salvage", good, filepath.Join(dir, "copy.db")); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("salvage over an existing file: %v", err)
	}
}
