// Package snapstore keeps each organization's analytics snapshots in the
// local state directory, so that an exporter restarted (an upgrade, a
// drained node, an OOM kill, kill -9) serves them at once with their true
// ages and walks nothing before its interval. It implements the plan's
// Shared (internal/refresh) for a process that walks alone; replicas share
// the same bytes through Redis instead.
//
// A snapshot is kept as the plan published it, one file per demand (see
// file.go), so that a walk rewrites only its own: at the scale benchmark's
// 1.92M series a walk of one project's 30d window rewrites a few hundred
// kB, not the whole state. Each file is read once, when the directory is
// opened; what is not a regular file of this format, whole, is skipped
// with a warning, and its demand walked again.
package snapstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/internal/statedir"
)

// DirName is the directory, in the state directory, that holds one
// directory of snapshots per organization.
const DirName = "analytics-snapshots"

// writeTimeout bounds one file's write, as the ledger's: a frozen disk
// fails the write (the snapshot stays served from memory) instead of
// holding the walk's goroutine and shutdown.
const writeTimeout = 10 * time.Second

// Root is the state directory's snapshots, one Dir per organization.
type Root struct {
	dir    string
	logger log.Logger

	mu   sync.Mutex
	orgs map[string]*Dir
}

// NewRoot returns the snapshots kept under stateDir (in DirName).
func NewRoot(stateDir string, logger log.Logger) *Root {
	if logger == nil {
		logger = log.NewNopLogger()
	}
	return &Root{dir: filepath.Join(stateDir, DirName), logger: logger, orgs: map[string]*Dir{}}
}

// Org is organization org's snapshots, read from disk the first time. A
// directory that cannot be read or made is logged: the organization's plan
// then runs as without persistence (its walks are published in vain), as
// the exporter did before, rather than not at all.
func (r *Root) Org(org string) *Dir {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d := r.orgs[org]; d != nil {
		return d
	}
	d, err := Open(filepath.Join(r.dir, org), log.With(r.logger, "organization", org))
	if err != nil {
		level.Warn(r.logger).Log("msg", "analytics snapshots not kept across restarts", "organization", org, "err", err)
	}
	r.orgs[org] = d
	return d
}

