// This file reads secrets (API keys, passwords) from files, the
// way every secret reaches the exporter: flags show in ps, files do not;
// and bounds every read of a file the user names (ReadAtMost), so that a
// wrong path (a log) is refused instead of read until memory runs out.
// Only regular files are read: a FIFO blocks its reader until someone
// writes (a reload, or every request re-reading the web config, would hang
// with it), and a device such as /dev/zero never ends.

package secrets

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
)

// MaxBytes is what Read allows by default: a secret is a line, not a file.
// A key of any real service fits many times over; a wrong path (a log file,
// /dev/zero, /dev/urandom) is refused after reading this much, instead of
// being read until memory runs out.
const MaxBytes = 4 << 10

// Read returns the content of path with surrounding white space trimmed.
// It reads at most maxBytes+1 bytes, whatever the file is (a device or a
// pipe never ends), and fails when there were more, or when the secret is
// empty. Errors are one line, for the caller to prefix with its flag or key.
func Read(path string, maxBytes int64) (string, error) {
	data, err := ReadAtMost(path, maxBytes)
	if err != nil {
		return "", err
	}
	secret := strings.TrimSpace(string(data))
	if secret == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	if strings.ContainsAny(secret, "\r\n") {
		return "", errors.New(path + " holds more than one line: want the secret alone")
	}
	return secret, nil
}

// ReadAtMost returns the content of path, reading at most maxBytes+1 bytes
// whatever the file is, and fails with one line when there were more.
func ReadAtMost(path string, maxBytes int64) ([]byte, error) {
	f, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if int64(len(data)) > maxBytes {
		return nil, fmt.Errorf("%s is longer than %d bytes (wrong path?)", path, maxBytes)
	}
	return data, nil
}

// OpenRegular opens path for reading when it is a regular file (or a
// symbolic link to one), and fails at once otherwise, with one line that
// says what it is. The open does not wait: O_NONBLOCK keeps the open of a
// FIFO without a writer from blocking, and the file is checked after the
// open (what was opened is what is checked, whatever the path names by
// then).
func OpenRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is %s, not a regular file: want a file (a FIFO waits for a writer, a device may never end)", path, kind(st.Mode()))
	}
	return f, nil
}

// kind names a file's type for an error.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a plain file"
}
