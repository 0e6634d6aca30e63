//go:build unix

package statedir

import "syscall"

// An open never blocks (a FIFO) and never follows a symlink; a directory's
// open fails on anything else before opening it.
const (
	fileFlags = syscall.O_NONBLOCK | syscall.O_NOFOLLOW
	dirFlags  = syscall.O_NONBLOCK | syscall.O_DIRECTORY
)
