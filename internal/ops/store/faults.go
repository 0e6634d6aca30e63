package store

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// ReplacedError means the state file's path no longer names the file the
// store opened: it was deleted, moved away or replaced while the exporter
// ran. Writes would go to a file the next start does not read, so none is
// made (nor acknowledged) until the path names the open file again.
type ReplacedError struct {
	Path string
	// Missing: nothing is at the path; otherwise another file is.
	Missing bool
}

func (e *ReplacedError) Error() string {
	what := "was replaced by another file"
	if e.Missing {
		what = "was deleted or moved away"
	}
	return fmt.Sprintf("agent state file %s %s while the exporter was running: its jobs are in the file the exporter still has open, "+
		"not at that path; nothing is written until the path names it again (see alerts/RUNBOOK.md, \"Agent state file replaced\")", e.Path, what)
}

// WriteTimeoutError means a write did not finish within the store's
// WriteTimeout (a frozen or hung filesystem), or was refused because an
// earlier one has not (Stalled). A write that timed out may still land.
type WriteTimeoutError struct {
	Path    string
	Timeout time.Duration
	// Stalled: refused without writing, an earlier write is still blocked.
	Stalled bool
}

func (e *WriteTimeoutError) Error() string {
	if e.Stalled {
		return fmt.Sprintf("agent state file %s: an earlier write has been blocked for more than %s (a frozen or hung filesystem?); nothing was written", e.Path, e.Timeout)
	}
	return fmt.Sprintf("agent state file %s: the write did not finish within %s (a frozen or hung filesystem?); it may still land", e.Path, e.Timeout)
}

// CheckFile reports whether the path still names the file that was opened:
// nil when it does, a *ReplacedError when it names another file or none.
// An error other than "does not exist" from stat proves nothing and is
// not reported. Cheap (one stat): Apply calls it before and after each
// write, and the tracker on a timer.
func (s *Store) CheckFile() error {
	st, err := os.Stat(s.path)
	switch {
	case err == nil && os.SameFile(st, s.opened):
		s.replaced.Store(false)
		return nil
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return nil
	}
	s.replaced.Store(true)
	return &ReplacedError{Path: s.path, Missing: err != nil}
}

// Replaced reports what the last CheckFile found: the path no longer
// names the open file.
func (s *Store) Replaced() bool { return s.replaced.Load() }
