package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// TestFrozenFilesystem: a write blocked by the filesystem answers within
// WriteTimeout, the writes after it fail at once without queueing, Close
// does not hang on it, and once the filesystem thaws writes work again.
func TestFrozenFilesystem(t *testing.T) {
	t.Parallel()
	fz := &testutil.Freezer{}
	o := opts
	o.WriteTimeout = 2 * time.Second // generous: the first write, before the freeze, syncs on a loaded machine
	o.BeforeCommit = fz.Hook
	s, err := Open(filepath.Join(t.TempDir(), "agent.db"), o)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put("a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	fz.Freeze()
	var te *WriteTimeoutError
	if err := s.Put("b", []byte("2")); !errors.As(err, &te) || te.Stalled {
		t.Fatalf("write on a frozen filesystem: %v, want a timeout", err)
	}
	if !s.Stalled() {
		t.Error("not stalled")
	}
	// Refused at once: no wait, no goroutine queued behind the lock.
	if err := s.Put("c", []byte("3")); !errors.As(err, &te) || !te.Stalled {
		t.Fatalf("write behind a stalled one: %v", err)
	}
	if err := s.Close(); err == nil {
		t.Fatal("Close returned nil with a write blocked")
	}
	fz.Thaw()
	for !s.writes.Idle() { // each call waits at most WriteTimeout
	}
	if s.Stalled() {
		t.Error("still stalled after the thaw")
	}
	// The write that timed out landed after all; the refused one did not.
	if err := s.Put("d", []byte("4")); err != nil {
		t.Fatalf("after the thaw: %v", err)
	}
	got := map[string]bool{}
	_ = s.ForEach(func(k, _ []byte) error { got[string(k)] = true; return nil })
	if !got["a"] || !got["b"] || got["c"] || !got["d"] {
		t.Errorf("keys %v, want a, b and d", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestReplacedFile: a state file deleted or replaced while open is noticed
// by CheckFile and by the next write, which writes nothing; putting the
// file back makes writes work again.
func TestReplacedFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "agent.db")
	s, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Put("a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckFile(); err != nil || s.Replaced() {
		t.Fatalf("healthy file: %v", err)
	}
	moved := filepath.Join(dir, "moved.db")
	if err := os.Rename(path, moved); err != nil {
		t.Fatal(err)
	}
	var re *ReplacedError
	if err := s.CheckFile(); !errors.As(err, &re) || !re.Missing || !s.Replaced() {
		t.Fatalf("deleted file: %v", err)
	}
	if err := s.Put("b", []byte("2")); !errors.As(err, &re) {
		t.Fatalf("write after the delete: %v", err)
	}
	// Another file at the path.
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Put("b", []byte("2")); !errors.As(err, &re) || re.Missing {
		t.Fatalf("write after a replace: %v", err)
	}
	// The open file back where it belongs.
	if err := os.Rename(moved, path); err != nil {
		t.Fatal(err)
	}
	if err := s.Put("c", []byte("3")); err != nil || s.Replaced() {
		t.Fatalf("write after the file came back: %v", err)
	}
	got := map[string]bool{}
	_ = s.ForEach(func(k, _ []byte) error { got[string(k)] = true; return nil })
	if !got["a"] || got["b"] || !got["c"] {
		t.Errorf("keys %v, want a and c", got)
	}
}
