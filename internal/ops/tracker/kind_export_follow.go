package tracker

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

// Following static exports: handing one over by its job id, reading them,
// their bundles, and writing them to the state.

// TrackExport follows an export started elsewhere (its job id handed
// over) after one read upstream with project's organization's key. One
// final when first seen is kept, not counted. One followed already is
// returned as it is, AlreadyTracked, without asking upstream.
func (s *Tracker) TrackExport(ctx context.Context, project, id string) (ExportView, TrackResult, error) {
	return s.trackExport(ctx, project, id, seenAfterTheFact)
}

// trackExport is TrackExport; how is seenLive for an export started
// through the gateway and never counted (ResolveExport, a handover).
func (s *Tracker) trackExport(ctx context.Context, project, id string, how sighting) (ExportView, TrackResult, error) {
	s.inflight.Add(1)
	defer s.inflight.Done()
	if s.exportAPI == nil {
		return ExportView{}, NewlyTracked, errNoExports
	}
	if err := bounded.CheckID("job id", id); err != nil {
		return ExportView{}, NewlyTracked, &BadIDError{Err: err}
	}
	xkey := storeKey(project, id)
	if v, ok := s.followedExport(xkey); ok {
		return v, AlreadyTracked, nil
	}
	j, err := readOnce(s.exportAPI.ThrottledUntil, apiclient.EndpointStaticExportStatus, "static export "+id+" of project "+project,
		func() (apiclient.StaticExportJob, error) { return s.exportAPI.GetStaticExport(ctx, project, id) })
	if err != nil {
		return ExportView{}, NewlyTracked, err
	}
	at := s.cfg.Now()
	rec, ev := exportTransition(exportRecord{Project: project, ID: id, Origin: OriginTrack, TrackedAt: at, opState: opState{SubmittedBy: userFrom(ctx)}}, &j, at, how)
	e := &exportEntry{rec: rec, polling: polling{lastPolled: at, pollPending: true}}
	e.nextPoll = s.nextExportPoll(&rec, at)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	if old := s.exports[xkey]; old != nil {
		v := old.view()
		s.mu.Unlock()
		return v, AlreadyTracked, nil
	}
	s.exports[xkey] = e
	s.mu.Unlock()
	perr := s.persistExport(xkey, &rec)
	s.mu.Lock()
	defer s.mu.Unlock()
	e.pollPending = false
	e.written(perr)
	if perr != nil {
		return e.view(), NewlyTracked, &StateError{JobID: id, Err: perr, Export: true}
	}
	s.metrics.export.count(s.metrics.has, rec.Project, ev)
	return e.view(), NewlyTracked, nil
}

// followedExport is the view of the export at xkey, if followed.
func (s *Tracker) followedExport(xkey string) (ExportView, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if e := s.exports[xkey]; e != nil {
		return e.view(), true
	}
	return ExportView{}, false
}

// Export returns project's followed export with job id id.
func (s *Tracker) Export(project, id string) (ExportView, bool) {
	return s.followedExport(storeKey(project, id))
}

// Exports lists a project's followed exports, newest first.
func (s *Tracker) Exports(project string) []ExportView {
	s.mu.RLock()
	out := []ExportView{}
	for _, e := range s.exports {
		if e.rec.Project == project {
			out = append(out, e.view())
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b ExportView) int {
		return cmp.Or(b.Tracking.TrackedAt.Compare(a.Tracking.TrackedAt), strings.Compare(b.JobID, a.JobID))
	})
	return out
}

// BundleExport asks the API for the bundle of project's export id (a 409
// until it is completed, passed through as the API's error). The bundle's
// URL is handed back to the caller only: what is kept of it, and shown on
// the status page, is when it expires.
func (s *Tracker) BundleExport(ctx context.Context, project, id string) (apiclient.StaticExportBundle, error) {
	s.inflight.Add(1)
	defer s.inflight.Done()
	if s.exportAPI == nil {
		return apiclient.StaticExportBundle{}, errNoExports
	}
	if err := bounded.CheckID("job id", id); err != nil {
		return apiclient.StaticExportBundle{}, &BadIDError{Err: err}
	}
	b, err := s.exportAPI.BundleStaticExport(ctx, project, id)
	if err != nil {
		return b, err
	}
	xkey := storeKey(project, id)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	e := lockFollowed(s, s.exports, xkey)
	if e == nil || b.ExpiresAt.IsZero() {
		if e != nil {
			s.mu.Unlock()
		}
		return b, nil
	}
	rec := e.rec
	rec.BundleExpiresAt = b.ExpiresAt.UTC()
	s.mu.Unlock()
	if s.persistExport(xkey, &rec) == nil {
		s.mu.Lock()
		e.rec.BundleExpiresAt = rec.BundleExpiresAt
		s.mu.Unlock()
	}
	return b, nil
}

// persistExport writes rec durably, with extra in the same transaction.
func (s *Tracker) persistExport(key string, rec *exportRecord, extra ...store.Op) error {
	data, err := encodeExportRecord(rec)
	if err == nil {
		err = s.store.Apply(append([]store.Op{{Bucket: bucketExports, Key: key, Value: data}}, extra...)...)
	}
	if err != nil {
		s.writeFailed(err)
		level.Error(s.logger).Log("msg", "could not write a static export to the state", "project", rec.Project, "export", rec.ID, "err", err)
	}
	return err
}
