// Package snapstore keeps each organization's analytics snapshots in the
// local state directory, so that an exporter restarted (an upgrade, a
// drained node, an OOM kill, kill -9) serves them at once with their true
// ages and walks nothing before its interval. It is the single-process
// implementation of refresh.Shared; internal/cluster is the one for
// replicas (Redis), which needs no local copy.
//
// What it stores is what replicas share through Redis: the scheduler's
// published envelope (walk start, duration) around the snapshot's wire form
// (internal/sources/wire.go). One file per demand, so that a walk rewrites
// only its own snapshot: at the scale benchmark's 1.92M series a walk of one
// project's 30d window rewrites a few hundred kB, not the whole state.
//
// A file is
//
//	mintlify_exporter analytics snapshot 2\n   (the file format)
//	KEY\n                                      (the demand, refresh's shared key)
//	VERSION\n                                  (decimal)
//	gzip(HEAD\nSNAPSHOT)                       (gzip's CRC catches damage)
//
// where HEAD and SNAPSHOT are refresh.SplitPublished's parts of DATA, the
// snapshot's wire form kept as it is rather than in the envelope's base64
// (a quarter less to store and to unpack). Format 1, gzip(DATA), is what
// a publication that does not split is kept as, and what the first
// version wrote: both are read.
//
// written to a temporary file, fsynced, renamed over the old one and the
// directory fsynced: a crash mid-write leaves the previous snapshot.
package snapstore

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/internal/refresh"
	"github.com/mintlify-exporter/mintlify_exporter/internal/statedir"
)

// formatLine opens every file; a future format changes the number, and
// this build skips (with a warning, then walks again) what it cannot read.
const (
	formatLine  = "mintlify_exporter analytics snapshot 1"
	formatLine2 = "mintlify_exporter analytics snapshot 2"
)

// DirName is the directory, in the state directory, that holds one
// directory of snapshots per organization.
const DirName = "analytics-snapshots"

// MaxBytes bounds what a file's data may unpack to: a snapshot of the
// exporter's bounded series is a few MB (Redis refuses more than 32 MiB);
// a larger one is not ours and is not read.
const MaxBytes = 64 << 20

// maxHeader bounds the key and version lines.
const maxHeader = 4 << 10

// writeTimeout bounds one file's write, as the ledger's: a frozen disk
// fails the write (the snapshot stays served from memory) instead of
// holding the walk's goroutine and shutdown.
const writeTimeout = 10 * time.Second

