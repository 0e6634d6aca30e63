// Package statedir holds what every file of the state directory needs
// (the ledger, the operations' state, the analytics snapshots and their
// encodings): writes whose caller a frozen disk cannot hang (Writes), and
// reads that neither a FIFO, a socket, a device nor a huge file can block
// or blow up (Open, ReadDir).
//
// A frozen or hung filesystem blocks write and fsync indefinitely, and a
// request, a refresh or a shutdown waiting on it would hang with it: each
// write runs on a goroutine of its own, and the caller gives up after a
// timeout. A write that outlives it counts as stalled until it returns, and
// makes the writes after it fail at once rather than queue behind it.
package statedir

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Writes runs the writes to one file (or directory). The zero value waits
// forever; set Timeout before the first write. Safe for concurrent use.
type Writes struct {
	// Timeout bounds each write and Idle; 0 waits forever.
	Timeout time.Duration

	mu      sync.Mutex
	running int
	none    chan struct{} // closed when running reaches 0
	stalled atomic.Int64  // writes that outlived Timeout and have not returned
}

// TimeoutError means a write did not finish within Timeout (Earlier false:
// it may still land later), or was not started because an earlier one is
// still blocked (Earlier true).
type TimeoutError struct {
	Timeout time.Duration
	Earlier bool
}

func (e *TimeoutError) Error() string {
	if e.Earlier {
		return fmt.Sprintf("an earlier write has been blocked for more than %s (a frozen or hung filesystem?); not written", e.Timeout)
	}
	return fmt.Sprintf("write did not finish within %s (a frozen or hung filesystem?)", e.Timeout)
}

// Do runs write and returns its error, or a *TimeoutError once Timeout has
// passed or while an earlier write is still blocked.
func (w *Writes) Do(write func() error) error {
	if w.Timeout <= 0 {
		return write()
	}
	if w.Stalled() {
		return &TimeoutError{Timeout: w.Timeout, Earlier: true}
	}
	const (
		running = iota
		finished
		abandoned
	)
	var state atomic.Int32
	done := make(chan error, 1)
	w.add()
	go func() { // owned by w: Idle reports when it has returned
		defer w.done()
		err := write()
		if !state.CompareAndSwap(running, finished) {
			w.stalled.Add(-1) // abandoned by its caller, returned at last
		}
		done <- err
	}()
	t := time.NewTimer(w.Timeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
	}
	w.stalled.Add(1)
	if !state.CompareAndSwap(running, abandoned) {
		w.stalled.Add(-1) // it finished as the timer fired
		return <-done
	}
	return &TimeoutError{Timeout: w.Timeout}
}

// Stalled reports whether a write has outlived Timeout and not returned.
func (w *Writes) Stalled() bool { return w.stalled.Load() > 0 }

// Idle waits until no write is under way, at most Timeout (forever when 0),
// and reports whether none is: a closer gives up on a blocked disk rather
// than hang a shutdown, leaving the file to the process's exit.
func (w *Writes) Idle() bool {
	w.mu.Lock()
	idle := w.none
	if w.running == 0 {
		idle = nil
	}
	w.mu.Unlock()
	if idle == nil {
		return true
	}
	if w.Timeout <= 0 {
		<-idle
		return true
	}
	t := time.NewTimer(w.Timeout)
	defer t.Stop()
	select {
	case <-idle:
		return true
	case <-t.C:
		return false
	}
}

func (w *Writes) add() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.running == 0 {
		w.none = make(chan struct{})
	}
	w.running++
}

func (w *Writes) done() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.running--; w.running == 0 {
		close(w.none)
	}
}