// KeepOrgs deletes the snapshots of the organizations not in keep: a
// configuration that dropped one does not keep its data on disk.
func (r *Root) KeepOrgs(keep []string) error {
	ents, err := statedir.ReadDir(r.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("analytics snapshots: %w", err)
	}
	var errs []error
	for _, e := range ents {
		if e.IsDir() && !slices.Contains(keep, e.Name()) {
			if err := os.RemoveAll(filepath.Join(r.dir, e.Name())); err != nil {
				errs = append(errs, fmt.Errorf("analytics snapshots of a former organization: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}

// Dir is one organization's snapshots in a directory: the plan's Shared
// for a process that walks alone (every claim is granted).
type Dir struct {
	files
	// broken: the directory could not be made or read; Publish fails.
	broken error

	mu sync.Mutex
	// versions are the stored versions by key; token is the last version
	// handed out, above every stored one so that a new walk's snapshot is
	// never taken for the restored one.
	versions map[string]int64
	token    int64
	// bodies are what Open read, until Fetch hands each over.
	bodies map[string][]byte
}

// Open reads the snapshots in dir (made if missing). A file that cannot be
// read is logged and left to be overwritten by its demand's next walk, or
// deleted by Forget.
func Open(dir string, logger log.Logger) (*Dir, error) {
	if logger == nil {
		logger = log.NewNopLogger()
	}
	d := &Dir{files: files{dir: dir, ext: ".snap", logger: logger, writes: statedir.Writes{Timeout: writeTimeout}},
		versions: map[string]int64{}, bodies: map[string][]byte{}}
	ents, err := statedir.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		err = os.MkdirAll(dir, 0o750)
	}
	if err != nil {
		d.broken = fmt.Errorf("analytics snapshots: %w", err)
		return d, d.broken
	}
	for _, e := range ents {
		name := e.Name()
		if strings.HasSuffix(name, ".tmp") {
			_ = os.Remove(filepath.Join(dir, name)) // a write a crash cut (none runs yet)
			continue
		}
		if !strings.HasSuffix(name, d.ext) {
			continue
		}
		key, version, body, err := d.read(name)
		if err == nil && version <= 0 {
			err = fmt.Errorf("version %d", version)
		}
		if err != nil {
			level.Warn(logger).Log("msg", "analytics snapshot skipped: its demand is walked again", "file", filepath.Join(dir, name), "err", err)
			continue
		}
		d.versions[key], d.bodies[key] = version, body
		d.token = max(d.token, version)
	}
	return d, nil
}

// Claim implements Shared: a process alone always walks. The token orders
// its snapshots after the stored ones.
func (d *Dir) Claim(ctx context.Context, _ string) (context.Context, int64, func(), error) {
	d.mu.Lock()
	d.token++
	token := d.token
	d.mu.Unlock()
	walkCtx, cancel := context.WithCancel(ctx)
	return walkCtx, token, cancel, nil
}

// Publish implements Shared: data becomes key's file, atomically, unless
// a newer version is stored. ttl does not apply: the plan's own staleness
// rules decide whether a restored snapshot is still served, as for one
// kept in memory.
func (d *Dir) Publish(ctx context.Context, key string, version int64, data []byte, _ time.Duration) error {
	if d.broken != nil {
		return d.broken
	}
	d.mu.Lock()
	stored := d.versions[key]
	d.mu.Unlock()
	if stored >= version {
		return nil
	}
	if err := d.write(ctx, key, version, data); err != nil {
		return fmt.Errorf("analytics snapshot of %s: %w", key, err)
	}
	d.mu.Lock()
	d.versions[key] = max(d.versions[key], version)
	delete(d.bodies, key)
	d.mu.Unlock()
	return nil
}

// Versions implements Shared, from memory: this process is the only
// writer of its directory.
func (d *Dir) Versions(_ context.Context, keys []string) ([]int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]int64, len(keys))
	for i, k := range keys {
		out[i] = d.versions[k]
	}
	return out, nil
}

// Fetch implements Shared: what Open read, handed over once; after that,
// the file read again. A file damaged since is logged and forgotten: its
// demand is walked again.
func (d *Dir) Fetch(ctx context.Context, key string) ([]byte, int64, bool, error) {
	d.mu.Lock()
	version, ok := d.versions[key]
	body, read := d.bodies[key]
	delete(d.bodies, key)
	d.mu.Unlock()
	if !ok || read {
		return body, version, ok, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, false, err
	}
	k, v, body, err := d.read(d.name(key))
	if err == nil && (k != key || v != version) {
		err = fmt.Errorf("holds version %d, want %d", v, version)
	}
	if err != nil {
		level.Warn(d.logger).Log("msg", "analytics snapshot skipped: its demand is walked again", "file", filepath.Join(d.dir, d.name(key)), "err", err)
		d.mu.Lock()
		if d.versions[key] == version {
			delete(d.versions, key)
		}
		d.mu.Unlock()
		return nil, 0, false, nil
	}
	return body, version, true, nil
}

// Forget deletes the snapshot files of every key but keep's (demands the
// configuration no longer has, or walks differently, and damaged files).
// Temporary files are left alone: a walk may be writing one.
func (d *Dir) Forget(_ context.Context, keep []string) error {
	if d.broken != nil {
		return d.broken
	}
	kept := make(map[string]bool, len(keep))
	for _, k := range keep {
		kept[k] = true
	}
	d.mu.Lock()
	for k := range d.versions {
		if !kept[k] {
			delete(d.versions, k)
			delete(d.bodies, k)
		}
	}
	d.mu.Unlock()
	if err := d.keep(keep, false); err != nil {
		return fmt.Errorf("analytics snapshots: %w", err)
	}
	return nil
}
