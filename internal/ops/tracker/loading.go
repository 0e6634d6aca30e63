package tracker

import (
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

// load reads the kind's records and intents of the projects want accepts
// from the state (kindEngine.load): their idempotency keys into l.keys,
// and the intents whose operation is in the state (a later write landed
// without deleting them) into l.resolved; everything is read before
// anything merges.
func (k *opKind[R, P, V, I]) load(l *loadedState, want func(project string) bool, _ time.Time) (loadedKind, error) {
	s := k.s
	records, intents := map[string]*followed[R]{}, map[string]I{}
	err := s.store.ForEachIn(k.bucket, func(key, v []byte) error {
		rec, err := k.decode(v)
		if err != nil {
			s.skipUnreadable(l, k.what, key, err)
			return nil
		}
		op := k.op(&rec)
		if !want(op.Project) {
			l.foreign++
			return nil
		}
		op.Status = intern(op.Status)
		records[string(key)] = &followed[R]{rec: rec}
		if op.IdemKey != "" {
			l.keys[storeKey(op.Project, op.IdemKey)] = k.ref(string(key))
		}
		return nil
	})
	if err == nil {
		err = s.store.ForEachIn(k.intents.bucket, func(key, v []byte) error {
			in, err := k.decodeIntent(v)
			if err != nil {
				s.skipUnreadable(l, k.what+" intent", key, err)
				return nil
			}
			if !want(in.intentProject()) {
				return nil
			}
			if rec := records[k.recordOf(l.keys[storeKey(in.intentProject(), in.intentKey())])]; in.intentKey() != "" && rec != nil &&
				k.op(&rec.rec).RequestHash == in.requestHash() {
				l.resolved = append(l.resolved, store.Op{Bucket: k.intents.bucket, Key: string(key)})
				return nil
			}
			intents[string(key)] = in
			return nil
		})
	}
	if err != nil {
		return loadedKind{}, fmt.Errorf("agent state file %s: reading %ss: %w", s.store.Path(), k.what, err)
	}
	return loadedKind{
		mergeLocked: func() {
			maps.Copy(k.records, records)
			for key, in := range intents {
				addIntentLocked(s, k.intents, key, in)
			}
		},
		logKV: []any{k.name + "s", len(records), "unknown_" + strings.ReplaceAll(k.intents.what, " ", "_") + "s", len(intents)},
	}, nil
}
