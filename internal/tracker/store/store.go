// Package store persists the job tracker's state in a bbolt file.
//
// bbolt gives the crash safety the tracker needs without a temp-file dance:
// every committed transaction is fsynced before Put or Delete returns, and a
// process killed in the middle of a commit leaves the previous commit intact
// (bbolt keeps two meta pages with checksums and uses the newest valid one).
// Concurrent writers are coalesced with db.Batch, so a burst of submissions
// costs a few fsyncs rather than one each.
//
// The store is a plain key/value map with a schema version. The tracker owns
// the value format and its version; the store keeps the version in the file
// and refuses a file of another version.
package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

var (
	bucketJobs = []byte("jobs")
	bucketMeta = []byte("meta")
	keySchema  = []byte("schema")
)

// Options configure Open.
type Options struct {
	// Schema is the layout of the values the caller writes. A new file is
	// stamped with it; an existing file of another schema is refused.
	Schema string
	// LockTimeout bounds how long Open waits for another process to release
	// the file lock; it must be positive.
	LockTimeout time.Duration
}

// Store is an open state file. It is safe for concurrent use.
type Store struct {
	db   *bolt.DB
	path string
}

// Open opens or creates the state file at path, creating its directory if
// needed. It fails when the file is locked by another process (two exporters
// sharing one state file would both poll and count every job) or is not a
// state file of opts.Schema.
func Open(path string, opts Options) (*Store, error) {
	if path == "" {
		return nil, errors.New("agent state file: empty path")
	}
	if opts.Schema == "" || opts.LockTimeout <= 0 {
		return nil, fmt.Errorf("agent state file %s: a schema and a positive lock timeout are required", path)
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("agent state file: creating directory: %w", err)
		}
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.LockTimeout})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("agent state file %s is locked by another process (is another exporter running with the same --agent.state-file?)", path)
		}
		return nil, fmt.Errorf("agent state file %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		if v := meta.Get(keySchema); v != nil && string(v) != opts.Schema {
			return fmt.Errorf("schema version %q, this exporter understands %q", v, opts.Schema)
		}
		if err := meta.Put(keySchema, []byte(opts.Schema)); err != nil {
			return err
		}
		_, err = tx.CreateBucketIfNotExists(bucketJobs)
		return err
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("agent state file %s: %w", path, err)
	}
	return &Store{db: db, path: path}, nil
}

// Path is the file's path.
func (s *Store) Path() string { return s.path }

// Put writes key=value durably: when it returns nil the value is on disk.
// Concurrent calls share commits.
func (s *Store) Put(key string, value []byte) error {
	return s.db.Batch(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketJobs).Put([]byte(key), value)
	})
}

// Delete removes keys durably in one transaction. Missing keys are ignored.
func (s *Store) Delete(keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketJobs)
		for _, k := range keys {
			if err := b.Delete([]byte(k)); err != nil {
				return err
			}
		}
		return nil
	})
}

// ForEach calls fn for every entry in key order. The slices are only valid
// during the call.
func (s *Store) ForEach(fn func(key, value []byte) error) error {
	return s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketJobs).ForEach(fn)
	})
}

// Len is the number of entries.
func (s *Store) Len() (int, error) {
	n := 0
	err := s.db.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketJobs).Stats().KeyN
		return nil
	})
	return n, err
}

// Close releases the file and its lock.
func (s *Store) Close() error { return s.db.Close() }
