package job

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
)

// Kind is the agent jobs' part of an engine: their families and calls.
type Kind struct {
	ops *engine.Ops
	api API
	m   *metrics
}

func init() { engine.Register(&Kind{}) }

func (*Kind) Declare() *engine.Decl { return decl }

func (*Kind) Open(ops *engine.Ops) engine.Kind {
	return &Kind{ops: ops, api: APIOf(ops.Engine().API()), m: newMetrics()}
}

// Of is e's agent jobs (nil: e does not follow them).
func Of(e *engine.Engine) *Kind { k, _ := e.Kind(Name).(*Kind); return k }

func (*Kind) NewRecord() engine.Record { return &Record{} }
func (*Kind) NewIntent() engine.Intent { return &Intent{} }

func (k *Kind) Read(ctx context.Context, rec engine.Record, _ engine.Sighting) (any, error) {
	if k.api == nil {
		return nil, engine.ErrNoClient
	}
	return k.api.GetJob(ctx, rec.Base().Project, rec.ID())
}

// Count counts ev under the lock that shows it, and logs, at info, what
// the audit trail of submissions does not show: a turn seen ending, a
// pull request seen opened, a turn seen starting. Never the prompt.
func (k *Kind) Count(rec engine.Record, ev engine.Event) []any {
	r := rec.(*Record)
	k.m.count(k.ops.Labelled(r.Project), r.Project, ev)
	switch {
	case ev.Mark&markInferred != 0:
		return []any{"msg", "agent job running after a follow-up of unknown outcome: following the turn it started", "project", r.Project,
			"job", r.Job.ID, "turn", r.Turns, "turn_started_at", r.TurnStartedAt}
	case ev.Mark&markNewTurn != 0 && ev.Mark&markMessage == 0:
		return []any{"msg", "agent job active again: following its new turn (a follow-up sent elsewhere)", "project", r.Project, "job", r.Job.ID, "turn", r.Turns}
	case ev.Finished == "" && ev.Mark&markPR == 0:
		return nil
	}
	msg := "agent job finished"
	if ev.Finished == "" {
		msg = "agent job opened a pull request"
	}
	pr := "no"
	if r.PRCounted && r.Job.PRLink != nil && *r.Job.PRLink != "" {
		pr = "yes"
	}
	kv := []any{"msg", msg, "project", r.Project, "job", bounded.Label(r.Job.ID), "status", bounded.Label(r.viewStatus()), "turn", r.turn(), "pr", pr}
	if ev.Timed {
		kv = append(kv, "duration", ev.Duration.Round(time.Millisecond))
	}
	return kv
}

func (k *Kind) Series(projects []string, add bool)  { k.m.series(projects, add) }
func (k *Kind) Describe(ch chan<- *prometheus.Desc) { k.m.describe(ch) }
func (k *Kind) Collect(ch chan<- prometheus.Metric) {
	k.m.collect(ch, k.ops.Projects(), k.snapshot, k.ops.Engine().Now())
}

// Created is the answer to a create: the job (as the API answered, or for
// a replay as followed now), the HTTP status of the API's answer (for a
// replay, of the first answer; 0 when unknown), and whether it is a
// replay (nothing was sent).
type Created struct {
	Job      apiclient.Job
	Status   int
	Replayed bool
}

// CreateRequest is a job to create.
type CreateRequest struct {
	Project, Prompt string
	// IdempotencyKey, when not empty, makes retries safe: a create with a
	// key already used in the project is not sent again.
	IdempotencyKey string
	// Admit is the gateway's create limit (engine.Start.Admit).
	Admit func() error
}

// Create creates a job upstream and follows it, with the engine's
// guarantees (engine.Ops.Start): an intent written before the create
// leaves, the job written (and the intent deleted) before Create returns,
// Idempotency-Key replays, a create of unknown outcome listed for an
// operator. An API that answers with the id of a job followed and still
// running gets an *engine.CollisionError.
func (k *Kind) Create(ctx context.Context, req CreateRequest) (Created, error) {
	if k.api == nil {
		return Created{}, engine.ErrNoClient
	}
	in := &Intent{IntentBase: k.ops.NewIntent(req.Project, req.IdempotencyKey, req.Prompt), PromptExcerpt: excerpt(req.Prompt)}
	send := func() (engine.Record, engine.Event, int, error) {
		job, code, err := k.api.CreateJobWithStatus(ctx, req.Project, req.Prompt)
		if err != nil {
			return nil, engine.Event{}, 0, err
		}
		j := *job
		boundJob(&j)
		rec := &Record{Job: apiclient.Job{ID: j.ID}}
		ev := rec.transition(j, k.ops.Engine().Now(), engine.SeenLive, time.Time{})
		ev.Mark |= markSubmitted
		return rec, ev, code, nil
	}
	s, err := k.ops.Start(ctx, engine.Start{In: in, Admit: req.Admit, Endpoint: apiclient.EndpointCreateJob,
		Until: k.api.ThrottledUntil(apiclient.EndpointCreateJob), Send: send, Verb: "creating a job"})
	if s.Item.Rec == nil {
		return Created{}, err
	}
	return Created{Job: s.Item.Rec.(*Record).job(), Status: s.Code, Replayed: s.Replayed}, err
}

