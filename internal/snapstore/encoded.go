package snapstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/mintlify-exporter/mintlify_exporter/internal/statedir"
)

// EncodedDirName is the directory, in the state directory, of what the
// collector encoded from the snapshots (collector.EncodedStore): the
// gzipped exposition of each, served as it is after a restart instead of
// being encoded again before the exporter reports ready.
const EncodedDirName = "analytics-encoded"

// maxEncoded bounds a file of Blobs that is read.
const maxEncoded = 64 << 20

// Blobs is a directory of files written whole and atomically, as the
// snapshots are, and read whole: the collector's encoded snapshots. It
// implements collector.EncodedStore; the collector decides what the
// files hold and whether one is still good.
type Blobs struct {
	dir    string
	writes statedir.Writes

	once sync.Once
	err  error // of making the directory
}

// Encoded is the state directory's encoded snapshots (EncodedDirName).
func (r *Root) Encoded() *Blobs {
	return &Blobs{dir: filepath.Join(filepath.Dir(r.dir), EncodedDirName), writes: statedir.Writes{Timeout: writeTimeout}}
}

// validName refuses names that would leave the directory or collide with
// a temporary file.
func validName(name string) error {
	if name == "" || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".tmp") {
		return fmt.Errorf("encoded snapshot: invalid name %q", name)
	}
	return nil
}

// Load returns name's file (an error wrapping os.ErrNotExist when there
// is none).
func (b *Blobs) Load(name string) ([]byte, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(b.dir, name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxEncoded+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxEncoded {
		return nil, fmt.Errorf("encoded snapshot %s: more than %d bytes", name, maxEncoded)
	}
	return data, nil
}

// Save replaces name's file with data, atomically (see writeAtomic).
func (b *Blobs) Save(ctx context.Context, name string, data []byte) error {
	if err := validName(name); err != nil {
		return err
	}
	b.once.Do(func() { b.err = os.MkdirAll(b.dir, 0o750) })
	if b.err != nil {
		return fmt.Errorf("encoded snapshots: %w", b.err)
	}
	if err := b.writes.Do(func() error { return writeAtomic(ctx, b.dir, name, data) }); err != nil {
		return fmt.Errorf("encoded snapshot %s: %w", name, err)
	}
	return nil
}

// Remove deletes name's file, if any.
func (b *Blobs) Remove(name string) error {
	if err := validName(name); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(b.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("encoded snapshots: %w", err)
	}
	return nil
}

// Keep deletes every file but keep's, temporary ones included: call it
// when no Save runs.
func (b *Blobs) Keep(keep []string) error {
	ents, err := os.ReadDir(b.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("encoded snapshots: %w", err)
	}
	kept := make(map[string]bool, len(keep))
	for _, k := range keep {
		kept[k] = true
	}
	var errs []error
	for _, e := range ents {
		if !e.IsDir() && !kept[e.Name()] {
			if err := os.Remove(filepath.Join(b.dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("encoded snapshots: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}