const ext = ".snap"

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
	ents, err := os.ReadDir(r.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("analytics snapshots: %w", err)
	}
	kept := map[string]bool{}
	for _, o := range keep {
		kept[o] = true
	}
	var errs []error
	for _, e := range ents {
		if e.IsDir() && !kept[e.Name()] {
			if err := os.RemoveAll(filepath.Join(r.dir, e.Name())); err != nil {
				errs = append(errs, fmt.Errorf("analytics snapshots of a former organization: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}

// Dir is one organization's snapshots in a directory. It implements
// refresh.Shared for a process that walks alone: every claim is granted.
type Dir struct {
	dir    string
	logger log.Logger
	writes statedir.Writes
	// broken: the directory could not be made or read; Publish fails.
	broken error

	mu sync.Mutex
	// versions are the stored versions by key; token is the last version
	// handed out, above every stored one so that a new walk's snapshot is
	// never taken for the restored one.
	versions map[string]int64
	token    int64
}

var (
	_ refresh.Shared       = (*Dir)(nil)
	_ refresh.Forgetter    = (*Dir)(nil)
	_ refresh.SplitFetcher = (*Dir)(nil)
)

// Open reads the headers of the snapshots in dir (made if missing). A file
// that cannot be read is logged and left to be overwritten by its
// demand's next walk, or deleted by Forget.
func Open(dir string, logger log.Logger) (*Dir, error) {
	if logger == nil {
		logger = log.NewNopLogger()
	}
	d := &Dir{dir: dir, logger: logger, versions: map[string]int64{}, writes: statedir.Writes{Timeout: writeTimeout}}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		d.broken = fmt.Errorf("analytics snapshots: %w", err)
		return d, d.broken
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		d.broken = fmt.Errorf("analytics snapshots: %w", err)
		return d, d.broken
	}
	for _, e := range ents {
		name := e.Name()
		if strings.HasSuffix(name, ".tmp") && !e.IsDir() {
			// A write a crash cut (nothing writes before Open returns).
			_ = os.Remove(filepath.Join(dir, name))
			continue
		}
		if !strings.HasSuffix(name, ext) || e.IsDir() {
			continue
		}
		key, version, err := readHeader(filepath.Join(dir, name))
		if err == nil && fileName(key) != name {
			err = errors.New("its key does not match its name")
		}
		if err != nil {
			level.Warn(logger).Log("msg", "damaged analytics snapshot skipped: its demand is walked again when due", "file", filepath.Join(dir, name), "err", err)
			continue
		}
		d.versions[key] = version
		d.token = max(d.token, version)
	}
	return d, nil
}

// fileName is key's file: a digest, since keys hold project ids and
// settings of any length.
func fileName(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:16]) + ext
}

// readHeader reads a file's key and version.
func readHeader(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	key, version, _, _, err := parseHeader(bufio.NewReaderSize(io.LimitReader(f, maxHeader), 512))
	return key, version, err
}

// parseHeader reads the format, key and version lines, and returns the
// reader positioned at the data and whether it is split (format 2).
func parseHeader(r *bufio.Reader) (key string, version int64, _ *bufio.Reader, split bool, err error) {
	var lines [3]string
	for i := range lines {
		line, err := r.ReadString('\n')
		if err != nil {
			return "", 0, nil, false, fmt.Errorf("header cut short: %w", err)
		}
		lines[i] = strings.TrimSuffix(line, "\n")
	}
	if lines[0] != formatLine && lines[0] != formatLine2 {
		return "", 0, nil, false, fmt.Errorf("not a snapshot file of format 1 or 2 (%.60q)", lines[0])
	}
	version, err = strconv.ParseInt(lines[2], 10, 64)
	if err != nil || version <= 0 {
		return "", 0, nil, false, fmt.Errorf("version %.30q is not a positive number", lines[2])
	}
	if lines[1] == "" {
		return "", 0, nil, false, errors.New("empty key")
	}
	return lines[1], version, r, lines[0] == formatLine2, nil
}

// Claim implements refresh.Shared: a process alone always walks. The
// token orders its snapshots after the stored ones.
func (d *Dir) Claim(ctx context.Context, _ string) (context.Context, int64, func(), error) {
	d.mu.Lock()
	d.token++
	token := d.token
	d.mu.Unlock()
	walkCtx, cancel := context.WithCancel(ctx)
	return walkCtx, token, cancel, nil
}

// Publish implements refresh.Shared: data becomes key's file, atomically,
// unless a newer version is stored. ttl does not apply: the plan's own
// staleness rules decide whether a restored snapshot is still served, as
// for one kept in memory.
func (d *Dir) Publish(ctx context.Context, key string, version int64, data []byte, _ time.Duration) error {
	if d.broken != nil {
		return d.broken
	}
	if strings.ContainsAny(key, "\n") || key == "" {
		return fmt.Errorf("analytics snapshot: key %q cannot be stored", key)
	}
	d.mu.Lock()
	stored := d.versions[key]
	d.mu.Unlock()
	if stored >= version {
		return nil
	}
	var b bytes.Buffer
	head, snapshot, split := refresh.SplitPublished(data)
	format := formatLine
	if split {
		format = formatLine2
	}
	fmt.Fprintf(&b, "%s\n%s\n%d\n", format, key, version)
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed) // a valid level: no error
	var err error
	if split {
		_, err = zw.Write(head)
		if err == nil {
			_, err = zw.Write([]byte{'\n'})
		}
		if err == nil {
			_, err = zw.Write(snapshot)
		}
	} else {
		_, err = zw.Write(data)
	}
	if err != nil {
		return fmt.Errorf("analytics snapshot: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("analytics snapshot: %w", err)
	}
	err = d.writes.Do(func() error { return writeAtomic(ctx, d.dir, fileName(key), b.Bytes()) })
	if err != nil {
		return fmt.Errorf("analytics snapshot of %s: %w", key, err)
	}
	d.mu.Lock()
	d.versions[key] = max(d.versions[key], version)
	d.mu.Unlock()
	return nil
}

// writeAtomic replaces dir/name with data: a temporary file fsynced, then
// renamed, then the directory fsynced, so that after a crash the file is
// either the old one or the new one, whole. ctx is looked at before each
// step that cannot be undone.
func writeAtomic(ctx context.Context, dir, name string, data []byte) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+name+".*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	return syncDir(dir)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}

// Versions implements refresh.Shared, from memory: this process is the
// only writer of its directory.
func (d *Dir) Versions(_ context.Context, keys []string) ([]int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]int64, len(keys))
	for i, k := range keys {
		out[i] = d.versions[k]
	}
	return out, nil
}

