package collector

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/sources"
)

// memStore is an EncodedStore in memory.
type memStore struct {
	mu    sync.Mutex
	files map[string][]byte
	saves int
}

func newMemStore() *memStore { return &memStore{files: map[string][]byte{}} }

func (m *memStore) Load(name string) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return bytes.Clone(m.files[name])
}

func (m *memStore) Save(_ context.Context, name string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.files[name] = bytes.Clone(data)
	m.saves++
	return nil
}

func (m *memStore) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.files, name)
	return nil
}

func (m *memStore) Keep(keep []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name := range m.files {
		if !slices.Contains(keep, name) {
			delete(m.files, name)
		}
	}
	return nil
}

func (m *memStore) names() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.files))
}

func (m *memStore) saved() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.saves
}

func (m *memStore) edit(name string, f func([]byte) []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.files[name] = f(m.files[name])
}

// runStored runs p's encoder on store until it has want files, then stops it.
func runStored(t *testing.T, p *pair, store *memStore, want int) {
	t.Helper()
	p.enc.SetStore(store)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.enc.Run(ctx, 5*time.Millisecond) }()
	defer func() { cancel(); <-done }()
	for deadline := time.Now().Add(10 * time.Second); len(store.names()) != want; {
		if time.Now().After(deadline) {
			t.Fatalf("the store holds %d files, want %d", len(store.names()), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// storedViews counts the entries of p's encoder served from the store.
func storedViews(p *pair) (stored, all int) {
	p.enc.mu.Lock()
	defer p.enc.mu.Unlock()
	for _, v := range p.enc.entries {
		all++
		c := &v.enc[storedEncoding.Index()]
		if v.stored && c.built.Load() && c.level == 0 {
			stored++
		}
	}
	return stored, all
}

// TestStoredChunksAfterRestart: Run keeps each snapshot's gzipped
// OpenMetrics chunks in the store; the next start's Prime serves them as
// they are, the same series as the registry's, and encodes only what the
// store does not hold good: another walk's snapshot, a file cut short (the
// store vouches for its files: a damaged one it does not hand over), a
// file of a build that encodes otherwise.
func TestStoredChunksAfterRestart(t *testing.T) {
	h := newHarness(t, harnessOptions{fake: fakeapi.Options{Paths: 300}})
	a, b := h.walk(walkSpec{}), h.walk(walkSpec{window: days7})
	c := h.walk(walkSpec{source: sources.NameSearches})
	h.views.set(a, b, c)
	first := newPair(h.views)
	store := newMemStore()
	runStored(t, first, store, 3)
	want := first.enc.Bytes()[storedEncoding.Index()]

	restarted := newPair(h.views)
	restarted.enc.SetStore(store)
	restarted.enc.Prime()
	if stored, all := storedViews(restarted); stored != 3 || all != 3 {
		t.Fatalf("%d of %d snapshots served from the store, want 3 of 3", stored, all)
	}
	if got := restarted.enc.Bytes()[storedEncoding.Index()]; got != want {
		t.Errorf("restored %d bytes of chunks, the first run encoded %d", got, want)
	}
	restarted.compare(t, "restored from the store")

	// Another walk of a (later), b's file cut short, and c's of a build
	// that encodes otherwise: each encoded again.
	h.clock.Advance(time.Minute)
	a2 := h.walk(walkSpec{})
	h.views.set(a2, b, c)
	for _, v := range []sources.View{b, c} {
		name := storedKey(viewKey{v.Project, v.Source, v.Window, v.Scope})
		store.edit(name, func(data []byte) []byte {
			if v == c {
				return bytes.Replace(data, []byte(storedFingerprint), []byte(strings.Repeat("0", len(storedFingerprint))), 1)
			}
			return data[:len(data)-10]
		})
	}
	again := newPair(h.views)
	again.enc.SetStore(store)
	again.enc.Prime()
	if stored, all := storedViews(again); stored != 0 || all != 3 {
		t.Errorf("%d of %d snapshots served from the store, want 0 of 3", stored, all)
	}
	again.compare(t, "encoded again")

	// Run deletes the files of snapshots no longer served (c's), and
	// stores the encodings of new walks, not those Prime made at its
	// faster level (they are until the next walk).
	h.clock.Advance(time.Minute)
	a3, b3 := h.walk(walkSpec{}), h.walk(walkSpec{window: days7})
	h.views.set(a2, b)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); again.enc.Run(ctx, 5*time.Millisecond) }()
	for deadline := time.Now().Add(10 * time.Second); len(store.names()) != 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the store holds %d files, want 2", len(store.names()))
		}
	}
	saves := store.saved()
	h.views.set(a3, b3)
	for deadline := time.Now().Add(10 * time.Second); store.saved() < saves+2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the new walks' encodings were not stored")
		}
	}
	cancel()
	<-done
	last := newPair(h.views)
	last.enc.SetStore(store)
	last.enc.Prime()
	if stored, all := storedViews(last); stored != 2 || all != 2 {
		t.Errorf("%d of %d snapshots served from the store, want 2 of 2", stored, all)
	}
	last.compare(t, "restored again")
}