// Track follows a job created elsewhere after one read upstream. A job
// terminal when first seen is kept but not counted as finished (this
// exporter did not see it finish). One followed already is returned as it
// is, AlreadyTracked, without asking upstream; if it is no longer polled
// it is re-checked at the next round: tracking it again is how a client
// says it may have been sent a follow-up elsewhere. With an
// *engine.StateError the job is followed in memory and its view valid.
func (k *Kind) Track(ctx context.Context, project, id string) (View, engine.TrackResult, error) {
	it, res, err := k.ops.Track(ctx, &Record{Op: engine.Op{Project: project}, Job: apiclient.Job{ID: id}}, engine.SeenAfterTheFact)
	if res == engine.AlreadyTracked {
		k.ops.Recheck(project, id)
		it, _ = k.ops.One(project, id)
	}
	return k.viewOf(it), res, err
}

// Adopt follows job (id of project), just read upstream (SeenLive: what it
// reached is counted), of origin, by user, as Track does after its read:
// the door of another kind whose operations are agent jobs (an
// automation's run). One followed already is returned as it is.
func (k *Kind) Adopt(project, id string, job *apiclient.Job, how engine.Sighting, origin, user string) (View, engine.TrackResult, error) {
	it, res, err := k.ops.Adopt(&Record{Op: engine.Op{Project: project, Origin: origin, SubmittedBy: user}, Job: apiclient.Job{ID: id}}, job, how)
	return k.viewOf(it), res, err
}

// Resolve settles a create of unknown outcome with the job the operator
// found it created (engine.Ops.Resolve).
func (k *Kind) Resolve(ctx context.Context, project, intentID, jobID string) (View, engine.TrackResult, error) {
	it, res, err := k.ops.Resolve(ctx, project, intentID, jobID)
	return k.viewOf(it), res, err
}

// Unwritten reports whether project's job id is followed in memory only
// (its record's write has not landed).
func (k *Kind) Unwritten(project, id string) bool {
	it, ok := k.ops.One(project, id)
	return ok && it.Poll.Unwritten()
}

// Job is project's followed job id.
func (k *Kind) Job(project, id string) (View, bool) {
	it, ok := k.ops.One(project, id)
	return k.viewOf(it), ok
}

// Status is the status shown for project's followed job id ("" when it
// is not followed).
func (k *Kind) Status(project, id string) string {
	it, ok := k.ops.One(project, id)
	if !ok {
		return ""
	}
	return it.Rec.(*Record).viewStatus()
}

// Jobs lists a project's followed jobs, newest first (createdAt, then
// id), only those whose shown status is status unless it is empty.
func (k *Kind) Jobs(project, status string) []View {
	out := []View{}
	for _, it := range k.ops.List(project) {
		if status == "" || it.Rec.(*Record).viewStatus() == status {
			out = append(out, k.viewOf(it))
		}
	}
	slices.SortFunc(out, func(a, b View) int { return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID)) })
	return out
}

// RecentCreates is when jobs were created through the gateway within
// window of now, per project, oldest first (creates of unknown outcome
// too: they may have reached the API): what the local create limit counts
// after a restart.
func (k *Kind) RecentCreates(window time.Duration) map[string][]time.Time {
	return k.ops.Recent(window, nil, nil)
}

// Tracking is what the exporter knows of a followed job: what it knows of
// every operation it follows, and the job's turns.
type Tracking struct {
	engine.Followed
	// Turn is the job's current turn: 1 from its creation, one more for
	// each follow-up message.
	Turn int `json:"turn"`
	// TurnStartedAt is when the current turn started, absent for the first
	// turn (it started at createdAt).
	TurnStartedAt *time.Time `json:"turnStartedAt,omitempty"`
	// TurnStartedBy is the basic-auth user whose follow-up message started
	// the current turn, when it was sent through the gateway.
	TurnStartedBy string `json:"turnStartedBy,omitempty"`
	// TurnInferred: the current turn is the one a follow-up of unknown
	// outcome started (its answer was lost to a crash or a dropped
	// connection), inferred from the job running after it was sent.
	TurnInferred bool `json:"turnInferred,omitempty"`
	// Rebuilt: the job's record in the state file was unreadable and
	// `state salvage` rebuilt it from the job's id: its idempotency keys,
	// earlier turns and submitter are lost.
	Rebuilt bool `json:"rebuilt,omitempty"`
}

