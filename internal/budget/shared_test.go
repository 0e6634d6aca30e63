package budget

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	tu "github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// downLedger is a shared ledger that cannot be reached; it notes what it
// was asked.
type downLedger struct {
	mu      sync.Mutex
	queries []LedgerQuery
	rejects [][2]time.Duration
}

var errDown = errors.New("dial tcp 127.0.0.1:6379: connection refused")

func (d *downLedger) Take(_ context.Context, q LedgerQuery) (LedgerState, error) {
	return d.Read(context.Background(), q)
}

func (d *downLedger) Read(_ context.Context, q LedgerQuery) (LedgerState, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.queries = append(d.queries, q)
	return LedgerState{}, errDown
}

func (d *downLedger) Reject(_ context.Context, pause, halve time.Duration) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.rejects = append(d.rejects, [2]time.Duration{pause, halve})
	return errDown
}

func TestSharedLedgerNotWithAFile(t *testing.T) {
	t.Parallel()
	_, err := New(Config{Limit: 1, LedgerPath: filepath.Join(t.TempDir(), "l"), Shared: &downLedger{}})
	if err == nil {
		t.Fatal("a ledger file and a shared ledger together were accepted")
	}
}

// With its shared ledger unreachable a budget lets nothing through, says
// so, and asks again soon; its own 429 pause and halving go with every
// question and to the other replicas.
func TestSharedLedgerUnreachable(t *testing.T) {
	t.Parallel()
	clock := tu.NewClock(t0)
	d := &downLedger{}
	b, err := New(Config{Limit: 10, Now: clock.Now, Shared: d})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Wait(context.Background()); !errors.Is(err, ErrLedgerUnavailable) || !errors.Is(err, errDown) {
		t.Fatalf("Wait: %v", err)
	}
	if b.TryTake() || b.Free() != 0 || b.Spent() != 0 {
		t.Error("an unreachable ledger let a request through")
	}
	if got := b.NextFree(1); !got.Equal(t0.Add(5 * time.Second)) {
		t.Errorf("NextFree: %s after now, want 5s", got.Sub(t0))
	}
	b.Rejected(0)
	if len(d.rejects) != 1 || d.rejects[0] != [2]time.Duration{time.Minute, time.Hour} {
		t.Errorf("rejects told: %v", d.rejects)
	}
	_ = b.Free()
	q := d.queries[len(d.queries)-1]
	if q.Limit != 10 || q.Hold != time.Hour+36*time.Second || q.PausedFor != time.Minute || q.HalvedFor != time.Hour {
		t.Errorf("query after a 429: %+v", q)
	}
	if st := b.State(); st.PausedUntil != t0.Add(time.Minute) || st.Effective != 5 || st.Rejections != 1 {
		t.Errorf("State without the ledger: %+v", st)
	}
}
