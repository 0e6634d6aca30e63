package store

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// writeHealthy writes a state file with n entries in Jobs (several pages)
// and returns its bytes.
func writeHealthy(t *testing.T, path string, n int) []byte {
	t.Helper()
	s, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	// A few at a time, as the tracker writes them: several commits,
	// freed pages and a tree of many pages.
	var ops []Op
	for i := range n {
		ops = append(ops, Op{Bucket: Jobs, Key: fmt.Sprintf("p\x00job_%05d", i), Value: bytes.Repeat([]byte{'a' + byte(i%26)}, 200)})
		if len(ops) == 10 || i == n-1 {
			if err := s.Apply(ops...); err != nil {
				t.Fatal(err)
			}
			ops = nil
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func keepAll(bucket string, k, v []byte) (string, bool) {
	if bucket == "" {
		if bytes.HasPrefix(k, []byte("p\x00job_")) {
			return Jobs, true
		}
		return "", false
	}
	return bucket, true
}

func pickFirst(_ string, a, _ []byte) []byte { return a }

// damagedFiles are real damaged state files made from a healthy one.
func damagedFiles(t *testing.T, healthy []byte) map[string][]byte {
	rnd := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, len(healthy))
	for i := range random {
		random[i] = byte(rnd.UintN(256))
	}
	garbledLeaf := bytes.Clone(healthy)
	// Overwrite the page after the meta, freelist and first pages.
	for i := 5 * 4096; i < 6*4096; i++ {
		garbledLeaf[i] = byte(rnd.UintN(256))
	}
	badMetas := bytes.Clone(healthy)
	for i := 16; i < 80; i++ {
		badMetas[i] ^= 0xff
		badMetas[4096+i] ^= 0xff
	}
	return map[string][]byte{
		"truncated to half":    healthy[:len(healthy)/2],
		"truncated to a third": healthy[:len(healthy)/3],
		"header only":          healthy[:2*4096],
		"first page only":      healthy[:4096],
		"ten bytes":            healthy[:10],
		"zeroed":               make([]byte, len(healthy)),
		"random":               random,
		"leaf page garbled":    garbledLeaf,
		"both meta pages bad":  badMetas,
		"text file":            []byte("this is not a state file\n"),
	}
}

func TestOpenRefusesDamagedFilesWithoutPanicOrChange(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	healthy := writeHealthy(t, filepath.Join(dir, "healthy.db"), 400)
	if len(healthy) < 20*4096 {
		t.Fatalf("healthy file only %d bytes: not enough pages to damage", len(healthy))
	}
	for name, data := range damagedFiles(t, healthy) {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".db")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := Open(path, opts)
			if err == nil {
				_ = s.Close()
				t.Fatal("opened a damaged file")
			}
			var de *DamagedError
			if !errors.As(err, &de) {
				t.Fatalf("not a DamagedError: %v", err)
			}
			msg := err.Error()
			for _, want := range []string{path, "damaged", "state check", "state salvage", "left as it is"} {
				if !strings.Contains(msg, want) {
					t.Errorf("message lacks %q: %s", want, msg)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("message is more than one line: %q", msg)
			}
			after, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(after, data) {
				t.Errorf("file changed (%v)", err)
			}
			// Check reads it without a panic and says it is damaged.
			rep, err := Check(path, keepAll, pickFirst)
			if err != nil {
				t.Fatal(err)
			}
			if rep.Healthy() {
				t.Errorf("Check says healthy:\n%s", rep)
			}
		})
	}
}

// A FIFO in place of the state file is damaged, said at once by Open and
// by Check: not an open that waits for a writer for ever (issue 45).
func TestAFIFOIsRefusedAtOnce(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agent.db")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan [2]error, 1)
	go func() {
		s, err := Open(path, opts)
		if err == nil {
			_ = s.Close()
		}
		_, cerr := Check(path, keepAll, pickFirst)
		done <- [2]error{err, cerr}
	}()
	select {
	case errs := <-done:
		var de *DamagedError
		if !errors.As(errs[0], &de) || !strings.Contains(errs[0].Error(), "not a regular file") {
			t.Errorf("Open = %v, want a DamagedError: not a regular file", errs[0])
		}
		if !errors.As(errs[1], &de) {
			t.Errorf("Check = %v, want a DamagedError", errs[1])
		}
	case <-time.After(time.Minute): // a hang guard, not a bound
		t.Fatal("blocked on a FIFO")
	}
}

