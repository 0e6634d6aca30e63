package secretfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if got, err := Read(write("key", "  mint_abc123\n"), MaxBytes); err != nil || got != "mint_abc123" {
		t.Errorf("Read = %q, %v; want mint_abc123", got, err)
	}
	if got, err := Read(write("exact", strings.Repeat("k", 16)), 16); err != nil || len(got) != 16 {
		t.Errorf("a secret of exactly the limit: %q, %v", got, err)
	}
	for name, c := range map[string]struct {
		path string
		want string
	}{
		"too long":  {write("long", strings.Repeat("k", 17)), "longer than 16 bytes"},
		"empty":     {write("empty", " \n"), "is empty"},
		"two lines": {write("lines", "mint_a\nmint_b\n"), "more than one line"},
		"missing":   {filepath.Join(dir, "nope"), "no such file"},
		"directory": {dir, "is a directory"},
	} {
		_, err := Read(c.path, 16)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line containing %q", name, err, c.want)
		}
	}
}

// TestReadEndlessFile: a device that never ends is refused after the limit,
// where reading it whole would run the machine out of memory.
func TestReadEndlessFile(t *testing.T) {
	t.Parallel()
	for _, dev := range []string{"/dev/zero", "/dev/urandom"} {
		if _, err := os.Stat(dev); err != nil {
			t.Fatalf("%s: %v", dev, err)
		}
		_, err := Read(dev, MaxBytes)
		if err == nil || !strings.Contains(err.Error(), "longer than 4096 bytes") {
			t.Errorf("%s: %v, want refused as longer than 4096 bytes", dev, err)
		}
	}
}
