package budget_test

import (
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/budget"
)

func TestLogTakeReleaseSeed(t *testing.T) {
	t0 := time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC)
	l := &budget.Log{Hold: time.Hour}
	for i := range 3 {
		if ok, _ := l.Take(t0.Add(time.Duration(i)*time.Minute), 3); !ok {
			t.Fatalf("take %d refused under the limit", i)
		}
	}
	ok, next := l.Take(t0.Add(10*time.Minute), 3)
	if ok || !next.Equal(t0.Add(time.Hour)) {
		t.Fatalf("full log: Take = %v, %v; want false, the first send's hour %v", ok, next, t0.Add(time.Hour))
	}
	// A send leaves exactly Hold after it was made.
	if n := l.Len(t0.Add(time.Hour - time.Nanosecond)); n != 3 {
		t.Errorf("Len just before the first send leaves = %d, want 3", n)
	}
	if n := l.Len(t0.Add(time.Hour)); n != 2 {
		t.Errorf("Len when the first send leaves = %d, want 2", n)
	}
	// Release gives back one send of that time, not all.
	l.Release(t0.Add(2 * time.Minute))
	if n := l.Len(t0.Add(time.Hour)); n != 1 {
		t.Errorf("Len after a release = %d, want 1", n)
	}
	// Seed: out of order, one too old to count.
	l.Seed(t0.Add(time.Hour), t0.Add(30*time.Minute), t0.Add(-time.Minute), t0.Add(5*time.Minute))
	if got := l.Times(); len(got) != 3 || !got[0].Equal(t0.Add(time.Minute)) || !got[1].Equal(t0.Add(5*time.Minute)) || !got[2].Equal(t0.Add(30*time.Minute)) {
		t.Errorf("Times after Seed = %v, want 9:01, 9:05, 9:30", got)
	}
	now := t0.Add(time.Hour)
	for _, c := range []struct {
		limit, n int
		want     time.Time
	}{
		{5, 1, now},                             // 3 of 5 taken: room now
		{5, 2, now},                             // exactly room for 2
		{5, 3, t0.Add(time.Hour + time.Minute)}, // one must leave first
		{3, 1, t0.Add(time.Hour + time.Minute)},
		{3, 9, t0.Add(time.Hour + 30*time.Minute)}, // more than the limit: the whole limit
	} {
		if got := l.NextFree(now, c.limit, c.n); !got.Equal(c.want) {
			t.Errorf("NextFree(limit %d, n %d) = %v, want %v", c.limit, c.n, got, c.want)
		}
	}
}