func TestCheckAndSalvage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const n = 400
	healthy := writeHealthy(t, filepath.Join(dir, "healthy.db"), n)

	rep, err := Check(filepath.Join(dir, "healthy.db"), keepAll, pickFirst)
	if err != nil || !rep.Healthy() || rep.Entries[Jobs] != n || rep.Schema != "1" || len(rep.Loose) != 0 {
		t.Fatalf("healthy: %v\n%s", err, rep)
	}
	salvage := func(name string, data []byte) (*Report, map[string][]byte) {
		t.Helper()
		src := filepath.Join(dir, name+".db")
		dst := filepath.Join(dir, name+".salvaged.db")
		if err := os.WriteFile(src, data, 0o600); err != nil {
			t.Fatal(err)
		}
		rep, err := Salvage(src, dst, opts, keepAll, pickFirst, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if after, _ := os.ReadFile(src); !bytes.Equal(after, data) {
			t.Errorf("%s: source changed", name)
		}
		s, err := Open(dst, opts)
		if err != nil {
			t.Fatalf("%s: salvaged file: %v", name, err)
		}
		defer s.Close()
		got := map[string][]byte{}
		_ = s.ForEach(func(k, v []byte) error {
			got[string(k)] = bytes.Clone(v)
			return nil
		})
		for k, v := range got {
			var i int
			if _, err := fmt.Sscanf(k, "p\x00job_%05d", &i); err != nil || !bytes.Equal(v, bytes.Repeat([]byte{'a' + byte(i%26)}, 200)) {
				t.Errorf("%s: salvaged %q=%q is not a value ever written", name, k, v)
			}
		}
		return rep, got
	}

	if _, got := salvage("copy", healthy); len(got) != n {
		t.Errorf("healthy file: salvaged %d of %d", len(got), n)
	}
	_, got := salvage("half", healthy[:len(healthy)/2])
	if len(got) < n/4 || len(got) >= n {
		t.Errorf("half a file: salvaged %d of %d", len(got), n)
	}
	t.Logf("half a file: salvaged %d of %d", len(got), n)
	// Nothing readable: an error, and no file.
	zeroed, zeroedDst := filepath.Join(dir, "zeroed.db"), filepath.Join(dir, "zeroed.salvaged.db")
	if err := os.WriteFile(zeroed, make([]byte, len(healthy)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Salvage(zeroed, zeroedDst, opts, keepAll, pickFirst, nil); err == nil || !strings.Contains(err.Error(), "nothing readable") {
		t.Errorf("salvage of a zeroed file: %v", err)
	}
	if _, err := os.Stat(zeroedDst); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("salvage of a zeroed file wrote %s: %v", zeroedDst, err)
	}
	// dst must be new.
	if _, err := Salvage(filepath.Join(dir, "copy.db"), filepath.Join(dir, "healthy.db"), opts, keepAll, pickFirst, nil); err == nil {
		t.Error("salvage overwrote an existing file")
	}
}

func TestOpenUpgradesOlderSchema(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a.db")
	writeHealthy(t, path, 1)
	s, err := Open(path, Options{Schema: "2", Upgrades: []string{"1"}, Buckets: []string{"extra"}, LockTimeout: opts.LockTimeout})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(Op{Bucket: "extra", Key: "k", Value: []byte("v")}, Op{Bucket: Jobs, Key: "p\x00job_00000"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(Op{Bucket: "nope", Key: "k", Value: []byte("v")}); err == nil {
		t.Error("wrote to an unknown bucket")
	}
	_ = s.Close()
	if _, err := Open(path, opts); err == nil || !strings.Contains(err.Error(), `schema version "2"`) {
		t.Errorf("old schema opened an upgraded file: %v", err)
	}
}
