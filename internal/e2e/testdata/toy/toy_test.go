// Package toy is a fifth kind of operation that exists only for the
// tests (internal/e2e builds an exporter with it: toy_test.go): what a
// kind is, its package alone beside its registry line. A toy is an agent
// job started upstream with a fixed prompt and followed to its end under
// the toy's own routes, state buckets, metric families and status
// section; its fake handler is the fake API's agent jobs, whose
// directives (#fake:pr:4s) set how long it runs.
package toy

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/gateway"
	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
)

func init() { engine.Register(&Kind{}) }

var decl = &engine.Decl{Order: 50, Name: "toy", What: "toy", Request: "toy start", IDKey: "toy", IDName: "job id",
	Records: "toys", Intents: "toy_intents", IntentPrefix: "ti_", ReadEndpoint: apiclient.EndpointGetJob,
	Settle:       "follow it with POST /api/v1/toy/%[1]s/ops/{jobId}/track?intent=%[2]s, or dismiss it with DELETE /api/v1/toy/%[1]s/unknown-starts/%[2]s",
	UnknownGauge: "mintlify_toy_unknown_outcomes", Doc: "development.md",
	Routes: engine.Routes{Prefix: "/api/v1/toy/", Track: "/api/v1/toy/%[1]s/ops/%[2]s/track", List: "/api/v1/toy/%[1]s/ops",
		Unknown: "/api/v1/toy/%[1]s/unknown-starts", Flag: "web.enable-toy-api", Title: "Toys", Help: "Serve the toy routes under /api/v1/toy/."},
	Setting: engine.Setting{Key: "toys", Noun: "toys"},
}

var finals = []string{apiclient.StatusCompleted, apiclient.StatusFailed, apiclient.StatusArchived}

// Record is a followed toy: the job's id and the engine's part.
type Record struct {
	JobID string `json:"toyJobId"`
	engine.Op
}

func (r *Record) ID() string                            { return r.JobID }
func (r *Record) Valid() bool                           { return r.Origin != "" }
func (r *Record) Final() bool                           { return r.Lost || slices.Contains(finals, r.Status) }
func (r *Record) Polled(time.Time, *engine.Config) bool { return !r.Final() }
func (r *Record) Clone() engine.Record                  { c := *r; return &c }

func (r *Record) Next(at, _ time.Time, cfg *engine.Config) time.Time {
	return engine.EveryInterval(r.Final(), at, cfg)
}

func (r *Record) Saw(read any, at, _ time.Time, how engine.Sighting) (engine.Event, bool) {
	old := *r
	j := read.(*apiclient.Job)
	r.Status, r.CreatedAt, r.Lost = bounded.Label(j.Status), j.CreatedAt.UTC(), false
	ev := r.SawFinal(slices.Contains(finals, r.Status), r.Status, at, how)
	if ev.Finished != "" {
		ev.Timed, ev.Duration = true, at.Sub(r.CreatedAt)
	}
	return ev, *r != old
}

// Intent is a start's intent.
type Intent struct{ engine.IntentBase }

func (*Intent) Valid() bool                    { return true }
func (*Intent) Record(id string) engine.Record { return &Record{JobID: id} }

// Kind is the toys' part of an engine.
type Kind struct {
	ops *engine.Ops
	fam *engine.Families
}

func (*Kind) Declare() *engine.Decl { return decl }

func (*Kind) Open(ops *engine.Ops) engine.Kind {
	return &Kind{ops: ops, fam: engine.NewFamilies(engine.Names{Stem: "mintlify_toy", Noun: "toy", Requests: "toy starts", Route: "unknown-starts",
		Ended: "end", Finals: finals, Buckets: prometheus.DefBuckets})}
}

func (*Kind) NewRecord() engine.Record { return &Record{} }
func (*Kind) NewIntent() engine.Intent { return &Intent{} }

func (k *Kind) Read(ctx context.Context, rec engine.Record, _ engine.Sighting) (any, error) {
	c, err := k.ops.Engine().Client(rec.Base().Project, true)
	if err != nil {
		return nil, err
	}
	return c.GetJob(ctx, rec.Base().Project, rec.ID())
}

func (k *Kind) Count(rec engine.Record, ev engine.Event) []any {
	k.fam.Count(k.ops, ev, rec.Base().Project)
	return engine.Finished(decl, rec, ev)
}

func (k *Kind) Series(projects []string, add bool)  { k.fam.Series(projects, add, k.ops.On()) }
func (k *Kind) Describe(ch chan<- *prometheus.Desc) { k.fam.Describe(ch) }

