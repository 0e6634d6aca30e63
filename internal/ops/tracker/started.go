package tracker

import (
	"errors"

	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

// followedEntry is what the engine needs of a kind's followed operation in
// memory: its view (V) and its polling state.
type followedEntry[V any] interface {
	view() V
	pollState() *polling
}

// startedOp is an operation the API just acknowledged as started, for
// followStarted: its entry (e) under key in records, its intent (in under
// ikey, of kind k), how to write it with extra ops in the same
// transaction, the error of a failed write, and the key reference its
// Idempotency-Key (idemKey) takes.
type startedOp[E followedEntry[V], V any, I pending] struct {
	records  map[string]E
	key      string
	e        E
	k        intentKind[I]
	in       I
	ikey     string
	idemKey  string
	persist  func(extra ...store.Op) error
	stateErr func(err error) error
	ref      keyRef
}

// followStarted is the second half of a start of any kind that the API
// acknowledged: the operation is written with its intent's deletion (one
// transaction) and followed from the next round (one followed already,
// handed over while the start was answered, is kept); the intent leaves
// memory, and the Idempotency-Key refers to the operation, also when its
// write failed (a retry is answered as this start was, never sent again).
func followStarted[E followedEntry[V], V any, I pending](s *Tracker, op startedOp[E, V, I]) (V, error) {
	v, err := writeStarted(s, op)
	s.mu.Lock()
	removeIntentLocked(s, op.k, op.ikey, op.in)
	var stateErr *StateError
	if op.idemKey != "" && (err == nil || errors.As(err, &stateErr)) {
		s.keys[storeKey(op.in.intentProject(), op.idemKey)] = op.ref
	}
	s.mu.Unlock()
	return v, err
}

func writeStarted[E followedEntry[V], V any, I pending](s *Tracker, op startedOp[E, V, I]) (V, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	if old, ok := op.records[op.key]; ok {
		v := old.view()
		s.mu.Unlock()
		return v, nil
	}
	p := op.e.pollState()
	p.pollPending = true
	op.records[op.key] = op.e
	s.mu.Unlock()
	err := op.persist(store.Op{Bucket: op.k.bucket, Key: op.ikey})
	s.mu.Lock()
	defer s.mu.Unlock()
	p.pollPending, p.intentKey = false, op.ikey
	p.written(err)
	if err != nil {
		return op.e.view(), op.stateErr(err)
	}
	return op.e.view(), nil
}

func (e *deployEntry) pollState() *polling { return &e.polling }
func (e *exportEntry) pollState() *polling { return &e.polling }
