// Package staticexport is a kind of operation (engine.Kind): an export of
// a project's documentation, started through the gateway or handed over
// by its job id, followed until completed or failed on the engine's
// rounds, intents and state. The API is per organization (no project in
// its paths): the gateway scopes each export to a configured project,
// whose organization's key starts and reads it, and one export is
// followed for one project only (engine.Decl.OrgWide).
package staticexport

import (
	"cmp"
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
)

// Record is a followed static export: its own state form (schema version
// 5), the export's fields and the engine's part (engine.Op). Every string
// from a client or the API is bounded when read.
type Record struct {
	JobID string `json:"exportJobId"`
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
	engine.Op
}

func (r *Record) ID() string                            { return r.JobID }
func (r *Record) Valid() bool                           { return r.Origin != "" }
func (r *Record) Final() bool                           { return r.Lost || apiclient.IsStaticExportFinal(r.Status) }
func (r *Record) Polled(time.Time, *engine.Config) bool { return !r.Final() }
func (r *Record) Clone() engine.Record                  { c := *r; return &c }

// Reached: of two versions of one running, the one further along.
func (r *Record) Reached() int { return r.Op.Reached() + int(r.Progress*100) }

func (r *Record) Next(at, _ time.Time, cfg *engine.Config) time.Time {
	return engine.EveryInterval(r.Final(), at, cfg)
}

// Saw is the record after reading j: a final status is counted once,
// when seen live, with the export's duration from createdAt to its last
// updatedAt (else when seen final).
func (r *Record) Saw(read any, at, _ time.Time, how engine.Sighting) (engine.Event, bool) {
	old := *r
	j := read.(apiclient.StaticExportJob)
	r.Status = engine.Intern(bounded.Label(j.Status))
	r.Progress, r.Pages = j.Progress, j.PageCount
	if !j.CreatedAt.IsZero() {
		r.CreatedAt = j.CreatedAt.UTC()
	}
	if !j.UpdatedAt.IsZero() {
		r.UpdatedAt = j.UpdatedAt.UTC()
	}
	r.Error = bounded.Text(j.Error)
	r.Lost = false
	ev := r.SawFinal(apiclient.IsStaticExportFinal(r.Status), r.Status, at, how)
	if ev.Finished != "" && !r.CreatedAt.IsZero() {
		ev.Timed, ev.Duration = true, cmp.Or(r.UpdatedAt, at).Sub(r.CreatedAt)
	}
	return ev, *r != old
}

// Intent is a start's intent: its own state form (version 5), the
// engine's and the domain.
type Intent struct {
	engine.IntentBase
	Domain string `json:"exportDomain"`
}

func (in *Intent) Valid() bool { return in.Domain != "" }

func (in *Intent) Record(id string) engine.Record { return &Record{JobID: id, Domain: in.Domain} }

// Listed is the start as listed to operators: its domain as "domain".
func (in *Intent) Listed() any {
	b := in.Base()
	return struct {
		ID             string    `json:"id"`
		Project        string    `json:"project"`
		IdempotencyKey string    `json:"idempotencyKey,omitempty"`
		StartedAt      time.Time `json:"startedAt"`
		Domain         string    `json:"domain"`
	}{b.ID, b.Project, b.IdempotencyKey, b.StartedAt, in.Domain}
}

// DurationBuckets are the classic buckets of
// mintlify_static_export_duration_seconds: 10s to 2h.
var DurationBuckets = []float64{10, 30, 60, 90, 120, 180, 300, 600, 1200, 1800, 3600, 7200}

// Name is the name of the static exports (engine.Decl.Name).
const Name = "static_export"

// decl declares the static exports.
var decl = &engine.Decl{Order: 30, Name: Name, What: "static export", Request: "static export start", IDKey: "export", IDName: "job id",
	Records: "static_exports", Intents: "static_export_intents", IntentPrefix: "xi_", ReadEndpoint: apiclient.EndpointStaticExportStatus, OrgWide: true,
	Settle: "an export may have been started upstream; with its job id (from the Mintlify dashboard or the API's answer) follow it with " +
		"POST /api/v1/static-export/%[1]s/jobs/{jobId}/track?intent=%[2]s, or if none was started dismiss the start with " +
		"DELETE /api/v1/static-export/%[1]s/unknown-starts/%[2]s",
	UnknownGauge: "mintlify_static_export_unknown_outcomes", Doc: "static-exports.md",
	Routes: engine.Routes{Prefix: "/api/v1/static-export/", Track: "/api/v1/static-export/%[1]s/jobs/%[2]s/track",
		List: "/api/v1/static-export/%[1]s/jobs", Unknown: "/api/v1/static-export/%[1]s/unknown-starts", Flag: "web.enable-static-export-api",
		Title: "Static exports",
		StartLimit: &engine.StartLimit{Flag: "static-export.start-limit", PerHour: 100,
			Help: "Static exports the gateway starts per project in any hour; more get 429 and nothing is sent (0: no local limit)."},
		Help: "Serve the static export routes under /api/v1/static-export/: start exports of the projects with static_exports: true, follow each to its end, make bundles. Protect them with --web.config.file."},
	Setting: engine.Setting{Key: "static_exports", Noun: "static exports"},
}

