package secrets

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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
		"directory": {dir, "is a directory, not a regular file"},
	} {
		_, err := Read(c.path, 16)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line containing %q", name, err, c.want)
		}
	}
}

// TestReadEndlessFile: a device that never ends is refused, where reading
// it whole would run the machine out of memory; a regular file longer
// than the limit is refused after the limit.
func TestReadEndlessFile(t *testing.T) {
	t.Parallel()
	for _, dev := range []string{"/dev/zero", "/dev/urandom"} {
		if _, err := os.Stat(dev); err != nil {
			t.Fatalf("%s: %v", dev, err)
		}
		_, err := Read(dev, MaxBytes)
		if err == nil || !strings.Contains(err.Error(), dev+" is a character device, not a regular file") {
			t.Errorf("%s: %v, want refused as a character device", dev, err)
		}
	}
	long := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(long, make([]byte, MaxBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadAtMost(long, MaxBytes); err == nil || !strings.Contains(err.Error(), "longer than 4096 bytes") {
		t.Errorf("a long file: %v, want refused as longer than 4096 bytes", err)
	}
}

// TestFIFOIsRefusedAtOnce: a FIFO nobody writes to (as key file, config
// file, web config file or password file: they all read through here) is
// refused at once with one line, where opening it would wait for a writer
// forever; so is a symbolic link to one.
func TestFIFOIsRefusedAtOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "key")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, link} {
		done := make(chan error, 2)
		go func() {
			_, err := Read(p, MaxBytes)
			done <- err
			_, err = ReadAtMost(p, MaxBytes)
			done <- err
		}()
		for range 2 {
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "is a FIFO (named pipe), not a regular file") || strings.Contains(err.Error(), "\n") {
					t.Errorf("%s: %v, want one line saying it is a FIFO", p, err)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("reading the FIFO %s still blocks after 30s", p)
			}
		}
	}
}
