package tracker

import (
	"fmt"
	"maps"

	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

// loaded is what the engine's load needs of a kind's followed operation
// read from the state.
type loaded interface {
	idemKey() (project, key string)
	// requestHashOf is the hash of the request that started it.
	requestHashOf() string
}

// kindLoad declares how a kind's records and intents are read from the
// state at a start or a reload (kindEngine.load): the same for every kind.
type kindLoad[E loaded, I pending] struct {
	// what names a record, whatIntent an intent, in logs and errors.
	what, whatIntent string
	bucket           string
	intents          intentKind[I]
	decode           func(data []byte) (E, error)
	decodeIntent     func(data []byte) (I, error)
	// ref is the key reference of the record at key; refersTo reports
	// whether a key reference is to a record of the kind (its key, "" if
	// none).
	ref      func(key string) keyRef
	recordOf func(ref keyRef) string
	// into is the tracker's map the records merge into; logKeys name the
	// counts of records and intents in the load's log line.
	into    func() map[string]E
	logKeys [2]string
}

// loadOf reads a kind's records and intents of the projects want accepts:
// their idempotency keys into l.keys, and the intents whose operation is
// in the state (a later write landed without deleting them) into
// l.resolved; everything is read before anything merges.
func loadOf[E loaded, I pending](s *Tracker, l *loadedState, want func(string) bool, d kindLoad[E, I]) (loadedKind, error) {
	records, intents := map[string]E{}, map[string]I{}
	err := s.store.ForEachIn(d.bucket, func(key, v []byte) error {
		e, err := d.decode(v)
		if err != nil {
			s.skipUnreadable(l, d.what, key, err)
			return nil
		}
		project, idem := e.idemKey()
		if !want(project) {
			l.foreign++
			return nil
		}
		records[string(key)] = e
		if idem != "" {
			l.keys[storeKey(project, idem)] = d.ref(string(key))
		}
		return nil
	})
	if err == nil {
		err = s.store.ForEachIn(d.intents.bucket, func(key, v []byte) error {
			in, err := d.decodeIntent(v)
			if err != nil {
				s.skipUnreadable(l, d.whatIntent, key, err)
				return nil
			}
			if !want(in.intentProject()) {
				return nil
			}
			if rec := d.recordOf(l.keys[storeKey(in.intentProject(), in.intentKey())]); in.intentKey() != "" && rec != "" &&
				records[rec].requestHashOf() == in.requestHash() {
				l.resolved = append(l.resolved, store.Op{Bucket: d.intents.bucket, Key: string(key)})
				return nil
			}
			intents[string(key)] = in
			return nil
		})
	}
	if err != nil {
		return loadedKind{}, fmt.Errorf("agent state file %s: reading %s: %w", s.store.Path(), d.what, err)
	}
	return loadedKind{
		mergeLocked: func() {
			maps.Copy(d.into(), records)
			for key, in := range intents {
				addIntentLocked(s, d.intents, key, in)
			}
		},
		logKV: []any{d.logKeys[0], len(records), d.logKeys[1], len(intents)},
	}, nil
}

func (e *deployEntry) requestHashOf() string { return e.rec.RequestHash }
func (e *exportEntry) requestHashOf() string { return e.rec.RequestHash }