// View is a followed job as shown to clients: the API's job object (same
// field names) plus "tracking". Its status is the API's latest, or
// engine.StatusLost when the API no longer knows the job.
type View struct {
	apiclient.Job
	Tracking Tracking `json:"tracking"`
}

// viewOf is it's view (zero for no record).
func (k *Kind) viewOf(it engine.Item) View {
	if it.Rec == nil {
		return View{}
	}
	r := it.Rec.(*Record)
	e := k.ops.Engine()
	v := View{Job: r.job(), Tracking: Tracking{Followed: it.Followed(it.Poll.Recheck() || r.Polled(e.Now(), e.Config())), Turn: r.turn(), Rebuilt: r.Rebuilt}}
	v.Status = r.viewStatus()
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if m := r.Messages[i]; m.Turn == r.turn() && m.Turn > 1 {
			v.Tracking.TurnStartedBy, v.Tracking.TurnInferred = m.By, m.Status == 0
			break
		}
	}
	if t := r.TurnStartedAt; !t.IsZero() {
		v.Tracking.TurnStartedAt = &t
	}
	return v
}

// DurationBuckets are the classic buckets of
// mintlify_agent_job_duration_seconds: 10s to 4h.
var DurationBuckets = []float64{10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400}

// gaugeStatuses are always exported, 0 included; terminalStatuses are the
// finished_total and duration label values.
var (
	gaugeStatuses    = []string{apiclient.StatusActive, apiclient.StatusCompleted, apiclient.StatusFailed, apiclient.StatusArchived, engine.StatusLost}
	terminalStatuses = []string{apiclient.StatusCompleted, apiclient.StatusFailed, apiclient.StatusArchived}
)

// metrics are the mintlify_agent_job* families. The gauges are read from
// the records at scrape time; the counters and the histogram are the
// process's own observations (they reset on restart).
type metrics struct {
	jobs, folded, oldest, unknown, rebuilt *prometheus.Desc
	submitted, finished, prs, lost, msgs   *prometheus.CounterVec
	duration                               *prometheus.HistogramVec
}

func newMetrics() *metrics {
	byProject := []string{"project"}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, append(byProject, labels...))
	}
	return &metrics{
		jobs:   prometheus.NewDesc("mintlify_agent_jobs", "Agent jobs tracked by the exporter, by current status.", []string{"project", "status"}, nil),
		folded: prometheus.NewDesc("mintlify_agent_job_statuses_folded", "Distinct undocumented job statuses from the API summed under other in mintlify_agent_jobs, beyond its cap.", byProject, nil),
		oldest: prometheus.NewDesc("mintlify_agent_job_oldest_active_age_seconds", "Age of the oldest turn still running among the tracked jobs, 0 when there is none.", byProject, nil),
		// A gauge, not a counter: it is how many such creates wait for an
		// operator now, and it falls when they are resolved or dismissed,
		// which is what clears the alert.
		unknown:   prometheus.NewDesc("mintlify_agent_create_unknown_outcomes", "Job creates that may have reached the API but whose outcome was never recorded, waiting for an operator.", byProject, nil),
		rebuilt:   prometheus.NewDesc("mintlify_agent_state_unreadable_records", "Tracked jobs whose unreadable state record state salvage rebuilt from the job's id, losing its idempotency keys.", byProject, nil),
		submitted: counter("mintlify_agent_jobs_submitted_total", "Agent jobs created upstream through the gateway and persisted as tracked."),
		finished:  counter("mintlify_agent_jobs_finished_total", "Turns of tracked agent jobs seen reaching a terminal status, once per turn and status.", "status"),
		duration: prometheus.NewHistogramVec(engine.HistogramOpts("mintlify_agent_job_duration_seconds",
			"Duration of each turn of an agent job until a poll saw it end, by its first terminal status.", DurationBuckets), []string{"project", "status"}),
		prs:  counter("mintlify_agent_job_pull_requests_total", "Completed agent jobs seen with a pull request (prLink), once per job."),
		lost: counter("mintlify_agent_jobs_lost_total", "Tracked agent jobs given up on because the API answered 404 for them repeatedly."),
		msgs: counter("mintlify_agent_job_messages_total", "Follow-up messages sent to agent jobs through the gateway and accepted upstream; each starts a new turn of its job."),
	}
}

func (m *metrics) vecs() []prometheus.Collector {
	return []prometheus.Collector{m.submitted, m.finished, m.duration, m.prs, m.lost, m.msgs}
}