// Fetch implements refresh.Shared. A file that is damaged (cut, its
// checksum wrong, another format) is an error wrapping
// refresh.ErrUnreadableSnapshot with its version: the scheduler logs it,
// does not read it again and walks the demand.
func (d *Dir) Fetch(ctx context.Context, key string) ([]byte, int64, bool, error) {
	head, body, version, ok, err := d.FetchSplit(ctx, key)
	if head != nil {
		body = refresh.JoinPublished(head, body)
	}
	return body, version, ok, err
}

// FetchSplit implements refresh.SplitFetcher: Fetch without putting a
// file of format 2 back into the published envelope's base64 (head nil:
// body is the data as published).
func (d *Dir) FetchSplit(ctx context.Context, key string) (head, body []byte, version int64, ok bool, err error) {
	d.mu.Lock()
	version, ok = d.versions[key]
	d.mu.Unlock()
	if !ok {
		return nil, nil, 0, false, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, 0, false, err
	}
	head, body, err = d.read(key, version)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, 0, false, nil
	}
	if err != nil {
		return nil, nil, version, false, fmt.Errorf("%w: %s: %w", refresh.ErrUnreadableSnapshot, filepath.Join(d.dir, fileName(key)), err)
	}
	return head, body, version, true, nil
}

// gzipReaders are reused across files: a restore reads thousands.
var gzipReaders sync.Pool

// read reads key's file, which must hold version: the published data
// (head nil), or its head and snapshot (format 2).
func (d *Dir) read(key string, version int64) (head, body []byte, _ error) {
	raw, err := os.ReadFile(filepath.Join(d.dir, fileName(key)))
	if err != nil {
		return nil, nil, err
	}
	k, v, r, split, err := parseHeader(bufio.NewReaderSize(bytes.NewReader(raw), 512))
	switch {
	case err != nil:
		return nil, nil, err
	case k != key || v != version:
		return nil, nil, fmt.Errorf("holds %s version %d, want version %d", k, v, version)
	}
	zr, _ := gzipReaders.Get().(*gzip.Reader)
	if zr == nil {
		zr, err = gzip.NewReader(r)
	} else {
		err = zr.Reset(r)
	}
	if err != nil {
		return nil, nil, err
	}
	defer gzipReaders.Put(zr)
	// gzip's trailer holds the size unpacked (modulo 4 GiB): read into a
	// buffer of that size rather than one grown by doubling.
	size := 0
	if len(raw) >= 4 {
		size = int(min(binary.LittleEndian.Uint32(raw[len(raw)-4:]), MaxBytes))
	}
	buf := bytes.NewBuffer(make([]byte, 0, size+bytes.MinRead))
	if _, err := buf.ReadFrom(io.LimitReader(zr, MaxBytes+1)); err != nil {
		return nil, nil, err // a cut file, or a wrong checksum
	}
	data := buf.Bytes()
	if len(data) > MaxBytes {
		return nil, nil, fmt.Errorf("unpacks to more than %d bytes", MaxBytes)
	}
	if split {
		head, snapshot, ok := bytes.Cut(data, []byte{'\n'})
		if !ok {
			return nil, nil, errors.New("format 2 without its head")
		}
		return head, snapshot, nil
	}
	return nil, data, nil
}

// Forget implements refresh.Forgetter: it deletes the snapshot files of
// every key but keep's (demands the configuration no longer has, or walks
// differently, and damaged files). Temporary files are left alone: a
// walk may be writing one.
func (d *Dir) Forget(_ context.Context, keep []string) error {
	if d.broken != nil {
		return d.broken
	}
	names := make(map[string]bool, len(keep))
	kept := make(map[string]bool, len(keep))
	for _, k := range keep {
		names[fileName(k)], kept[k] = true, true
	}
	ents, err := os.ReadDir(d.dir)
	if err != nil {
		return fmt.Errorf("analytics snapshots: %w", err)
	}
	d.mu.Lock()
	for k := range d.versions {
		if !kept[k] {
			delete(d.versions, k)
		}
	}
	d.mu.Unlock()
	var errs []error
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ext) && !names[e.Name()] {
			if err := os.Remove(filepath.Join(d.dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("analytics snapshots: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}
