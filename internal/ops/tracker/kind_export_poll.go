package tracker

import (
	"cmp"
	"context"
	"time"

	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

// exportTransition is the record after reading j at at, and what to
// count: a final status is counted once, when seen live.
func exportTransition(old exportRecord, j *apiclient.StaticExportJob, at time.Time, how sighting) (exportRecord, finishEvent) {
	rec := old
	rec.Status = intern(bounded.Label(j.Status))
	rec.Progress, rec.Pages = j.Progress, j.PageCount
	if !j.CreatedAt.IsZero() {
		rec.CreatedAt = j.CreatedAt.UTC()
	}
	if !j.UpdatedAt.IsZero() {
		rec.UpdatedAt = j.UpdatedAt.UTC()
	}
	rec.Error = bounded.Text(j.Error)
	rec.Lost = false
	ev := rec.sawFinal(apiclient.IsStaticExportFinal(rec.Status), rec.Status, at, how)
	if ev.finished != "" && !rec.CreatedAt.IsZero() {
		// From createdAt to its last updatedAt (else when seen final).
		ev.observeDur, ev.duration = true, cmp.Or(rec.UpdatedAt, at).Sub(rec.CreatedAt)
	}
	return rec, ev
}

// exportKind is the static exports' part of the engine (kindEngine).
type exportKind struct{ s *Tracker }

// The export kind's part of the round, in the engine's shared parts:
// which are due (every poll interval while running; none without the
// endpoints), their polling state, the read endpoint's pause, one read and
// how to apply it or its failure, and retention.
func (k exportKind) pollingLocked(key string) *polling { return pollingOf(k.s.exports, key) }
func (k exportKind) forgetExpired(now time.Time)       { k.s.forgetExpiredExports(now) }
func (k exportKind) applyError(t pollTask, err error, at time.Time) {
	k.s.applyExportError(t, err, at)
}
func (k exportKind) throttledUntil() time.Time {
	return k.s.exportAPI.ThrottledUntil(apiclient.EndpointStaticExportStatus)
}
func (k exportKind) dueLocked(_, limit time.Time) []pollTask {
	if k.s.exportAPI != nil {
		return dueOf(k, k.s.exports, limit)
	}
	return nil
}
func (k exportKind) read(ctx context.Context, t pollTask) (func(at, roundStart time.Time), error) {
	j, err := k.s.exportAPI.GetStaticExport(ctx, t.project, t.id)
	return func(at, _ time.Time) { k.s.applyExport(t, &j, at) }, err
}

// nextExportPoll is when an export read at at is read again: never once
// final, else after the poll interval.
func (s *Tracker) nextExportPoll(r *exportRecord, at time.Time) time.Time {
	if r.final() {
		return time.Time{}
	}
	return at.Add(s.cfg.PollInterval)
}

// applyExport records a successful read. s.wmu is held (pollOne).
func (s *Tracker) applyExport(t pollTask, j *apiclient.StaticExportJob, at time.Time) {
	e := lockFollowed(s, s.exports, t.key)
	if e == nil {
		return
	}
	e.polledOK(at)
	rec, ev := exportTransition(e.rec, j, at, seenLive)
	e.nextPoll = s.nextExportPoll(&rec, at)
	if rec == e.rec && !e.dirty {
		s.mu.Unlock()
		return
	}
	write := func(extra ...store.Op) error { return s.persistExport(t.key, &rec, extra...) }
	if !s.writePolledLocked(&e.polling, bucketExportIntents, write, at.Add(s.cfg.PollInterval)) {
		s.mu.Unlock()
		return
	}
	e.rec, e.dirty = rec, false
	s.metrics.export.count(s.metrics.has, rec.Project, ev) // after the write: a crash under-counts, never twice
	s.mu.Unlock()
	if ev.finished == "" {
		return
	}
	kv := []any{"msg", "static export finished", "project", rec.Project, "export", bounded.Label(rec.ID), "status", ev.finished, "pages", rec.Pages}
	if ev.observeDur {
		kv = append(kv, "duration", ev.duration)
	}
	level.Info(s.logger).Log(kv...)
}

// applyExportError records a failed read: backoff, and lost after
// repeated 404s. s.wmu is held (pollOne).
func (s *Tracker) applyExportError(t pollTask, err error, at time.Time) {
	readFailedOf(s, s.exports, t, err, at, "export", func(e *exportEntry) {
		s.mu.RLock()
		rec := e.rec
		s.mu.RUnlock()
		rec.Lost, rec.TerminalAt = true, at
		if s.persistExport(t.key, &rec) == nil {
			s.mu.Lock()
			e.rec, e.dirty = rec, false
			s.mu.Unlock()
			level.Warn(s.logger).Log("msg", "static export lost: the API no longer knows it", "project", t.project, "export", bounded.Label(t.id))
		}
	})
}

// load reads the exports and their start intents (kindEngine.load,
// through the engine's loadOf).
func (k exportKind) load(l *loadedState, want func(project string) bool, _ time.Time) (loadedKind, error) {
	d := kindLoad[*exportEntry, *exportIntent]{what: "static export", whatIntent: "static export intent", bucket: bucketExports, intents: startIntents}
	d.decode, d.decodeIntent = decodeExportEntry, func(v []byte) (*exportIntent, error) { in, err := decodeExportIntent(v); return &in, err }
	d.ref, d.recordOf = func(key string) keyRef { return keyRef{export: key} }, func(ref keyRef) string { return ref.export }
	d.into, d.logKeys = func() map[string]*exportEntry { return k.s.exports }, [2]string{"static_exports", "unknown_export_starts"}
	return loadOf(k.s, l, want, d)
}

// decodeExportEntry is an export read from the state, as followed.
func decodeExportEntry(v []byte) (*exportEntry, error) {
	rec, err := decodeExportRecord(v)
	rec.Status = intern(rec.Status)
	return &exportEntry{rec: rec}, err
}

// forgetExpiredExports deletes the exports final for longer than
// Retention and the start intents as old (the engine's retention).
func (s *Tracker) forgetExpiredExports(now time.Time) {
	forgetExpiredOf(s, s.exports, bucketExports, startIntents, func(ref keyRef, key string) bool { return ref.export == key }, "static exports", now)
}

// snapshotLocked adds the exports and their starts of unknown outcome to
// the projects of by. s.mu is held.
func (k exportKind) snapshotLocked(by map[string]*projectJobs, now time.Time) {
	for _, in := range k.s.exportIntents {
		if pj := by[in.Project]; pj != nil && !in.inFlight {
			pj.unknownExports++
		}
	}
	for _, e := range k.s.exports {
		pj := by[e.rec.Project]
		if pj == nil {
			continue
		}
		pj.export.add(&e.rec)
		if !e.rec.final() && !e.nextPoll.IsZero() {
			pj.maxOverdue = max(pj.maxOverdue, now.Sub(e.nextPoll))
		}
	}
}