// Kind is the static exports' part of an engine: the engine's families
// (engine.Families), and the progress and pages of the newest export
// running.
type Kind struct {
	ops             *engine.Ops
	fam             *engine.Families
	progress, pages *prometheus.Desc
}

func init() { engine.Register(&Kind{}) }

func (*Kind) Declare() *engine.Decl { return decl }

func (*Kind) Open(ops *engine.Ops) engine.Kind {
	return &Kind{ops: ops,
		fam: engine.NewFamilies(engine.Names{Stem: "mintlify_static_export", Noun: "static export", Requests: "static export starts", Route: "unknown-starts",
			Ended: "updatedAt", Finals: []string{apiclient.StaticExportCompleted, apiclient.StaticExportFailed}, Buckets: DurationBuckets}),
		progress: prometheus.NewDesc("mintlify_static_export_progress_ratio",
			"Progress (0-1) of the newest static export in progress; 0 when there is none.", []string{"project"}, nil),
		pages: prometheus.NewDesc("mintlify_static_export_pages_exported",
			"Pages exported so far by the newest static export in progress; 0 when there is none.", []string{"project"}, nil)}
}

// Of is e's static exports (nil: e does not follow them).
func Of(e *engine.Engine) *Kind { k, _ := e.Kind(Name).(*Kind); return k }

func (*Kind) NewRecord() engine.Record { return &Record{} }
func (*Kind) NewIntent() engine.Intent { return &Intent{} }

func (k *Kind) Read(ctx context.Context, rec engine.Record, _ engine.Sighting) (any, error) {
	c, err := k.ops.Engine().Client(rec.Base().Project, true)
	if err != nil {
		return nil, err
	}
	return c.GetStaticExport(ctx, rec.ID())
}

func (k *Kind) Count(rec engine.Record, ev engine.Event) []any {
	r := rec.(*Record)
	k.fam.Count(k.ops, ev, r.Project)
	return engine.Finished(decl, r, ev, "pages", r.Pages)
}

func (k *Kind) Series(projects []string, add bool) { k.fam.Series(projects, add, k.ops.On()) }

func (k *Kind) Describe(ch chan<- *prometheus.Desc) {
	k.fam.Describe(ch)
	ch <- k.progress
	ch <- k.pages
}

// gauges are one project's exports at scrape time: the engine's gauges,
// and the newest running (its start, progress and pages).
type gauges struct {
	engine.Gauges
	newest   time.Time
	progress float64
	pages    int64
}

// Collect sends every project's gauges, then the counters.
func (k *Kind) Collect(ch chan<- prometheus.Metric) {
	by := map[string]*gauges{}
	of := func(p string) *gauges {
		if by[p] == nil {
			by[p] = &gauges{}
		}
		return by[p]
	}
	k.ops.Each(func(rec engine.Record, _ *engine.Polling) {
		r, g := rec.(*Record), of(rec.Base().Project)
		started := g.Add(r, r.Status == apiclient.StaticExportCompleted, cmp.Or(r.UpdatedAt, r.TerminalAt))
		if !r.Final() && !started.Before(g.newest) {
			g.newest, g.progress, g.pages = started, r.Progress, r.Pages
		}
	})
	k.ops.EachUnknown(func(in engine.Intent) { of(in.Base().Project).Unknown++ })
	now := k.ops.Engine().Now()
	for _, p := range k.ops.Projects() {
		g := of(p)
		if k.fam.Collect(ch, k.ops.On(), &g.Gauges, now, p) {
			ch <- prometheus.MustNewConstMetric(k.progress, prometheus.GaugeValue, g.progress/100, p)
			ch <- prometheus.MustNewConstMetric(k.pages, prometheus.GaugeValue, float64(g.pages), p)
		}
	}
	k.fam.CollectCounters(ch)
}