// series pre-creates the projects' series at 0 (add), or deletes them.
func (m *metrics) series(projects []string, add bool) {
	for _, p := range projects {
		for _, v := range []*prometheus.CounterVec{m.submitted, m.prs, m.lost, m.msgs} {
			if add {
				v.WithLabelValues(p)
			} else {
				v.DeleteLabelValues(p)
			}
		}
		for _, s := range terminalStatuses {
			if add {
				m.finished.WithLabelValues(p, s)
				m.duration.WithLabelValues(p, s)
			} else {
				m.finished.DeleteLabelValues(p, s)
				m.duration.DeleteLabelValues(p, s)
			}
		}
	}
}

func (m *metrics) describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.jobs, m.folded, m.oldest, m.unknown, m.rebuilt} {
		ch <- d
	}
	for _, c := range m.vecs() {
		c.Describe(ch)
	}
}

// count applies ev of a written change of a job of project (labelled:
// the project is a label value).
func (m *metrics) count(labelled bool, project string, ev engine.Event) {
	if !labelled {
		return
	}
	if ev.Finished != "" {
		m.finished.WithLabelValues(project, ev.Finished).Inc()
		if ev.Timed {
			m.duration.WithLabelValues(project, ev.Finished).Observe(max(ev.Duration.Seconds(), 0))
		}
	}
	for bit, v := range map[uint8]*prometheus.CounterVec{markPR: m.prs, markSubmitted: m.submitted, markMessage: m.msgs} {
		if ev.Mark&bit != 0 {
			v.WithLabelValues(project).Inc()
		}
	}
	if ev.Lost {
		m.lost.WithLabelValues(project).Inc()
	}
}

// projectJobs are one project's jobs at scrape time (and on the status
// page).
type projectJobs struct {
	byStatus       map[string]int
	oldestActive   time.Time
	unknownCreates int
	rebuilt        int
}

// snapshot is every followed project's jobs.
func (k *Kind) snapshot() map[string]*projectJobs {
	by := map[string]*projectJobs{}
	of := func(p string) *projectJobs {
		if by[p] == nil {
			by[p] = &projectJobs{byStatus: map[string]int{}}
		}
		return by[p]
	}
	for _, p := range k.ops.Projects() {
		of(p)
	}
	k.ops.Each(func(rec engine.Record, _ *engine.Polling) {
		r, pj := rec.(*Record), of(rec.Base().Project)
		st := r.viewStatus()
		pj.byStatus[st]++
		if r.Rebuilt {
			pj.rebuilt++
		}
		if !r.Lost && !apiclient.IsTerminal(st) {
			if c := cmp.Or(r.turnStart(), r.TrackedAt); pj.oldestActive.IsZero() || c.Before(pj.oldestActive) {
				pj.oldestActive = c
			}
		}
	})
	k.ops.EachUnknown(func(in engine.Intent) { of(in.Base().Project).unknownCreates++ })
	return by
}

// collect sends the gauges of projects (the label values) as snapshot
// reads them at now, then the counters (a terminal status is counted
// before it is shown: a scrape that shows it shows it counted too).
func (m *metrics) collect(ch chan<- prometheus.Metric, projects []string, snapshot func() map[string]*projectJobs, now time.Time) {
	by := snapshot()
	for _, p := range projects {
		pj := by[p]
		statuses, folded := foldStatuses(pj.byStatus)
		for _, s := range slices.Sorted(maps.Keys(statuses)) {
			ch <- prometheus.MustNewConstMetric(m.jobs, prometheus.GaugeValue, float64(statuses[s]), p, s)
		}
		age := 0.0
		if !pj.oldestActive.IsZero() {
			age = max(now.Sub(pj.oldestActive).Seconds(), 0)
		}
		for d, v := range map[*prometheus.Desc]float64{m.folded: float64(folded), m.oldest: age, m.unknown: float64(pj.unknownCreates), m.rebuilt: float64(pj.rebuilt)} {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, p)
		}
	}
	for _, c := range m.vecs() {
		c.Collect(ch)
	}
}

// foldStatuses returns the counts to export: statuses made bounded label
// values, every always-present status, the bounded.MaxUnknownValues
// largest undocumented ones and the rest summed under bounded.Other
// (bounded.Fold, the analytics sources' rule); folded is how many
// distinct statuses were summed.
func foldStatuses(by map[string]int) (out map[string]int, folded int) {
	labelled := make(map[string]int, min(len(by), 1024))
	for s, n := range by {
		labelled[bounded.Label(s)] += n
	}
	return bounded.Fold(labelled, gaugeStatuses, bounded.MaxUnknownValues)
}
