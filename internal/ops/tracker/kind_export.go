package tracker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

// Static exports are the tracker's third kind of operation (issue 36,
// section 3): an export of a project's documentation, started through the
// gateway (StartExport) or handed over by its job id (TrackExport), followed
// until completed or failed on the engine's poll rounds, intents and
// state. The API is per organization (no project in its paths): the
// gateway scopes each export to a configured project, whose
// organization's key starts and reads it.

// ExportUpstream is the API of static exports, per project (its
// organization's key). An Upstream without it follows no export.
type ExportUpstream interface {
	StartStaticExport(ctx context.Context, project string, req apiclient.StaticExportRequest) (apiclient.StaticExportJob, error)
	GetStaticExport(ctx context.Context, project, jobID string) (apiclient.StaticExportJob, error)
	BundleStaticExport(ctx context.Context, project, jobID string) (apiclient.StaticExportBundle, error)
	ThrottledUntil(endpoint string) time.Time
}

// errNoExports is the error of an export call on a tracker whose upstream
// has no static-export endpoints.
var errNoExports = errors.New("tracker: the upstream has no static export endpoints")

// exportEntry is a followed export in memory.
type exportEntry struct {
	rec exportRecord
	polling
}

// ExportView is a followed export as the gateway shows it: the API's
// field names, plus the domain asked for and the tracking. A bundle's URL
// is never part of it: only the bundle route answers it, to its caller.
type ExportView struct {
	JobID           string            `json:"jobId"`
	ProjectID       string            `json:"projectId"`
	Domain          string            `json:"domain,omitempty"`
	Version         string            `json:"version,omitempty"`
	Status          string            `json:"status"`
	Progress        float64           `json:"progress"`
	PageCount       int64             `json:"pageCount"`
	CreatedAt       apiclient.APITime `json:"createdAt"`
	UpdatedAt       apiclient.APITime `json:"updatedAt"`
	Error           string            `json:"error,omitempty"`
	BundleExpiresAt *time.Time        `json:"bundleExpiresAt,omitempty"`
	Tracking        Followed          `json:"tracking"`
}

func (e *exportEntry) view() ExportView {
	r := &e.rec
	v := ExportView{JobID: r.ID, ProjectID: r.Project, Domain: r.Domain, Version: r.Version, Status: r.Status, Progress: r.Progress,
		PageCount: r.Pages, CreatedAt: apiclient.APITime{Time: r.CreatedAt}, UpdatedAt: apiclient.APITime{Time: r.UpdatedAt}, Error: r.Error,
		Tracking: Followed{Origin: r.Origin, TrackedAt: r.TrackedAt, LastError: e.lastErr, SubmittedBy: r.SubmittedBy}}
	if r.Status == "" {
		v.Status = apiclient.StaticExportQueued
	}
	if r.Lost {
		v.Status, v.Tracking.LastUpstreamStatus = StatusLost, r.Status
	}
	if t := r.BundleExpiresAt; !t.IsZero() {
		v.BundleExpiresAt = &t
	}
	v.Tracking = e.tracking(v.Tracking, r.TerminalAt, r.final())
	return v
}

// ExportRequest is a static export to start.
type ExportRequest struct {
	Project string
	// Body is what is sent (apiclient checks it before sending).
	Body apiclient.StaticExportRequest
	// IdempotencyKey and Admit work as for Deploy.
	IdempotencyKey string
	Admit          func() error
}

// Exported is the answer to a start.
type Exported struct {
	Export   ExportView
	Code     int
	Replayed bool
}

// ExportOutcomeUnknownError: a start was perhaps sent but its answer never
// recorded. Its Idempotency-Key answers 409 until it is settled
// (ResolveExport, DismissExport) or Retention has passed.
type ExportOutcomeUnknownError struct{ UnknownStart }

func (e *ExportOutcomeUnknownError) Error() string {
	return withCause(fmt.Sprintf("the outcome of static export start %s of project %s (started %s) is unknown: an export may have been started upstream; "+
		"with its job id (from the Mintlify dashboard or the API's answer) follow it with POST /api/v1/static-export/%s/jobs/{jobId}/track?intent=%s, "+
		"or if none was started dismiss the start with DELETE /api/v1/static-export/%s/unknown-starts/%s",
		e.Intent, e.Project, e.StartedAt.UTC().Format(time.RFC3339), e.Project, e.Intent, e.Project, e.Intent), e.Err)
}

// StartExport starts a static export upstream and follows it, with the
// engine's guarantees: an intent written before the start leaves, the
// export written (and the intent deleted) before it is acknowledged,
// Idempotency-Key replays, and an outcome unknown listed for an operator.
func (s *Tracker) StartExport(ctx context.Context, req ExportRequest) (Exported, error) {
	s.inflight.Add(1)
	defer s.inflight.Done()
	if s.exportAPI == nil {
		return Exported{}, errNoExports
	}
	if req.Project == "" {
		return Exported{}, errors.New("static export: empty project")
	}
	key := req.IdempotencyKey
	if key != "" && !ValidIdempotencyKey(key) {
		return Exported{}, errors.New("invalid idempotency key: 1 to 255 printable ASCII characters")
	}
	in := &exportIntent{intentV: intentV{ID: "xi_" + strings.TrimPrefix(newIntentID(), "ci_"), Project: req.Project, IdempotencyKey: key,
		RequestHash: exportRequestHash(req.Body), StartedAt: s.cfg.Now()}, Domain: bounded.Label(req.Body.Domain), inFlight: true}
	ikey := storeKey(in.Project, in.ID)
	replay := func(ref keyRef) (Exported, error) { return s.replayExportLocked(ref, in.RequestHash) }
	if x, done, err := openIntent(s, startIntents, ikey, in, req.Admit, replay, s.exportAPI.ThrottledUntil, apiclient.EndpointStartStaticExport); done || err != nil {
		return x, err
	}
	j, err := s.exportAPI.StartStaticExport(ctx, req.Project, req.Body)
	if err = cmp.Or(err, unkeepableID("job id", j.JobID)); err != nil {
		return Exported{}, s.exportNotStarted(req.Project, ikey, in, err)
	}
	return s.followExportStarted(ctx, req, ikey, in, &j)
}

