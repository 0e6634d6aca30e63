// Package store persists the state of the operations the engine follows
// (internal/ops/engine: every kind's records and intents) in a bbolt file.
//
// bbolt gives the crash safety the engine needs without a temp-file dance:
// every committed transaction is fsynced before Put or Delete returns, and a
// process killed in the middle of a commit leaves the previous commit intact
// (bbolt keeps two meta pages with checksums and uses the newest valid one).
// Concurrent writers are coalesced with db.Batch, so a burst of submissions
// costs a few fsyncs rather than one each.
//
// The store is a few plain key/value maps (buckets) with a schema version.
// The engine owns the value format and its version; the store keeps the
// version in the file, upgrades the stamp of a file of an older version the
// caller still reads, and refuses any other.
//
// A damaged file (cut short, overwritten, not a state file) is refused with
// a *DamagedError before bbolt touches it, and left as it is: bbolt trusts
// its file and panics or faults on some damaged ones. Check and Salvage
// read such a file without bbolt (verify.go).
package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/mintlify-exporter/mintlify_exporter/internal/statedir"
)

// Jobs is the bucket of Put, Delete and ForEach, and the one every file
// has.
const Jobs = "jobs"

var (
	bucketMeta = []byte("meta")
	keySchema  = []byte("schema")
)

// Options configure Open.
type Options struct {
	// Schema is the layout of the values the caller writes. A new file is
	// stamped with it; an existing file of another schema is refused.
	Schema string
	// Upgrades are older schemas the caller still reads: a file stamped
	// with one is re-stamped with Schema when it is opened.
	Upgrades []string
	// Buckets are created beside Jobs when missing.
	Buckets []string
	// LockTimeout bounds how long Open waits for another process to release
	// the file lock; it must be positive.
	LockTimeout time.Duration
	// WriteTimeout bounds how long Apply waits for its write (a frozen or
	// hung filesystem blocks fsync indefinitely), and Close for writes
	// still under way; 0 waits forever.
	WriteTimeout time.Duration
	// BeforeCommit, when not nil, is called in every write transaction
	// before it commits: tests make it block to play a frozen filesystem.
	BeforeCommit func()
}

// Store is an open state file. It is safe for concurrent use.
type Store struct {
	db      *bolt.DB
	path    string
	buckets map[string]bool
	opts    Options
	// opened is the file as opened: the path must keep naming it (see
	// CheckFile).
	opened os.FileInfo
	// replaced: the last CheckFile found the path naming another file, or
	// none.
	replaced atomic.Bool
	// writes bounds the write transactions (bbolt has one writer at a
	// time: a write behind a blocked one fails at once).
	writes statedir.Writes
}

// Open opens or creates the state file at path, creating its directory if
// needed. It fails when the file is locked by another process (two exporters
// sharing one state file would both poll and count every job), is damaged
// (a *DamagedError; the file is left as it is), or is not a state file of
// opts.Schema or opts.Upgrades.
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
	if err := verifyPath(path); err != nil {
		return nil, err
	}
	var db *bolt.DB
	err := guard(func() (err error) {
		db, err = bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.LockTimeout})
		return err
	})
	if err != nil {
		var de *DamagedError
		switch {
		case errors.As(err, &de):
			de.Path = path
			return nil, de
		case errors.Is(err, bolterrors.ErrTimeout):
			return nil, fmt.Errorf("agent state file %s is locked by another process (is another exporter running with the same --agent.state-file?)", path)
		}
		return nil, fmt.Errorf("agent state file %s: %w", path, err)
	}
	buckets := bucketSet(opts.Buckets)
	err = db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		if v := meta.Get(keySchema); v != nil && string(v) != opts.Schema && !slices.Contains(opts.Upgrades, string(v)) {
			return fmt.Errorf("schema version %q, this exporter understands %q", v, opts.Schema)
		}
		if err := meta.Put(keySchema, []byte(opts.Schema)); err != nil {
			return err
		}
		for b := range buckets {
			if _, err := tx.CreateBucketIfNotExists([]byte(b)); err != nil {
				return err
			}
		}
		return nil
	})
	var opened os.FileInfo
	if err == nil {
		opened, err = os.Stat(path)
	}
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("agent state file %s: %w", path, err)
	}
	s := &Store{db: db, path: path, buckets: buckets, opts: opts, opened: opened}
	s.writes.Timeout = opts.WriteTimeout
	return s, nil
}

// openFile opens the state file for reading. A FIFO, a socket or a device
// in its place is damaged, refused before an open that would block or a
// read without end (a symlink to a regular file is followed: the path is
// the operator's).
func openFile(path string) (*os.File, error) {
	if info, err := os.Stat(path); err == nil && !info.Mode().IsRegular() {
		return nil, &DamagedError{Path: path, Problem: "not a regular file (" + info.Mode().Type().String() + ")"}
	}
	return os.Open(path)
}

