// Package secretfile reads secrets (API keys, passwords) from files, the
// way every secret reaches the exporter: flags show in ps, files do not;
// and bounds every read of a file the user names (ReadAtMost), so that a
// wrong path (/dev/zero, a log) is refused instead of read until memory
// runs out.
package secretfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
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
	data, err := read(path, maxBytes)
	if err != nil {
		return "", err
	}
	if int64(len(data)) > maxBytes {
		return "", fmt.Errorf("%s is longer than %d bytes: not a secret file (wrong path?)", path, maxBytes)
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
	data, err := read(path, maxBytes)
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > maxBytes {
		return nil, fmt.Errorf("%s is longer than %d bytes (wrong path?)", path, maxBytes)
	}
	return data, nil
}

// read reads at most maxBytes+1 bytes of path.
func read(path string, maxBytes int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return data, nil
}
