package tracker

import (
	"time"

	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

// expiring is what the engine's retention needs of a kind's followed
// operation.
type expiring interface {
	// expiredBy: final (or lost) for retention or longer at now.
	expiredBy(now time.Time, retention time.Duration) bool
	// idemKey is its project and Idempotency-Key ("" without one).
	idemKey() (project, key string)
}

// forgetExpiredOf deletes a kind's operations of records (in bucket)
// final for longer than Retention, and its intents (k) as old: from the
// state first, then from memory, with the Idempotency-Keys that refer to
// them (owns). what names them in the log.
func forgetExpiredOf[E expiring, I pending](s *Tracker, records map[string]E, bucket string, k intentKind[I],
	owns func(ref keyRef, key string) bool, what string, now time.Time) {
	var ops []store.Op
	s.mu.RLock()
	for key, e := range records {
		if e.expiredBy(now, s.cfg.Retention) {
			ops = append(ops, store.Op{Bucket: bucket, Key: key})
		}
	}
	for key, in := range k.all(s) {
		if !in.sending() && now.Sub(in.intentStart()) >= s.cfg.Retention {
			ops = append(ops, store.Op{Bucket: k.bucket, Key: key})
		}
	}
	s.mu.RUnlock()
	if len(ops) == 0 {
		return
	}
	if err := s.store.Apply(ops...); err != nil {
		s.writeFailed(err)
		level.Error(s.logger).Log("msg", "could not forget expired "+what, "records", len(ops), "err", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, op := range ops {
		if op.Bucket == k.bucket {
			if in, ok := k.all(s)[op.Key]; ok {
				removeIntentLocked(s, k, op.Key, in)
			}
			continue
		}
		if e, ok := records[op.Key]; ok {
			if project, key := e.idemKey(); key != "" && owns(s.keys[storeKey(project, key)], op.Key) {
				delete(s.keys, storeKey(project, key))
			}
		}
		delete(records, op.Key)
	}
}

func (e *deployEntry) expiredBy(now time.Time, retention time.Duration) bool {
	return e.rec.final() && !e.rec.TerminalAt.IsZero() && now.Sub(e.rec.TerminalAt) >= retention
}

func (e *deployEntry) idemKey() (string, string) { return e.rec.Project, e.rec.IdemKey }

func (e *exportEntry) expiredBy(now time.Time, retention time.Duration) bool {
	return e.rec.final() && !e.rec.TerminalAt.IsZero() && now.Sub(e.rec.TerminalAt) >= retention
}

func (e *exportEntry) idemKey() (string, string) { return e.rec.Project, e.rec.IdemKey }
