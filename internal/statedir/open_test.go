//go:build unix

package statedir

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Open and ReadDir refuse, at once and without reading, whatever could
// block a start or fill its memory (issue 45), and read a regular file.
// Before Open, os.Open of the FIFO blocked for ever.
func TestOpenRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	if err := syscall.Mkfifo(path("fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mknod(path("socket"), syscall.S_IFSOCK|0o600, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", path("device")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path("dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path("file"), []byte("state"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(path("file"), path("link")); err != nil {
		t.Fatal(err)
	}
	big, err := os.Create(path("big"))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(2 << 30); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	big.Close()

	for name, want := range map[string]error{"fifo": ErrNotRegular, "socket": ErrNotRegular, "device": ErrNotRegular,
		"dir": ErrNotRegular, "link": ErrNotRegular, "big": ErrTooLarge} {
		if _, err := ReadFile(path(name), 1<<20); !errors.Is(err, want) {
			t.Errorf("ReadFile(%s) = %v, want %v", name, err, want)
		}
	}
	if got, err := ReadFile(path("file"), 5); err != nil || string(got) != "state" {
		t.Errorf("ReadFile(file) = %q, %v", got, err)
	}
	if _, err := ReadFile(path("file"), 4); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadFile of 5 bytes with max 4 = %v, want %v", err, ErrTooLarge)
	}
	if _, err := ReadDir(path("fifo")); err == nil {
		t.Error("ReadDir of a FIFO succeeded")
	}
	if ents, err := ReadDir(dir); err != nil || len(ents) != 7 {
		t.Errorf("ReadDir = %d entries, %v; want 7", len(ents), err)
	}
}

// A FIFO swapped in after the look before the open is opened without
// blocking and refused by the look at what was opened.
func TestOpenRefusesAFIFOSwappedIn(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_RDONLY|fileFlags, 0)
	if err != nil {
		t.Fatalf("open of a FIFO with Open's flags: %v", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if err := check(info, 1); !errors.Is(err, ErrNotRegular) {
		t.Errorf("check of the opened FIFO = %v", err)
	}
}