func (k *Kind) Collect(ch chan<- prometheus.Metric) {
	by := map[string]*engine.Gauges{}
	for _, p := range k.ops.Projects() {
		by[p] = &engine.Gauges{}
	}
	k.ops.Each(func(rec engine.Record, _ *engine.Polling) {
		if g := by[rec.Base().Project]; g != nil {
			g.Add(rec, rec.Base().Status == apiclient.StatusCompleted, rec.Base().TerminalAt)
		}
	})
	k.ops.EachUnknown(func(in engine.Intent) {
		if g := by[in.Base().Project]; g != nil {
			g.Unknown++
		}
	})
	for p, g := range by {
		k.fam.Collect(ch, k.ops.On(), g, k.ops.Engine().Now(), p)
	}
	k.fam.CollectCounters(ch)
}

// view is a toy as its routes show it.
func view(it engine.Item) any {
	return struct {
		ID string `json:"id"`
		engine.OpView
	}{it.Rec.ID(), it.View("queued")}
}

// Routes adds the toy routes to g.
func (k *Kind) Routes(g *gateway.Gateway) error {
	const base = "/api/v1/toy/{projectId}"
	g.Handle(decl, "POST "+base+"/ops", func(w http.ResponseWriter, r *http.Request, project string) {
		key, ok := gateway.StartHeaders(w, r)
		if !ok {
			return
		}
		var body struct{ Prompt string }
		if bad := gateway.ReadBody(w, r, &body, false, 1<<10, `{"prompt": "..."}`); bad != nil {
			bad.Write(w)
			return
		}
		ctx, cancel := g.Context(r)
		defer cancel()
		c, err := k.ops.Engine().Client(project, false)
		if err != nil {
			g.Fail(w, project, "start toy", err)
			return
		}
		in := &Intent{k.ops.NewIntent(project, key, body.Prompt)}
		s, err := k.ops.Start(ctx, engine.Start{In: in, Endpoint: apiclient.EndpointCreateJob, Verb: "starting a toy",
			Send: func() (engine.Record, engine.Event, int, error) {
				j, code, err := c.CreateJobWithStatus(ctx, project, body.Prompt)
				if err != nil {
					return nil, engine.Event{}, 0, err
				}
				rec := &Record{JobID: j.ID}
				ev, _ := rec.Saw(j, k.ops.Engine().Now(), time.Time{}, engine.SeenLive)
				return rec, ev, code, nil
			}})
		if err != nil {
			g.Fail(w, project, "start toy", err)
			return
		}
		gateway.WriteStarted(w, s.Code, http.StatusAccepted, s.Replayed, view(s.Item))
	})
	g.Handle(decl, "GET "+base+"/ops/{jobId}", func(w http.ResponseWriter, r *http.Request, project string) {
		it, ok := k.ops.One(project, r.PathValue("jobId"))
		var v any
		if ok {
			v = view(it)
		}
		gateway.ServeOne(w, v, ok, "toy not followed")
	})
	g.Handle(decl, "GET "+base+"/ops", func(w http.ResponseWriter, r *http.Request, project string) {
		var views []any
		for _, it := range k.ops.List(project) {
			views = append(views, view(it))
		}
		gateway.ServeList(w, r, "toy", nil, views, func(any) string { return "" }, "toys")
	})
	g.Handle(decl, "POST "+base+"/ops/{jobId}/track", func(w http.ResponseWriter, r *http.Request, project string) {
		ctx, cancel := g.Context(r)
		defer cancel()
		id, intent := r.PathValue("jobId"), r.URL.Query().Get("intent")
		it, res, err := gateway.FollowOrSettle(intent,
			func() (engine.Item, engine.TrackResult, error) { return k.ops.Resolve(ctx, project, intent, id) },
			func() (engine.Item, engine.TrackResult, error) {
				return k.ops.Track(ctx, &Record{JobID: id, Op: engine.Op{Project: project}}, engine.SeenAfterTheFact)
			})
		var v any
		if it.Rec != nil {
			v = view(it)
		}
		gateway.AnswerTrack(w, gateway.Tracked{What: "toy", Start: "toy start", Unknown: "unknown-starts", Failed: g.Failed("track toy")}, project, v, res, err, func() {})
	})
	g.Unknown(decl, base+"/unknown-starts", "unknownStarts", true)
	return nil
}

// Section is the toys' part of the status page.
func (k *Kind) Section(time.Time) status.Section {
	s := status.Section{Key: "toys", Title: decl.Routes.Title, Empty: "No toy followed.", Columns: []status.Column{{Name: "Project"}, {Name: "Toy"}, {Name: "Status"}}}
	type row struct{ Project, ID, Status string }
	rows := []row{}
	for _, it := range k.ops.List("") {
		if op := it.Rec.Base(); len(rows) < status.MaxRows && k.ops.Labelled(op.Project) {
			rows = append(rows, row{op.Project, it.Rec.ID(), op.ViewStatus("queued")})
			s.Rows = append(s.Rows, status.Row{Project: op.Project, Cells: []status.Cell{{Text: op.Project}, {Text: it.Rec.ID(), Code: true}, {Text: op.ViewStatus("queued")}}})
		}
	}
	s.JSON = rows
	return s
}
