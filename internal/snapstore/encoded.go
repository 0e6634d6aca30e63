package snapstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/internal/statedir"
)

// EncodedDirName is the directory, in the state directory, of what the
// collector encoded from the snapshots (collector.EncodedStore): the
// gzipped exposition of each, served as it is after a restart instead of
// being encoded again before the exporter reports ready.
const EncodedDirName = "analytics-encoded"

// Blobs is a directory of files of the snapshots' format, one a key: the
// collector's encoded snapshots. It implements collector.EncodedStore; the
// collector decides what the files hold and whether one is still good.
type Blobs struct {
	files

	once sync.Once
	err  error // of making the directory
}

// Encoded is the state directory's encoded snapshots (EncodedDirName).
func (r *Root) Encoded() *Blobs {
	return &Blobs{files: files{dir: filepath.Join(filepath.Dir(r.dir), EncodedDirName), ext: ".enc",
		logger: r.logger, writes: statedir.Writes{Timeout: writeTimeout}}}
}

// Load returns key's data, or nil when there is none or its file cannot be
// used: logged, at info for a file of another key moved or copied here
// (which costs an encoding), else as a warning.
func (b *Blobs) Load(key string) []byte {
	file := b.name(key)
	_, _, body, err := b.read(file)
	switch {
	case err == nil:
		return body
	case errors.Is(err, fs.ErrNotExist):
	case errors.Is(err, errMoved):
		level.Info(b.logger).Log("msg", "encoded analytics snapshot of another snapshot: encoded again", "file", filepath.Join(b.dir, file), "err", err)
	default:
		level.Warn(b.logger).Log("msg", "encoded analytics snapshot skipped: encoded again", "file", filepath.Join(b.dir, file), "err", err)
	}
	return nil
}

// Save replaces key's file with data, atomically.
func (b *Blobs) Save(ctx context.Context, key string, data []byte) error {
	b.once.Do(func() { b.err = os.MkdirAll(b.dir, 0o750) })
	if b.err != nil {
		return fmt.Errorf("encoded snapshots: %w", b.err)
	}
	if err := b.write(ctx, key, 0, data); err != nil {
		return fmt.Errorf("encoded snapshot: %w", err)
	}
	return nil
}

// Remove deletes key's file, if any.
func (b *Blobs) Remove(key string) error {
	if err := os.Remove(filepath.Join(b.dir, b.name(key))); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("encoded snapshots: %w", err)
	}
	return nil
}

// Keep deletes every file but keep's, temporary ones included: call it
// when no Save runs.
func (b *Blobs) Keep(keep []string) error {
	if err := b.keep(keep, true); err != nil {
		return fmt.Errorf("encoded snapshots: %w", err)
	}
	return nil
}
