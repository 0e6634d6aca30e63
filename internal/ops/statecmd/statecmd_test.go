package statecmd

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alecthomas/kingpin/v2"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sharedredis"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

func TestCheckAndSalvage(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "kinds", "testdata", "state-v1.db"))
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
	// Each problem once, counted as listed, and not again in the error.
	damagedLines := strings.Count(out, "\ndamaged: ")
	if damagedLines == 0 || !strings.Contains(out, fmt.Sprintf("status: DAMAGED (%d damaged parts, listed above)", damagedLines)) ||
		strings.Contains(err.Error(), "page") {
		t.Errorf("check of a file cut short: %d damaged lines: %v\n%s", damagedLines, err, out)
	}
	for _, l := range strings.Split(out, "\n") {
		if l != "" && strings.Count(out, l) != 1 {
			t.Errorf("line printed twice: %s", l)
		}
	}
	out, err = run("state", "salvage", good, filepath.Join(dir, "copy.db"))
	if err != nil || !strings.Contains(out, "salvaged 8 jobs, 0 intents, 0 message intents, ") || strings.Contains(out, "warning") {
		t.Fatalf("salvage: %v\n%s", err, out)
	}
	if _, err := run("state", "salvage", good, filepath.Join(dir, "copy.db")); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("salvage over an existing file: %v", err)
	}

	// One byte changed inside a job record.
	flipped := bytes.Clone(data)
	i := bytes.Index(flipped[4*4096:], []byte(`"job":{"id":"job_000002"`))
	if i < 0 {
		t.Fatal("no job_000002 in the live page of the test file")
	}
	flipped[4*4096+i+6] ^= 0x01
	flip := filepath.Join(dir, "flip.db")
	if err := os.WriteFile(flip, flipped, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = run("state", "check", flip)
	if !errors.Is(err, ErrDamaged) || strings.Contains(out, "healthy") || !strings.Contains(out, `unreadable value: jobs "p1\x00job_000002"`) ||
		!strings.Contains(out, "status: DAMAGED (1 unreadable value, listed above)") {
		t.Errorf("check of a file with a changed record: %v\n%s", err, out)
	}
	out, err = run("state", "salvage", flip, filepath.Join(dir, "flip-salvaged.db"))
	if err != nil || !strings.Contains(out, "salvaged 8 jobs") || !strings.Contains(out, "1 rebuilt from their keys") ||
		!strings.Contains(out, "warning: 1 unreadable value(s) rebuilt from their keys alone: their idempotency keys are lost") {
		t.Errorf("salvage of a file with a changed record: %v\n%s", err, out)
	}
	// Nothing to recover: an error, no file.
	zero := filepath.Join(dir, "zero.db")
	if err := os.WriteFile(zero, make([]byte, len(data)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := run("state", "salvage", zero, filepath.Join(dir, "zero-salvaged.db")); err == nil || !strings.Contains(err.Error(), "nothing readable") {
		t.Errorf("salvage of a zeroed file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "zero-salvaged.db")); err == nil {
		t.Error("salvage of a zeroed file wrote a file")
	}
}

// The Redis commands: without a shared Redis they say so; export writes a
// backup of the agent state in Redis, import refuses a state in use and a
// file that is not there (it never creates one), and accept-empty says
// when there is nothing to accept.
func TestRedisCommands(t *testing.T) {
	t.Parallel()
	addr := testutil.StartRedis(t)
	dir := t.TempDir()
	run := func(cc config.Cluster, args ...string) (string, error) {
		app := kingpin.New("t", "")
		c := Register(app)
		cmd, err := app.Parse(args)
		if err != nil {
			t.Fatal(err)
		}
		if !c.Handles(cmd) || !c.NeedsRedis(cmd) {
			t.Fatalf("%v: not a Redis command", args)
		}
		c.Cluster = cc
		var out bytes.Buffer
		err = c.Run(cmd, &out)
		return out.String(), err
	}
	if _, err := run(config.Cluster{}, "state", "accept-empty"); err == nil || !strings.Contains(err.Error(), "no shared Redis") {
		t.Errorf("accept-empty without a Redis: %v", err)
	}
	cc := config.ClusterDefaults()
	cc.Address = addr
	if out, err := run(cc, "state", "accept-empty"); err != nil || !strings.Contains(out, "not marked lost") {
		t.Errorf("accept-empty of a state not lost: %q %v", out, err)
	}
	backup := filepath.Join(dir, "backup.db")
	if out, err := run(cc, "state", "export", backup); err != nil || !strings.Contains(out, "exported 0 jobs") {
		t.Fatalf("export: %q %v", out, err)
	}
	missing := filepath.Join(dir, "missing.db")
	if _, err := run(cc, "state", "import", missing); err == nil {
		t.Error("import of a missing file succeeded")
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("import of a missing file created it: %v", err)
	}
	// The state in use (a replica opened it): import refuses it.
	c, err := sharedredis.New(cc, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	schema, upgrades, buckets := engine.Layout()
	if _, err := store.OpenRedis(t.Context(), c, store.RedisOptions{Schema: schema, Upgrades: upgrades, Buckets: buckets}); err != nil {
		t.Fatal(err)
	}
	if _, err := run(cc, "state", "import", backup); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("import into a state in use: %v", err)
	}
}
