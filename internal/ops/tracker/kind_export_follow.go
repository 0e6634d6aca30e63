package tracker

import (
	"context"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
)

// Following static exports: handing one over by its job id, reading
// those followed (the engine's opKind), and their bundles.

// TrackExport follows an export started elsewhere (its job id handed
// over) after one read upstream with project's organization's key. One
// final when first seen is kept, not counted. One followed already is
// returned as it is, AlreadyTracked, without asking upstream.
func (s *Tracker) TrackExport(ctx context.Context, project, id string) (ExportView, TrackResult, error) {
	return s.exportOps.track(ctx, project, id, exportRecord{ID: id}, seenAfterTheFact)
}

// Export returns project's followed export with job id id.
func (s *Tracker) Export(project, id string) (ExportView, bool) {
	return s.exportOps.one(storeKey(project, id))
}

// Exports lists a project's followed exports, newest first.
func (s *Tracker) Exports(project string) []ExportView { return s.exportOps.list(project) }

// BundleExport asks the API for the bundle of project's export id (a 409
// until it is completed, passed through as the API's error). The bundle's
// URL is handed back to the caller only: what is kept of it, and shown on
// the status page, is when it expires.
func (s *Tracker) BundleExport(ctx context.Context, project, id string) (apiclient.StaticExportBundle, error) {
	s.inflight.Add(1)
	defer s.inflight.Done()
	if !s.exportOps.on() {
		return apiclient.StaticExportBundle{}, s.exportOps.off()
	}
	if err := bounded.CheckID("job id", id); err != nil {
		return apiclient.StaticExportBundle{}, &BadIDError{Err: err}
	}
	b, err := s.exportAPI.BundleStaticExport(ctx, project, id)
	if err != nil || b.ExpiresAt.IsZero() {
		return b, err
	}
	xkey := storeKey(project, id)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	e := lockFollowed(s, s.exports, xkey)
	if e == nil {
		return b, nil
	}
	rec := e.rec
	rec.BundleExpiresAt = b.ExpiresAt.UTC()
	s.mu.Unlock()
	if s.exportOps.persist(xkey, &rec) == nil {
		s.mu.Lock()
		e.rec.BundleExpiresAt = rec.BundleExpiresAt
		s.mu.Unlock()
	}
	return b, nil
}
