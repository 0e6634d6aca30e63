package store

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// FuzzStateFile reads fuzzed state files as Open, Check and Salvage do:
// never a panic, and a file the check passes opens and reads in bbolt
// without a panic either (the check is what stands between bbolt and a
// damaged file).
func FuzzStateFile(f *testing.F) {
	dir := f.TempDir()
	seed := func(name string, n int) []byte {
		path := filepath.Join(dir, name)
		s, err := Open(path, opts)
		if err != nil {
			f.Fatal(err)
		}
		for i := range n {
			if err := s.Put(string(rune('a'+i%26))+"\x00job", bytes.Repeat([]byte{'x'}, 100*(i%5))); err != nil {
				f.Fatal(err)
			}
		}
		_ = s.Close()
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		return data
	}
	small := seed("small.db", 3)
	f.Add(small)
	f.Add(small[:len(small)/2])
	f.Add(seed("bigger.db", 40))
	f.Add([]byte("not a state file"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fl, err := parseFile(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		fl.walk(func(string, []byte, []byte) {})
		fl.scan(nil, func([]byte, []byte) {})
		if fl.verify() != nil {
			return
		}
		path := filepath.Join(t.TempDir(), "f.db")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
		if err != nil {
			return
		}
		defer db.Close()
		_ = db.View(func(tx *bolt.Tx) error {
			return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
				if b == nil {
					t.Fatalf("the check passed a file whose root holds a value %q that bbolt cannot read as a bucket", name)
				}
				return b.ForEach(func(k, v []byte) error { return nil })
			})
		})
	})
}
