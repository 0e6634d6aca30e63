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
	"time"
)

// ledger keeps the send times of the last window on disk, so that a
// restarted (or crash-looping) exporter does not spend its hour again. A
// send is appended and synced before the request leaves; the file is
// rewritten without the old lines when it has grown to several windows.
type ledger struct {
	path  string
	f     *os.File
	lines int
}

// maxLedgerLine bounds what one line may hold: a Unix time in nanoseconds.
const maxLedgerLine = 32

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
	l := &ledger{path: path}
	if err := l.rewrite(sent); err != nil {
		return nil, nil, err
	}
	return l, sent, nil
}

func readLedger(path string, now time.Time, hold time.Duration) ([]time.Time, error) {
	f, err := os.Open(path)
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
	var b strings.Builder
	for _, t := range sent {
		b.WriteString(strconv.FormatInt(t.UnixNano(), 10))
		b.WriteByte('\n')
	}
	tmp := l.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o640); err != nil {
		return fmt.Errorf("analytics ledger: %w", err)
	}
	if err := syncFile(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, l.path); err != nil {
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

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("analytics ledger: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("analytics ledger: %w", err)
	}
	return nil
}

// record appends t and syncs it; sent is the whole log after t, used when
// the file is due for compaction.
func (l *ledger) record(t time.Time, sent []time.Time, limit int) error {
	if l.lines >= 4*max(limit, 16) {
		return l.rewrite(sent)
	}
	if _, err := l.f.WriteString(strconv.FormatInt(t.UnixNano(), 10) + "\n"); err != nil {
		return fmt.Errorf("analytics ledger: %w", err)
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("analytics ledger: %w", err)
	}
	l.lines++
	return nil
}

func (l *ledger) close() error {
	if l == nil || l.f == nil {
		return nil
	}
	return l.f.Close()
}
