package tracker

import (
	"context"
	"net/http"
	"time"

	"github.com/go-kit/log/level"

	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

// Static export starts of unknown outcome: listed, settled and dismissed
// through the engine's intents (intents.go), as every kind's.

// UnknownExportStart is a start whose outcome is unknown, as listed to
// operators.
type UnknownExportStart struct {
	ID             string    `json:"id"`
	Project        string    `json:"project"`
	Domain         string    `json:"domain"`
	IdempotencyKey string    `json:"idempotencyKey,omitempty"`
	StartedAt      time.Time `json:"startedAt"`
}

// UnknownExportStarts lists project's starts of unknown outcome, oldest
// first.
func (s *Tracker) UnknownExportStarts(project string) []UnknownExportStart {
	return unknownIntents(s, startIntents, project, func(in *exportIntent) UnknownExportStart {
		return UnknownExportStart{ID: in.ID, Project: in.Project, Domain: in.Domain, IdempotencyKey: in.IdempotencyKey, StartedAt: in.StartedAt}
	})
}

// DismissExportStart deletes a start of unknown outcome: no export was
// started (or the operator gives it up). Its Idempotency-Key is free.
func (s *Tracker) DismissExportStart(project, id string) error {
	return dismissIntent(s, startIntents, project, id)
}

// ResolveExportStart settles a start of unknown outcome with the export it
// started (jobID): followed and counted as one started here, given the
// start's Idempotency-Key, the intent deleted in the same write.
func (s *Tracker) ResolveExportStart(ctx context.Context, project, intentID, jobID string) (ExportView, TrackResult, error) {
	follow := func(*exportIntent) (ExportView, TrackResult, error) {
		return s.trackExport(ctx, project, jobID, seenLive)
	}
	return settleIntent(s, startIntents, project, intentID, follow, func(ikey string, in *exportIntent) (ExportView, error) {
		return s.adoptStartKey(ikey, in, jobID)
	})
}

// adoptStartKey gives the followed export jobID the start's key and
// writes it with the intent's deletion. s.wmu is held.
func (s *Tracker) adoptStartKey(ikey string, in *exportIntent, jobID string) (ExportView, error) {
	xkey := storeKey(in.Project, jobID)
	e := lockFollowed(s, s.exports, xkey)
	if e == nil {
		return ExportView{}, errOtherKey("static export", jobID)
	}
	rec := e.rec
	if rec.IdemKey != "" && rec.IdemKey != in.IdempotencyKey {
		s.mu.Unlock()
		return ExportView{}, errOtherKey("static export", jobID)
	}
	rec.IdemKey, rec.RequestHash, rec.Domain = in.IdempotencyKey, in.RequestHash, in.Domain
	rec.Code = max(rec.Code, http.StatusAccepted)
	s.mu.Unlock()
	if err := s.persistExport(xkey, &rec, store.Op{Bucket: bucketExportIntents, Key: ikey}); err != nil {
		return ExportView{}, &StateError{JobID: jobID, Err: err, Export: true}
	}
	s.mu.Lock()
	e.rec.IdemKey, e.rec.RequestHash, e.rec.Domain, e.rec.Code = rec.IdemKey, rec.RequestHash, rec.Domain, rec.Code
	settledLocked(s, startIntents, ikey, in, in.Project, rec.IdemKey, keyRef{export: xkey})
	v := e.view()
	s.mu.Unlock()
	level.Info(s.logger).Log("msg", "static export start of unknown outcome resolved", "project", in.Project, "intent", in.ID, "export", jobID)
	return v, nil
}
