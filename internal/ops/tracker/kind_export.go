package tracker

import (
	"context"
	"fmt"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
)

// Static exports are the tracker's third kind of operation (issue 36,
// section 3): an export of a project's documentation, started through the
// gateway (StartExport) or handed over by its job id (TrackExport), followed
// until completed or failed on the engine's poll rounds, intents and
// state (opKind). The API is per organization (no project in its paths):
// the gateway scopes each export to a configured project, whose
// organization's key starts and reads it.

// ExportUpstream is the API of static exports, per project (its
// organization's key). An Upstream without it follows no export.
type ExportUpstream interface {
	StartStaticExport(ctx context.Context, project string, req apiclient.StaticExportRequest) (apiclient.StaticExportJob, error)
	GetStaticExport(ctx context.Context, project, jobID string) (apiclient.StaticExportJob, error)
	BundleStaticExport(ctx context.Context, project, jobID string) (apiclient.StaticExportBundle, error)
	ThrottledUntil(endpoint string) time.Time
}

// exportEntry is a followed export in memory.
type exportEntry = followed[exportRecord]

// exports is the static exports in a tracker (the engine's opKind).
type exports = opKind[exportRecord, *exportRecord, ExportView, *exportIntent]

// exportSpec declares the static exports to the engine: the job id names
// one, a start's domain is kept with it, progress and pages are its own
// gauges, and the status page says when its bundle expires.
var exportSpec = &opSpec[exportRecord, *exportRecord, ExportView, *exportIntent]{name: OpExport, what: "static export", idKey: "export",
	idName: "job id", missing: "origin", bucket: bucketExports, intents: startIntents, decodeIntent: startCodec.decode,
	endpoint: apiclient.EndpointStaticExportStatus, settle: "an export may have been started upstream; with its job id (from the Mintlify " +
		"dashboard or the API's answer) follow it with POST /api/v1/static-export/%[1]s/jobs/{jobId}/track?intent=%[2]s, or if none was " +
		"started dismiss the start with DELETE /api/v1/static-export/%[1]s/unknown-starts/%[2]s",
	base:  func(_ *exportIntent, id string) exportRecord { return exportRecord{ID: id} },
	adopt: func(r *exportRecord, in *exportIntent) { r.Domain = in.Domain },
	// Of two versions of one running, the one further along.
	further:  func(a, b exportRecord) bool { return b.Progress > a.Progress },
	schedule: everyInterval[exportRecord], // every poll interval while it runs
	metrics:  func(m *metrics) opCounter { return m.export.opMetrics }, labels: func(*exportRecord) []string { return nil },
	finishKV: func(r *exportRecord) []any { return []any{"pages", r.Pages} },
	addTo:    func(pj *projectJobs, e *exportEntry) { pj.export.add(&e.rec) }, unknownTo: func(pj *projectJobs, _ *exportIntent) { pj.export.unknown++ },
	rows: func(out *status.Jobs, newest []*exportEntry, now time.Time, _ func(*exportEntry) ExportView) {
		out.StaticExports = exportRows(newest[:min(status.MaxStaticExports, len(newest))], now)
	},
}

// newExports are the static exports of s, read with its upstream's
// static export endpoints (none: it follows no export).
func newExports(s *Tracker) *exports {
	x := &exports{opSpec: exportSpec, s: s, records: s.exports}
	api := s.exportAPI
	x.on, x.throttled = func() bool { return api != nil }, func(endpoint string) time.Time { return api.ThrottledUntil(endpoint) }
	x.get = func(ctx context.Context, project, id string, _ sighting) (seen[exportRecord], error) {
		j, err := api.GetStaticExport(ctx, project, id)
		return func(old exportRecord, at time.Time, how sighting) (exportRecord, finishEvent) {
			return exportTransition(old, &j, at, how)
		}, err
	}
	return x
}

// ExportView is a followed export as the gateway shows it: the API's
// field names (the engine's OpView, and the job id, progress, pages, last
// update and error), plus the domain and version asked for. A bundle's
// URL is never part of it: only the bundle route answers it, to its
// caller; the view says until when the last bundle made is valid.
type ExportView struct {
	JobID           string            `json:"jobId"`
	Domain          string            `json:"domain,omitempty"`
	Version         string            `json:"version,omitempty"`
	Progress        float64           `json:"progress"`
	PageCount       int64             `json:"pageCount"`
	UpdatedAt       apiclient.APITime `json:"updatedAt"`
	Error           string            `json:"error,omitempty"`
	BundleExpiresAt *time.Time        `json:"bundleExpiresAt,omitempty"`
	OpView
}

func (r *exportRecord) view(p *polling) ExportView {
	v := ExportView{JobID: r.ID, Domain: r.Domain, Version: r.Version, Progress: r.Progress, PageCount: r.Pages,
		UpdatedAt: apiclient.APITime{Time: r.UpdatedAt}, Error: r.Error, OpView: opView(&r.opState, p, r.final(), apiclient.StaticExportQueued)}
	if t := r.BundleExpiresAt; !t.IsZero() {
		v.BundleExpiresAt = &t
	}
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

// Exported is the answer to a start (the engine's Started).
type Exported = Started[ExportView]

// StartExport starts a static export upstream and follows it, with the
// engine's guarantees (opKind.start): an intent written before the start
// leaves, the export written (and the intent deleted) before it is
// acknowledged, Idempotency-Key replays, and an outcome unknown listed for
// an operator.
func (s *Tracker) StartExport(ctx context.Context, req ExportRequest) (Exported, error) {
	if req.Project == "" {
		return Exported{}, fmt.Errorf("static export: empty project")
	}
	if err := checkIdempotencyKey(req.IdempotencyKey); err != nil {
		return Exported{}, err
	}
	b := req.Body
	in := &exportIntent{opIntent: newOpIntent(s, "xi_", req.Project, req.IdempotencyKey, append([]string{b.Domain, b.Version}, b.Paths...)...),
		Domain: bounded.Label(b.Domain)}
	send := func() (exportRecord, finishEvent, int, error) {
		j, err := s.exportAPI.StartStaticExport(ctx, req.Project, b)
		if err != nil {
			return exportRecord{}, finishEvent{}, 0, err
		}
		rec, ev := exportTransition(exportRecord{ID: j.JobID, Domain: in.Domain, Version: bounded.Label(b.Version)}, &j, s.cfg.Now(), seenLive)
		return rec, ev, j.Code, nil
	}
	return s.exportOps.start(ctx, startReq[exportRecord, *exportIntent]{in: in, admit: req.Admit, endpoint: apiclient.EndpointStartStaticExport,
		send: send, verb: "starting a static export", kv: []any{"domain", in.Domain}})
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
