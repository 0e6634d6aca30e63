package snapstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-kit/log"

	"github.com/mintlify-exporter/mintlify_exporter/internal/statedir"
)

// A file of this package (a snapshot, or a snapshot's encoding) is a
// header line and a body:
//
//	mintlify_exporter snapshot 3 CRC VERSION LENGTH KEY\n
//	BODY                                 (LENGTH bytes, kept as given)
//
// CRC is the CRC-32C, in 8 hex digits, of all that follows it: VERSION,
// LENGTH, KEY, the newline and BODY. Any edit (a cut, a flipped bit, a key
// changed to pass another demand's file off as this one's) makes a
// damaged file, which is skipped with a warning. Formats 1 and 2, of
// earlier versions, are skipped as well.
const magic = "mintlify_exporter snapshot 3 "

// MaxBytes bounds a body: what replicas share through Redis is refused
// over this size (cluster.MaxBlobBytes), and so is a file here.
const MaxBytes = 32 << 20

// maxKey bounds a key; a file over maxFile (a body, a key and the rest
// of the header) is not read.
const (
	maxKey  = 4 << 10
	maxFile = MaxBytes + maxKey + 128
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errMoved: the file holds another key's body (moved or copied over).
var errMoved = errors.New("holds another demand's file (moved or copied here)")

// files is a directory of files, one a key, named by a digest of it.
type files struct {
	dir, ext string
	logger   log.Logger
	writes   statedir.Writes
}

// name is key's file: a digest, since keys hold project ids and settings
// of any length.
func (fs *files) name(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:16]) + fs.ext
}

// read returns the key, version and body of file name: a regular file
// (nothing that could block the open or the read), at most maxFile bytes
// (found by its size, before reading), whole, and named after its key.
func (fs *files) read(name string) (key string, version int64, body []byte, err error) {
	data, err := statedir.ReadFile(filepath.Join(fs.dir, name), maxFile)
	if err != nil {
		return "", 0, nil, err
	}
	rest, ok := bytes.CutPrefix(data, []byte(magic))
	if !ok {
		return "", 0, nil, fmt.Errorf("not a file of format 3 (it starts %.40q)", data)
	}
	if len(rest) < 9 || rest[8] != ' ' {
		return "", 0, nil, errors.New("damaged: its header is cut short")
	}
	sum, err := strconv.ParseUint(string(rest[:8]), 16, 32)
	if rest = rest[9:]; err != nil || crc32.Checksum(rest, castagnoli) != uint32(sum) {
		return "", 0, nil, errors.New("damaged: its checksum does not match")
	}
	line, body, _ := bytes.Cut(rest, []byte{'\n'})
	f := strings.SplitN(string(line), " ", 3)
	if len(f) != 3 || f[1] != strconv.Itoa(len(body)) || f[2] == "" {
		return "", 0, nil, fmt.Errorf("header %.80q", line)
	}
	if version, err = strconv.ParseInt(f[0], 10, 64); err != nil {
		return "", 0, nil, fmt.Errorf("header %.80q", line)
	}
	if fs.name(f[2]) != name {
		return "", 0, nil, errMoved
	}
	return f[2], version, body, nil
}

// write replaces key's file with version and body, atomically.
func (fs *files) write(ctx context.Context, key string, version int64, body []byte) error {
	switch {
	case key == "" || len(key) > maxKey || strings.ContainsRune(key, '\n'):
		return fmt.Errorf("key %.80q cannot be stored", key)
	case len(body) > MaxBytes:
		return fmt.Errorf("%d bytes, more than the %d bytes kept", len(body), MaxBytes)
	}
	rest := fmt.Appendf(nil, "%d %d %s\n", version, len(body), key)
	sum := crc32.Update(crc32.Checksum(rest, castagnoli), castagnoli, body)
	head := append(fmt.Appendf([]byte(magic), "%08x ", sum), rest...)
	return fs.writes.Do(func() error { return writeAtomic(ctx, fs.dir, fs.name(key), head, body) })
}

// keep deletes the files of every key but keep's, and with temps the
// temporary files of writes (only when none runs: a crash cut them).
func (fs *files) keep(keep []string, temps bool) error {
	ents, err := statedir.ReadDir(fs.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	names := make(map[string]bool, len(keep))
	for _, k := range keep {
		names[fs.name(k)] = true
	}
	var errs []error
	for _, e := range ents {
		n := e.Name()
		if (strings.HasSuffix(n, fs.ext) && !names[n]) || (temps && strings.HasSuffix(n, ".tmp")) {
			if err := os.Remove(filepath.Join(fs.dir, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// writeAtomic replaces dir/name with the parts: a temporary file fsynced,
// then renamed, then the directory fsynced, so that after a crash the file
// is either the old one or the new one, whole. ctx is looked at before
// each step that cannot be undone.
func writeAtomic(ctx context.Context, dir, name string, parts ...[]byte) (err error) {
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
	for _, p := range parts {
		if _, err := f.Write(p); err != nil {
			_ = f.Close()
			return err
		}
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
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
