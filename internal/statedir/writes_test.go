package statedir

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestAWriteInTimeReturnsItsError(t *testing.T) {
	w := Writes{Timeout: time.Minute}
	want := errors.New("disk full")
	if err := w.Do(func() error { return want }); !errors.Is(err, want) {
		t.Fatalf("Do = %v, want the write's own error", err)
	}
	if err := w.Do(func() error { return nil }); err != nil {
		t.Fatalf("Do = %v, want nil", err)
	}
	if w.Stalled() || !w.Idle() {
		t.Fatal("stalled or busy after writes that returned")
	}
}

// A blocked write gives up after the timeout, refuses the next at once
// without running it, keeps Idle from waiting forever, and clears once the
// disk returns. In a synctest bubble: the timeouts pass on its clock.
func TestABlockedWriteIsBounded(t *testing.T) {
	synctest.Test(t, testABlockedWriteIsBounded)
}

func testABlockedWriteIsBounded(t *testing.T) {
	const bound = 5 * time.Second
	w := Writes{Timeout: bound}
	start := time.Now()
	thaw := make(chan struct{})
	var timeout *TimeoutError
	if err := w.Do(func() error { <-thaw; return nil }); !errors.As(err, &timeout) || timeout.Earlier {
		t.Fatalf("Do on a blocked write = %v, want a *TimeoutError of its own", err)
	}
	if d := time.Since(start); d != bound {
		t.Errorf("the blocked write was given up after %s, want %s", d, bound)
	}
	if !w.Stalled() {
		t.Fatal("not stalled while a write is blocked")
	}
	start = time.Now()
	ran := false
	if err := w.Do(func() error { ran = true; return nil }); !errors.As(err, &timeout) || !timeout.Earlier {
		t.Fatalf("Do behind a blocked write = %v, want a *TimeoutError naming the earlier write", err)
	}
	if ran {
		t.Fatal("a write was started behind a blocked one")
	}
	if d := time.Since(start); d != 0 {
		t.Errorf("the refusal took %s, want none", d)
	}
	if w.Idle() {
		t.Fatal("Idle while a write is blocked")
	}
	close(thaw)
	synctest.Wait() // the blocked write returns
	if w.Stalled() || !w.Idle() {
		t.Fatal("still stalled after the blocked write returned")
	}
	if err := w.Do(func() error { return nil }); err != nil {
		t.Fatalf("Do after the thaw = %v", err)
	}
}

// Without a Timeout, Do waits for the write however long it takes: an hour
// of the bubble's clock.
func TestNoTimeoutWaitsForTheWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var w Writes
		start := time.Now()
		if err := w.Do(func() error { <-time.After(time.Hour); return nil }); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != time.Hour {
			t.Fatalf("Do returned after %s, want the write's hour", took)
		}
		if !w.Idle() {
			t.Fatal("not idle")
		}
	})
}