// exportNotStarted is the error of a start that failed once sent: its
// outcome unknown (the intent stays, listed), or nothing was started.
func (s *Tracker) exportNotStarted(project, ikey string, in *exportIntent, err error) error {
	if !sentFailed(s, startIntents, ikey, in, err, "domain", in.Domain) {
		return fmt.Errorf("starting a static export of project %s: %w", project, err)
	}
	return &ExportOutcomeUnknownError{UnknownStart{Project: project, Intent: in.ID, StartedAt: in.StartedAt, Err: err}}
}

// followExportStarted follows the export j the API started for req
// (followStarted).
func (s *Tracker) followExportStarted(ctx context.Context, req ExportRequest, ikey string, in *exportIntent, j *apiclient.StaticExportJob) (Exported, error) {
	at := s.cfg.Now()
	rec, _ := exportTransition(exportRecord{Project: req.Project, ID: j.JobID, Origin: OriginGateway, TrackedAt: at, Domain: in.Domain,
		Version: bounded.Label(req.Body.Version), opState: opState{IdemKey: req.IdempotencyKey, RequestHash: in.RequestHash, Code: j.Code,
			SubmittedBy: userFrom(ctx)}}, j, at, seenLive)
	xkey := storeKey(rec.Project, rec.ID)
	v, err := followStarted(s, startedOp[*exportEntry, ExportView, *exportIntent]{records: s.exports, key: xkey, e: &exportEntry{rec: rec},
		k: startIntents, in: in, ikey: ikey, idemKey: req.IdempotencyKey, ref: keyRef{export: xkey},
		persist:  func(extra ...store.Op) error { return s.persistExport(xkey, &rec, extra...) },
		stateErr: func(err error) error { return &StateError{JobID: rec.ID, Err: err, Intent: ikey, Export: true} }})
	return Exported{Export: v, Code: j.Code}, err
}

// replayExportLocked answers a start whose key is known: through its
// intent, else through its export (the engine's replayIntentLocked and
// replayRecordLocked). s.mu is held.
func (s *Tracker) replayExportLocked(ref keyRef, hash string) (Exported, error) {
	if in := ref.exportIntent; in != nil {
		unknown := &ExportOutcomeUnknownError{UnknownStart{Project: in.Project, Intent: in.ID, StartedAt: in.StartedAt}}
		return Exported{}, replayIntentLocked(in, hash, func() error { return unknown })
	}
	e, mine := s.exports[ref.export], ref.export != ""
	if !mine {
		return Exported{}, ErrIdempotencyKeyReused // another kind's key
	}
	record := func() (string, string) { return e.rec.RequestHash, e.intentKey }
	notWritten := func() error {
		return &StateError{JobID: e.rec.ID, Err: errNotWrittenYet, Intent: e.intentKey, Export: true}
	}
	if err := replayRecordLocked(e != nil, record, hash, notWritten); err != nil {
		return Exported{}, err
	}
	return Exported{Export: e.view(), Code: e.rec.Code, Replayed: true}, nil
}

// oneOrgExports is the API of static exports of one organization (an
// *apiclient.Client): its paths name no project.
type oneOrgExports interface {
	StartStaticExport(ctx context.Context, req apiclient.StaticExportRequest) (apiclient.StaticExportJob, error)
	GetStaticExport(ctx context.Context, jobID string) (apiclient.StaticExportJob, error)
	BundleStaticExport(ctx context.Context, jobID string) (apiclient.StaticExportBundle, error)
	ThrottledUntil(endpoint string) time.Time
}

// oneOrg is an ExportUpstream of one organization: every project's
// exports go out with its key.
type oneOrg struct{ oneOrgExports }

func (o oneOrg) StartStaticExport(ctx context.Context, _ string, req apiclient.StaticExportRequest) (apiclient.StaticExportJob, error) {
	return o.oneOrgExports.StartStaticExport(ctx, req)
}

func (o oneOrg) GetStaticExport(ctx context.Context, _, jobID string) (apiclient.StaticExportJob, error) {
	return o.oneOrgExports.GetStaticExport(ctx, jobID)
}

func (o oneOrg) BundleStaticExport(ctx context.Context, _, jobID string) (apiclient.StaticExportBundle, error) {
	return o.oneOrgExports.BundleStaticExport(ctx, jobID)
}

// exportUpstream is api's static export endpoints, nil when it has none.
func exportUpstream(api any) ExportUpstream {
	switch x := api.(type) {
	case ExportUpstream:
		return x
	case oneOrgExports:
		return oneOrg{x}
	}
	return nil
}
