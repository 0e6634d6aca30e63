package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// opts are the test's Options: schema "1", and a lock timeout short enough
// that waiting it out costs nothing.
var opts = Options{Schema: "1", LockTimeout: 20 * time.Millisecond}

func TestStoreRoundTrip(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sub", "dir", "agent.db")
	s, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			if err := s.Put(fmt.Sprintf("k%02d", i), []byte(fmt.Sprint(i))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := s.Apply(Op{Bucket: Jobs, Key: "k00"}, Op{Bucket: Jobs, Key: "k01"}, Op{Bucket: Jobs, Key: "missing"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("state file mode: %v %v", fi.Mode(), err)
	}

	s, err = Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := map[string]string{}
	if err := s.ForEach(func(k, v []byte) error {
		got[string(k)] = string(v)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.Len(); len(got) != 48 || n != 48 || got["k49"] != "49" || got["k00"] != "" {
		t.Errorf("after reopen: %d entries (Len %d): %v", len(got), n, got)
	}
}

func TestStoreRefusesOtherSchema(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agent.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket(bucketMeta)
		if err != nil {
			return err
		}
		return b.Put(keySchema, []byte("99"))
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := Open(path, opts); err == nil || !strings.Contains(err.Error(), "schema") {
		t.Errorf("Open of a schema 99 file: %v", err)
	}
}

func TestStoreRefusesGarbage(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agent.db")
	if err := os.WriteFile(path, []byte(strings.Repeat("not a bbolt file\n", 1000)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, opts); err == nil {
		t.Error("Open of a garbage file succeeded")
	}
}

func TestStoreLocked(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agent.db")
	s, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := Open(path, opts); err == nil || !strings.Contains(err.Error(), "locked") {
		t.Errorf("second Open: %v, want locked", err)
	}
}

func TestStoreNeedsSchemaAndLockTimeout(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agent.db")
	for _, o := range []Options{{LockTimeout: time.Second}, {Schema: "1"}} {
		if _, err := Open(path, o); err == nil {
			t.Errorf("Open with %+v succeeded", o)
		}
	}
}
