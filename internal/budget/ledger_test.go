package budget

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// A restarted Budget with the same ledger does not spend the hour again.
func TestLedgerSurvivesRestart(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	path := filepath.Join(t.TempDir(), "state", "ledger.log")
	b, err := New(Config{Limit: 5, Now: clock, LedgerPath: path})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := b.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		now = now.Add(time.Minute)
	}
	_ = b.Close() // or a kill -9: every send was synced before it returned

	again, err := New(Config{Limit: 5, Now: clock, LedgerPath: path})
	if err != nil {
		t.Fatal(err)
	}
	if got := again.Spent(); got != 3 {
		t.Fatalf("spent after restart = %d, want 3", got)
	}
	if got := again.Free(); got != 2 {
		t.Errorf("free after restart = %d, want 2", got)
	}
	// An hour (and the hundredth of it the API's clock may lag) later the
	// old sends have left the window, and the file is compacted on open.
	now = now.Add(time.Hour + time.Minute)
	_ = again.Close()
	later, err := New(Config{Limit: 5, Now: clock, LedgerPath: path})
	if err != nil {
		t.Fatal(err)
	}
	defer later.Close()
	if got := later.Spent(); got != 0 {
		t.Errorf("spent an hour later = %d, want 0", got)
	}
	data, _ := os.ReadFile(path)
	if len(strings.TrimSpace(string(data))) != 0 {
		t.Errorf("ledger not compacted: %q", data)
	}
}

// A FIFO in place of the ledger is an error that names it, at once: not an
// open that waits for a writer for ever (issue 45: the start hung).
func TestLedgerThatIsNoFileIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.log")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		b, err := New(Config{Limit: 5, LedgerPath: path})
		if err == nil {
			_ = b.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "FIFO") {
			t.Errorf("New = %v, want an error naming the FIFO", err)
		}
	case <-time.After(time.Minute): // a hang guard, not a bound
		t.Fatal("New blocked on a FIFO")
	}
}

// A line cut by a crash mid-append is skipped (its request never left);
// a line from the future (clock stepped back) still counts within bounds.
func TestLedgerToleratesCutLines(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	path := filepath.Join(t.TempDir(), "ledger.log")
	content := strconv.FormatInt(now.Add(-30*time.Minute).UnixNano(), 10) + "\n" +
		strconv.FormatInt(now.Add(-2*time.Hour).UnixNano(), 10) + "\n" + "17955"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := New(Config{Limit: 5, Now: func() time.Time { return now }, LedgerPath: path})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got := b.Spent(); got != 1 {
		t.Errorf("spent = %d, want 1 (the half-hour-old send only)", got)
	}
}

// A send whose time cannot be recorded is not made.
func TestLedgerWriteFailureRefusesTheRequest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.log")
	b, err := New(Config{Limit: 5, LedgerPath: path})
	if err != nil {
		t.Fatal(err)
	}
	_ = b.ledger.f.Close() // the file can no longer be written
	if err := b.Wait(context.Background()); err == nil {
		t.Fatal("a request was let through without being recorded")
	}
	if b.TryTake() {
		t.Fatal("TryTake let a request through without recording it")
	}
	if got := b.Spent(); got != 0 {
		t.Errorf("spent = %d, want 0", got)
	}
}

// The ledger is compacted while running, so it never grows past a few
// windows of sends.
func TestLedgerCompacts(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	path := filepath.Join(t.TempDir(), "ledger.log")
	b, err := New(Config{Limit: 100, Now: func() time.Time { return now }, LedgerPath: path})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for range 1000 {
		if !b.TryTake() {
			t.Fatal("budget refused")
		}
		now = now.Add(40 * time.Second) // 90 an hour, within the limit
	}
	data, _ := os.ReadFile(path)
	lines := strings.Count(string(data), "\n")
	if lines > 4*100+1 {
		t.Errorf("ledger holds %d lines, want at most %d", lines, 4*100+1)
	}
	if lines < b.Spent() {
		t.Errorf("ledger holds %d lines, fewer than the %d sends in the window", lines, b.Spent())
	}
}

// A frozen disk (a sync that never returns) refuses the request within the
// write bound, then refuses the next ones at once, never holds the metrics,
// lets requests through again once the disk thaws, and never holds Close
// longer than the bound. In a synctest bubble: the bound passes on its
// clock.
func TestFrozenLedgerRefusesWithinItsBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.log")
	synctest.Test(t, func(t *testing.T) { testFrozenLedger(t, path) })
}

func testFrozenLedger(t *testing.T, path string) {
	b, err := New(Config{Limit: 5, LedgerPath: path})
	if err != nil {
		t.Fatal(err)
	}
	const bound = ledgerWriteTimeout
	var thaw chan struct{}
	frozen := make(chan struct{}, 1)
	freeze := func() {
		thaw = make(chan struct{})
		until := thaw
		b.ledger.sync = func(f *os.File) error {
			select {
			case frozen <- struct{}{}:
			default:
			}
			<-until
			return f.Sync()
		}
	}
	freeze()

	start := time.Now()
	waited := make(chan error, 1)
	go func() { waited <- b.Wait(context.Background()) }()
	<-frozen
	// While the write hangs, the metrics' readers are not held up.
	if got := b.Free(); got != 4 {
		t.Errorf("free while the write is blocked = %d, want 4 (one slot reserved)", got)
	}
	var stalled *StalledError
	if err := <-waited; !errors.As(err, &stalled) {
		t.Fatalf("Wait on a frozen disk = %v, want a *StalledError", err)
	}
	if d := time.Since(start); d != bound {
		t.Errorf("the frozen write was given up after %s, want %s", d, bound)
	}
	if got := b.Spent(); got != 0 {
		t.Errorf("spent after the refused request = %d, want 0", got)
	}
	// The next request fails at once: it would queue behind the blocked write.
	start = time.Now()
	if err := b.Wait(context.Background()); !errors.As(err, &stalled) {
		t.Fatalf("Wait while a write is blocked = %v, want a *StalledError", err)
	}
	if b.TryTake() {
		t.Fatal("TryTake let a request through while a write is blocked")
	}
	if d := time.Since(start); d != 0 {
		t.Errorf("refusals while blocked took %s, want them at once", d)
	}

	close(thaw)
	synctest.Wait() // the frozen write returns
	if err := b.Wait(context.Background()); err != nil {
		t.Fatalf("Wait after the thaw: %v", err)
	}
	again, err := New(Config{Limit: 5, LedgerPath: path})
	if err != nil {
		t.Fatal(err)
	}
	// The refused request's line may have landed at the thaw; the one sent
	// after it certainly did.
	if got := again.Spent(); got < 1 {
		t.Errorf("spent read back = %d, want the request sent after the thaw", got)
	}
	_ = again.Close()

	// Frozen again: Close gives up after the bound rather than wait for the
	// disk (shutdown must not hang on it).
	freeze()
	defer func() { close(thaw); synctest.Wait() }() // the bubble ends with its goroutines
	if err := b.Wait(context.Background()); !errors.As(err, &stalled) {
		t.Fatalf("Wait on a frozen disk = %v, want a *StalledError", err)
	}
	start = time.Now()
	if err := b.Close(); !errors.As(err, &stalled) {
		t.Errorf("Close on a frozen disk = %v, want a *StalledError", err)
	}
	if d := time.Since(start); d != bound {
		t.Errorf("Close on a frozen disk took %s, want %s", d, bound)
	}
}
