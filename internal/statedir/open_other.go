//go:build !unix

package statedir

// Without FIFOs in the file system, Lstat's look before the open is the
// guard.
const (
	fileFlags = 0
	dirFlags  = 0
)
