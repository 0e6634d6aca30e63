package tracker

import (
	"time"

	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

// forgetExpired deletes the kind's operations final (or lost) for longer
// than Retention, and its intents as old: from the state first, then from
// memory, with the Idempotency-Keys that refer to them (kindEngine).
func (k *opKind[R, P, V, I]) forgetExpired(now time.Time) {
	s := k.s
	var ops []store.Op
	s.mu.RLock()
	for key, e := range k.records {
		if op := k.op(&e.rec); k.final(&e.rec) && !op.TerminalAt.IsZero() && now.Sub(op.TerminalAt) >= s.cfg.Retention {
			ops = append(ops, store.Op{Bucket: k.bucket, Key: key})
		}
	}
	for key, in := range k.intents.all(s) {
		if !in.sending() && now.Sub(in.intentStart()) >= s.cfg.Retention {
			ops = append(ops, store.Op{Bucket: k.intents.bucket, Key: key})
		}
	}
	s.mu.RUnlock()
	if len(ops) == 0 {
		return
	}
	if err := s.store.Apply(ops...); err != nil {
		s.writeFailed(err)
		level.Error(s.logger).Log("msg", "could not forget expired "+k.what+"s", "records", len(ops), "err", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, op := range ops {
		if op.Bucket == k.intents.bucket {
			if in, ok := k.intents.all(s)[op.Key]; ok {
				removeIntentLocked(s, k.intents, op.Key, in)
			}
			continue
		}
		if e, ok := k.records[op.Key]; ok {
			r := k.op(&e.rec)
			if sk := storeKey(r.Project, r.IdemKey); r.IdemKey != "" && k.recordOf(s.keys[sk]) == op.Key {
				delete(s.keys, sk)
			}
		}
		delete(k.records, op.Key)
	}
}
