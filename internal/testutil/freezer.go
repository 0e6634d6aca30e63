package testutil

import "sync"

// Freezer plays a frozen filesystem for code with a write hook (the agent
// state store's BeforeCommit): while frozen, Hook blocks until Thaw.
type Freezer struct {
	mu     sync.Mutex
	frozen chan struct{} // nil when thawed
}

// Hook blocks while f is frozen.
func (f *Freezer) Hook() {
	f.mu.Lock()
	c := f.frozen
	f.mu.Unlock()
	if c != nil {
		<-c
	}
}

// Freeze makes Hook block.
func (f *Freezer) Freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.frozen == nil {
		f.frozen = make(chan struct{})
	}
}

// Thaw releases every blocked Hook.
func (f *Freezer) Thaw() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.frozen != nil {
		close(f.frozen)
		f.frozen = nil
	}
}
