package statedir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrNotRegular and ErrTooLarge are Open's refusals.
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrTooLarge   = errors.New("too large")
)

// Open opens path for reading when it is a regular file of at most max
// bytes, and returns it with its size. Anything else is refused at once,
// without reading: a FIFO or a socket (whose open or read waits for a
// writer for ever), a device, a symlink (never followed: it could lead to
// any of these), a directory, or a file over max (a sparse file of 2 GiB
// would be read into memory).
//
// The mode is looked at before the open, so that a device is not even
// opened, and again on what was opened, which neither blocks nor follows
// a symlink: a file swapped in between is refused too.
func Open(path string, max int64) (*os.File, int64, error) {
	info, err := os.Lstat(path)
	if err != nil {
		return nil, 0, err
	}
	if err := check(info, max); err != nil {
		return nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|fileFlags, 0)
	if err != nil {
		return nil, 0, err
	}
	if info, err = f.Stat(); err == nil {
		err = check(info, max)
	}
	if err != nil {
		_ = f.Close()
		return nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	return f, info.Size(), nil
}

// ReadFile reads the whole of path through Open: a regular file of at most
// max bytes.
func ReadFile(path string, max int64) ([]byte, error) {
	f, size, err := Open(path, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data := make([]byte, size)
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return data, nil
}

// ReadDir is os.ReadDir, but what is not a directory (a FIFO, a device) is
// an error at once rather than an open that blocks.
func ReadDir(dir string) ([]fs.DirEntry, error) {
	f, err := os.OpenFile(dir, os.O_RDONLY|dirFlags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

func check(info fs.FileInfo, max int64) error {
	m := info.Mode()
	switch {
	case m&fs.ModeSymlink != 0:
		return fmt.Errorf("%w: a symlink", ErrNotRegular)
	case m&fs.ModeNamedPipe != 0:
		return fmt.Errorf("%w: a FIFO", ErrNotRegular)
	case m&fs.ModeSocket != 0:
		return fmt.Errorf("%w: a socket", ErrNotRegular)
	case m&fs.ModeDevice != 0:
		return fmt.Errorf("%w: a device", ErrNotRegular)
	case m.IsDir():
		return fmt.Errorf("%w: a directory", ErrNotRegular)
	case !m.IsRegular():
		return fmt.Errorf("%w (%s)", ErrNotRegular, m.Type())
	case info.Size() > max:
		return fmt.Errorf("%w: %d bytes, more than the %d bytes read", ErrTooLarge, info.Size(), max)
	}
	return nil
}