// Request is a static export to start.
type Request struct {
	Project string
	// Body is what is sent (apiclient checks it before sending).
	Body           apiclient.StaticExportRequest
	IdempotencyKey string
	Admit          func() error
}

// Start starts a static export upstream and follows it, with the
// engine's guarantees (engine.Ops.Start).
func (k *Kind) Start(ctx context.Context, req Request) (engine.Started, error) {
	c, err := k.ops.Engine().Client(req.Project, false)
	if err != nil {
		return engine.Started{}, err
	}
	b := req.Body
	in := &Intent{IntentBase: k.ops.NewIntent(req.Project, req.IdempotencyKey, append([]string{b.Domain, b.Version}, b.Paths...)...),
		Domain: bounded.Label(b.Domain)}
	send := func() (engine.Record, engine.Event, int, error) {
		j, err := c.StartStaticExport(ctx, b)
		if err != nil {
			return nil, engine.Event{}, 0, err
		}
		rec := &Record{JobID: j.JobID, Domain: in.Domain, Version: bounded.Label(b.Version)}
		ev, _ := rec.Saw(j, k.ops.Engine().Now(), time.Time{}, engine.SeenLive)
		return rec, ev, j.Code, nil
	}
	return k.ops.Start(ctx, engine.Start{In: in, Admit: req.Admit, Endpoint: apiclient.EndpointStartStaticExport,
		Until: c.ThrottledUntil(apiclient.EndpointStartStaticExport), Send: send, Verb: "starting a static export", KV: []any{"domain", in.Domain}})
}

// Track follows an export started elsewhere (its job id handed over)
// after one read upstream with project's organization's key.
func (k *Kind) Track(ctx context.Context, project, id string) (engine.Item, engine.TrackResult, error) {
	return k.ops.Track(ctx, &Record{JobID: id, Op: engine.Op{Project: project}}, engine.SeenAfterTheFact)
}

// Bundle asks the API for the bundle of project's export id (a 409 until
// it is completed, passed through as the API's error). The bundle's URL is
// handed back to the caller only: what is kept of it, and shown on the
// status page, is when it expires.
func (k *Kind) Bundle(ctx context.Context, project, id string) (apiclient.StaticExportBundle, error) {
	if err := bounded.CheckID(decl.IDName, id); err != nil {
		return apiclient.StaticExportBundle{}, &engine.BadIDError{Err: err}
	}
	c, err := k.ops.Engine().Client(project, false)
	if err != nil {
		return apiclient.StaticExportBundle{}, err
	}
	b, err := c.BundleStaticExport(ctx, id)
	if err != nil || b.ExpiresAt.IsZero() {
		return b, err
	}
	_, _ = k.ops.Update(project, id, func(rec engine.Record) { rec.(*Record).BundleExpiresAt = b.ExpiresAt.UTC() })
	return b, nil
}

// View is a followed export as the gateway shows it: the API's field
// names (the engine's OpView, and the job id, progress, pages, last update
// and error), plus the domain and version asked for. A bundle's URL is
// never part of it: only the bundle route answers it, to its caller; the
// view says until when the last bundle made is valid.
type View struct {
	JobID           string            `json:"jobId"`
	Domain          string            `json:"domain,omitempty"`
	Version         string            `json:"version,omitempty"`
	Progress        float64           `json:"progress"`
	PageCount       int64             `json:"pageCount"`
	UpdatedAt       apiclient.APITime `json:"updatedAt"`
	Error           string            `json:"error,omitempty"`
	BundleExpiresAt *time.Time        `json:"bundleExpiresAt,omitempty"`
	engine.OpView
}

func ViewOf(it engine.Item) View {
	r := it.Rec.(*Record)
	v := View{JobID: r.JobID, Domain: r.Domain, Version: r.Version, Progress: r.Progress, PageCount: r.Pages,
		UpdatedAt: apiclient.APITime{Time: r.UpdatedAt}, Error: r.Error, OpView: it.View(apiclient.StaticExportQueued)}
	if v.UpdatedAt.IsZero() {
		// Not read since it started: the API's updatedAt is required, and
		// an export not updated since was last updated when created.
		v.UpdatedAt = v.CreatedAt
	}
	if t := r.BundleExpiresAt; !t.IsZero() {
		v.BundleExpiresAt = &t
	}
	return v
}
