package budget

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/statedir"
)

// ledger keeps the send times of the last window on disk, so that a
// restarted (or crash-looping) exporter does not spend its hour again. A
// send is appended and synced before the request leaves; the file is
// rewritten without the old lines when it has grown to several windows.
//
// Every write is bounded (a frozen or hung filesystem): the request it was
// for is not sent, and later writes fail at once until the blocked one
// returns, so a stuck disk stops the analytics requests instead of
// stalling the refreshes, the metrics and shutdown behind it.
type ledger struct {
	path string
	// sync is (*os.File).Sync; tests replace it to freeze the disk.
	sync func(*os.File) error

	mu    sync.Mutex // one write at a time; held by the writing goroutine
	f     *os.File
	lines int

	writes statedir.Writes
}

// ledgerWriteTimeout bounds a ledger write, as the agent state file's.
const ledgerWriteTimeout = 5 * time.Second

// StalledError means a ledger write did not finish within its bound (a
// frozen or hung filesystem), or was refused because one is still blocked.
// The request it was for was not sent.
type StalledError struct {
	Path string
	Err  *statedir.TimeoutError
}

func (e *StalledError) Error() string {
	return fmt.Sprintf("analytics ledger %s: %v; request not sent", e.Path, e.Err)
}

func (e *StalledError) Unwrap() error { return e.Err }

// maxLedgerLine bounds what one line may hold: a Unix time in nanoseconds.
const maxLedgerLine = 32

// maxLedgerBytes bounds the file read at start: far above a compacted
// ledger (a line per request of the hold window).
const maxLedgerBytes = 16 << 20

// openLedger reads the send times younger than hold from path (creating
// the file and its directory when missing) and opens it for appending.
func openLedger(path string, now time.Time, hold time.Duration) (*ledger, []time.Time, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, nil, fmt.Errorf("analytics ledger: %w", err)
	}
	sent, err := readLedger(path, now, hold)
	if err != nil {
		return nil, nil, err
	}
	l := &ledger{path: path, sync: (*os.File).Sync, writes: statedir.Writes{Timeout: ledgerWriteTimeout}}
	if err := l.rewrite(sent); err != nil {
		return nil, nil, err
	}
	return l, sent, nil
}

func readLedger(path string, now time.Time, hold time.Duration) ([]time.Time, error) {
	// Never an open that blocks (a FIFO in its place) nor a read without
	// end (a device): such a file is an error that names it.
	f, _, err := statedir.Open(path, maxLedgerBytes)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("analytics ledger: %w", err)
	}
	defer f.Close()
	var sent []time.Time
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, maxLedgerLine), maxLedgerLine)
	for sc.Scan() {
		ns, err := strconv.ParseInt(strings.TrimSpace(sc.Text()), 10, 64)
		if err != nil {
			// A line cut by a crash mid-append: the request it was for
			// never left (the line is synced before it does).
			continue
		}
		if t := time.Unix(0, ns); t.After(now.Add(-hold)) && !t.After(now.Add(hold)) {
			sent = append(sent, t)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("analytics ledger %s: %w", path, err)
	}
	slices.SortFunc(sent, time.Time.Compare) // oldest first, as Budget keeps them
	return sent, nil
}

// rewrite replaces the file with sent, atomically, and reopens it.
func (l *ledger) rewrite(sent []time.Time) error {
	var b []byte
	for _, t := range sent {
		b = append(strconv.AppendInt(b, t.UnixNano(), 10), '\n')
	}
	tmp := l.path + ".tmp"
	err := os.WriteFile(tmp, b, 0o640)
	if err == nil {
		err = l.syncFile(tmp)
	}
	if err == nil {
		err = os.Rename(tmp, l.path)
	}
	if err != nil {
		return fmt.Errorf("analytics ledger: %w", err)
	}
	if l.f != nil {
		_ = l.f.Close()
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("analytics ledger: %w", err)
	}
	l.f, l.lines = f, len(sent)
	return nil
}

func (l *ledger) syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return l.sync(f)
}

// record appends t and syncs it, within the write bound; times gives the
// whole log (t included), used when the file is due for compaction. The
// caller must not hold what times locks.
func (l *ledger) record(t time.Time, times func() []time.Time, limit int) error {
	err := l.writes.Do(func() error { return l.write(t, times, limit) })
	if timeout, ok := errors.AsType[*statedir.TimeoutError](err); ok {
		return &StalledError{Path: l.path, Err: timeout}
	}
	return err
}

func (l *ledger) write(t time.Time, times func() []time.Time, limit int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lines >= 4*max(limit, 16) {
		return l.rewrite(times())
	}
	_, err := l.f.WriteString(strconv.FormatInt(t.UnixNano(), 10) + "\n")
	if err == nil {
		err = l.sync(l.f)
	}
	if err != nil {
		return fmt.Errorf("analytics ledger: %w", err)
	}
	l.lines++
	return nil
}

// close closes the file once the writes under way have returned; after
// the write bound it gives up and leaves the file to the process's exit,
// so a frozen disk cannot hold shutdown.
func (l *ledger) close() error {
	if l == nil {
		return nil
	}
	if !l.writes.Idle() {
		return &StalledError{Path: l.path, Err: &statedir.TimeoutError{Timeout: l.writes.Timeout, Earlier: true}}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	return l.f.Close()
}