// verifyPath checks an existing, non-empty file before bbolt opens it.
func verifyPath(path string) error {
	f, err := openFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	var damaged *DamagedError
	if errors.As(err, &damaged) {
		return err
	}
	if err != nil {
		return fmt.Errorf("agent state file %s: %w", path, err)
	}
	defer f.Close()
	fl, err := readFile(f)
	if err == nil && fl != nil {
		err = fl.verify()
	}
	if err != nil {
		return &DamagedError{Path: path, Problem: err.Error()}
	}
	return nil
}

// guard runs fn, turning a panic or a memory fault (bbolt reads its file
// through a memory map) into a *DamagedError: a file that changed between
// the check and the open must not crash the process either.
func guard(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = &DamagedError{Problem: fmt.Sprintf("unreadable (%v)", r)}
		}
	}()
	return fn()
}

// bucketSet is Jobs and the buckets a caller adds.
func bucketSet(names []string) map[string]bool {
	set := map[string]bool{Jobs: true}
	for _, b := range names {
		set[b] = true
	}
	return set
}

// Path is the file's path.
func (s *Store) Path() string { return s.path }

// Op is one change of Apply: Value nil deletes Key from Bucket.
type Op struct {
	Bucket string
	Key    string
	Value  []byte
}

// Apply makes the changes durably and atomically: when it returns nil they
// are all on disk, in the file the path names. Concurrent calls share
// commits.
//
// It fails without writing while the path no longer names the file that
// was opened (*ReplacedError) or while an earlier write is stalled
// (*WriteTimeoutError), and with a *WriteTimeoutError when its own write
// takes longer than WriteTimeout: that write may still land later. Any
// other error means none of the changes was made.
func (s *Store) Apply(ops ...Op) error {
	for _, op := range ops {
		if !s.buckets[op.Bucket] {
			return fmt.Errorf("agent state file: no bucket %q", op.Bucket)
		}
	}
	if s.writes.Stalled() {
		return &WriteTimeoutError{Path: s.path, Timeout: s.opts.WriteTimeout, Stalled: true}
	}
	if err := s.CheckFile(); err != nil {
		return err
	}
	err := s.writes.Do(func() error { return s.db.Batch(s.apply(ops)) })
	if timeout, ok := errors.AsType[*statedir.TimeoutError](err); ok {
		return &WriteTimeoutError{Path: s.path, Timeout: timeout.Timeout, Stalled: timeout.Earlier}
	}
	if err != nil {
		return err
	}
	// Acknowledged only if it went into the file the path names: a write
	// into a deleted file is lost at the next start.
	return s.CheckFile()
}

// Stalled reports whether a write has been under way longer than
// WriteTimeout.
func (s *Store) Stalled() bool { return s.writes.Stalled() }

func (s *Store) apply(ops []Op) func(tx *bolt.Tx) error {
	return func(tx *bolt.Tx) error {
		if s.opts.BeforeCommit != nil {
			s.opts.BeforeCommit()
		}
		for _, op := range ops {
			b := tx.Bucket([]byte(op.Bucket))
			if b == nil {
				return fmt.Errorf("bucket %q missing from the file", op.Bucket)
			}
			var err error
			if op.Value == nil {
				err = b.Delete([]byte(op.Key))
			} else {
				err = b.Put([]byte(op.Key), op.Value)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
}

// Put writes key=value to Jobs durably: when it returns nil the value is
// on disk. Concurrent calls share commits.
func (s *Store) Put(key string, value []byte) error {
	if value == nil {
		value = []byte{}
	}
	return s.Apply(Op{Bucket: Jobs, Key: key, Value: value})
}

// ForEach calls fn for every entry of Jobs in key order. The slices are
// only valid during the call.
func (s *Store) ForEach(fn func(key, value []byte) error) error {
	return s.ForEachIn(Jobs, fn)
}

// ForEachIn calls fn for every entry of bucket in key order. The slices
// are only valid during the call.
func (s *Store) ForEachIn(bucket string, fn func(key, value []byte) error) error {
	if !s.buckets[bucket] {
		return fmt.Errorf("agent state file: no bucket %q", bucket)
	}
	return s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(bucket))
		if b == nil {
			return fmt.Errorf("bucket %q missing from the file", bucket)
		}
		return b.ForEach(fn)
	})
}

// Len is the number of entries.
func (s *Store) Len() (int, error) {
	n := 0
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(Jobs))
		if b == nil {
			return fmt.Errorf("bucket %q missing from the file", Jobs)
		}
		n = b.Stats().KeyN
		return nil
	})
	return n, err
}

// Close releases the file and its lock, after the writes under way, which
// it waits for at most WriteTimeout: a write blocked by a frozen
// filesystem leaves the file open (its lock goes with the process) rather
// than hang the exporter's shutdown. The file then holds the writes that
// completed.
func (s *Store) Close() error {
	if !s.writes.Idle() {
		return fmt.Errorf("agent state file %s: a write is still blocked after %s (a frozen or hung filesystem?): "+
			"not closed; the file holds every write that completed", s.path, s.opts.WriteTimeout)
	}
	return s.db.Close()
}
