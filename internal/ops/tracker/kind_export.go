package tracker

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
	"github.com/prometheus/client_golang/prometheus"
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
	idName: "job id", missing: "origin", orgWide: true, bucket: bucketExports, intents: startIntents, decodeIntent: startCodec.decode,
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

// ExportDurationBuckets are the classic buckets of
// mintlify_static_export_duration_seconds: 10s to 2h.
var ExportDurationBuckets = []float64{10, 30, 60, 90, 120, 180, 300, 600, 1200, 1800, 3600, 7200}

// exportMetrics are the mintlify_static_export* families: the engine's
// (opMetrics), and the progress and pages of the newest export running.
type exportMetrics struct {
	*opMetrics
	progress, pages *prometheus.Desc
}

func newExportMetrics() *exportMetrics {
	m := newOpMetrics(opFamilies{stem: "mintlify_static_export", noun: "static export", requests: "static export starts", route: "unknown-starts",
		ended: "updatedAt", finals: []string{apiclient.StaticExportCompleted, apiclient.StaticExportFailed}, buckets: ExportDurationBuckets})
	return &exportMetrics{opMetrics: m,
		progress: prometheus.NewDesc("mintlify_static_export_progress_ratio",
			"Progress (0-1) of the newest static export in progress; 0 when there is none.", []string{"project"}, nil),
		pages: prometheus.NewDesc("mintlify_static_export_pages_exported",
			"Pages exported so far by the newest static export in progress; 0 when there is none.", []string{"project"}, nil)}
}

func (m *exportMetrics) describe(ch chan<- *prometheus.Desc) {
	m.opMetrics.describe(ch)
	ch <- m.progress
	ch <- m.pages
}

// exportGauges are one project's exports at scrape time: the engine's
// gauges, and the newest running (its start, progress and pages).
type exportGauges struct {
	opGauges
	newest   time.Time
	progress float64
	pages    int64
}

// add counts r.
func (g *exportGauges) add(r *exportRecord) {
	end := r.UpdatedAt
	if end.IsZero() {
		end = r.TerminalAt
	}
	started := g.opGauges.add(&r.opState, r.final(), r.Status == apiclient.StaticExportCompleted, end)
	if !r.final() && !started.Before(g.newest) {
		g.newest, g.progress, g.pages = started, r.Progress, r.Pages
	}
}

// collectProject sends the gauges of project p as of now.
func (m *exportMetrics) collectProject(ch chan<- prometheus.Metric, p string, g *exportGauges, now time.Time) {
	if !m.shown(&g.opGauges) {
		return
	}
	m.collect(ch, &g.opGauges, now, p)
	ch <- prometheus.MustNewConstMetric(m.progress, prometheus.GaugeValue, g.progress/100, p)
	ch <- prometheus.MustNewConstMetric(m.pages, prometheus.GaugeValue, float64(g.pages), p)
}

// What a read of a static export changes, and when it is read again.

// exportTransition is the record after reading j at at, and what to
// count: a final status is counted once, when seen live (the engine's
// rule, opState.sawFinal), with the export's duration.
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

// exportRecord is a followed static export: its own state form (version
// 5), the export's fields and the engine's part (opState). Every string
// from a client or the API is bounded when read.
type exportRecord struct {
	ID string `json:"exportJobId"`
	// Domain and Version are what the start asked for ("" when handed
	// over).
	Domain  string `json:"domain,omitempty"`
	Version string `json:"version,omitempty"`
	// Progress (0-100) and Pages are the API's latest, UpdatedAt its last
	// update (zero until it gives it).
	Progress  float64   `json:"progress,omitempty"`
	Pages     int64     `json:"pageCount,omitempty"`
	UpdatedAt time.Time `json:"updatedAt,omitzero"`
	// Error is a failed export's message, bounded.
	Error string `json:"error,omitempty"`
	// BundleExpiresAt is when the last bundle made of it expires (its URL
	// is never kept: it is answered to the caller only).
	BundleExpiresAt time.Time `json:"bundleExpiresAt,omitzero"`
	opState
}

// final reports whether the export will not change any more.
func (r *exportRecord) final() bool { return r.Lost || apiclient.IsStaticExportFinal(r.Status) }

// The export's part of opRecord: its id, and an origin (every export
// written has one).
func (r *exportRecord) opID() string { return r.ID }
func (r *exportRecord) valid() bool  { return r.Origin != "" }

// exportIntent is a start intent: written before a start is sent,
// deleted with the export's first write or once the API's answer says
// nothing was started; one left is a start of unknown outcome. It is its
// own state form (version 5): the engine's intent (opIntent) and the
// domain.
type exportIntent struct {
	opIntent
	Domain string `json:"exportDomain"`
}

// startCodec reads and writes the start intents.
var startCodec = opIntentCodec[exportIntent, *exportIntent]{what: "static export intent", missing: "domain",
	valid: func(in *exportIntent) bool { return in.Domain != "" }}

// exportRows are the status page's rows of the static exports followed
// last (newest first): a bundle said ready with when it expires, never
// its URL (which is not kept).
func exportRows(recent []*exportEntry, now time.Time) []status.StaticExport {
	out := []status.StaticExport{}
	for _, e := range recent {
		v := e.rec.view(&e.polling)
		row := status.StaticExport{Project: v.ProjectID, JobID: v.JobID, Status: v.Status, Domain: v.Domain, Progress: v.Progress,
			Pages: v.PageCount, CreatedAt: v.CreatedAt.Time, UpdatedAt: v.UpdatedAt.Time}
		switch exp := e.rec.BundleExpiresAt; {
		case exp.IsZero():
		case exp.After(now):
			row.Bundle = "bundle ready, expires at " + exp.UTC().Format(time.RFC3339)
		default:
			row.Bundle = "bundle expired at " + exp.UTC().Format(time.RFC3339)
		}
		out = append(out, row)
	}
	return out
}

// Static export starts of unknown outcome: listed, settled and dismissed
// through the engine's intents, as every kind's.

// UnknownExportStart is a start whose outcome is unknown, as listed to
// operators: the engine's listing and the domain asked for.
type UnknownExportStart struct {
	UnknownIntent
	Domain string `json:"domain"`
}

// ExportOps is the engine's part of the static export routes: the
// followed exports, and the starts of unknown outcome (settled with their
// domain).
func (s *Tracker) ExportOps() Ops[ExportView, UnknownExportStart] {
	return routesOf(s.exportOps, func(in *exportIntent) UnknownExportStart {
		return UnknownExportStart{unknownOf(&in.opIntent), in.Domain}
	})
}
