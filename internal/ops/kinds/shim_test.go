package kinds_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
	_ "github.com/mintlify-exporter/mintlify_exporter/internal/ops/kinds"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/kinds/automation"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/kinds/deployment"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/kinds/job"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/kinds/staticexport"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
)

// The engine and its kinds as the tests of the tracker they replaced
// drive them: one value (Tracker) with every kind's calls, so that the
// tests kept their words and assertions when the kinds became plug-ins.

// Config is the engine's configuration with the settings the wiring
// gives it from the flags and the configuration file: which kinds'
// routes are on, and the automations each project names.
type Config struct {
	engine.Config
	Deployments, StaticExports bool
	Automations                func(project string) (named []string, on bool)
	beforeStateWrite           func()
	// takes, when set, is what each project takes, every kind's routes on
	// (the gateway's tests).
	takes func(kind, project string) ([]string, bool)
}

// Defaults are the engine's.
func Defaults() Config { return Config{Config: engine.Defaults()} }

// engineConfig is c as the engine takes it.
func (c Config) engineConfig() engine.Config {
	ec := c.Config
	ec.BeforeStateWrite = c.beforeStateWrite
	ec.On = map[string]bool{job.Name: true, deployment.Name: c.Deployments, staticexport.Name: c.StaticExports, automation.Name: c.Automations != nil}
	if c.takes != nil {
		ec.On = map[string]bool{job.Name: true, deployment.Name: true, staticexport.Name: true, automation.Name: true}
		ec.Takes = c.takes
		return ec
	}
	ec.Takes = func(kind, project string) ([]string, bool) {
		switch kind {
		case automation.Name:
			if c.Automations == nil {
				return nil, false
			}
			return c.Automations(project)
		case deployment.Name:
			return nil, c.Deployments
		case staticexport.Name:
			return nil, c.StaticExports
		}
		return nil, true
	}
	return ec
}

// Tracker is an engine with every kind.
type Tracker struct {
	*engine.Engine
	cfg   Config
	store *swapStore
	jobs  *job.Kind
	dep   *deployment.Kind
	exp   *staticexport.Kind
	auto  *automation.Kind
}

// New is an engine on cfg (its state file, unless cfg.Store).
func New(api any, reg prometheus.Registerer, cfg Config, logger log.Logger) (*Tracker, error) {
	if cfg.Store == nil {
		st, err := store.Open(cfg.StatePath, storeOptions(cfg))
		if err != nil {
			return nil, err
		}
		cfg.Store = st
	}
	sw := &swapStore{inner: cfg.Store}
	cfg.Store = sw
	e, err := engine.New(api, reg, cfg.engineConfig(), logger)
	if err != nil {
		_ = sw.Close()
		return nil, err
	}
	return &Tracker{Engine: e, cfg: cfg, store: sw, jobs: job.Of(e), dep: deployment.Of(e), exp: staticexport.Of(e), auto: automation.Of(e)}, nil
}

// swapStore is a store whose inner store a test swaps for a failing one.
type swapStore struct {
	mu    sync.Mutex
	inner engine.Store
}

func (s *swapStore) get() engine.Store {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inner
}

func (s *swapStore) set(st engine.Store) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inner = st
}

func (s *swapStore) Apply(ops ...store.Op) error { return s.get().Apply(ops...) }
func (s *swapStore) ForEachIn(b string, fn func(k, v []byte) error) error {
	return s.get().ForEachIn(b, fn)
}
func (s *swapStore) Len() (int, error) { return s.get().Len() }
func (s *swapStore) Path() string      { return s.get().Path() }
func (s *swapStore) CheckFile() error  { return s.get().CheckFile() }
func (s *swapStore) Replaced() bool    { return s.get().Replaced() }
func (s *swapStore) Stalled() bool     { return s.get().Stalled() }
func (s *swapStore) Close() error      { return s.get().Close() }

// storeOptions are the state file's options of cfg.
func storeOptions(cfg Config) store.Options {
	schema, upgrades, buckets := engine.Layout()
	return store.Options{Schema: schema, Upgrades: upgrades, Buckets: buckets, LockTimeout: cfg.LockTimeout, WriteTimeout: cfg.StateWriteTimeout,
		BeforeCommit: cfg.beforeStateWrite}
}

func (t *Tracker) round(ctx context.Context) { t.Round(ctx) }

// The agent jobs.
type (
	JobView                    = job.View
	CreateRequest              = job.CreateRequest
	Created                    = job.Created
	MessageRequest             = job.MessageRequest
	Messaged                   = job.Messaged
	NotSentError               = job.NotSentError
	MessageOutcomeUnknownError = job.MessageOutcomeUnknownError
	StateError                 = engine.StateError
	IntentError                = engine.IntentError
	BadIDError                 = engine.BadIDError
	TrackResult                = engine.TrackResult
	Unsaved                    = engine.Unsaved
	OutcomeUnknownError        = engine.OutcomeUnknownError
	StartOutcomeUnknownError   = engine.OutcomeUnknownError
	IDCollisionError           = engine.CollisionError
)

const (
	OriginGateway    = engine.OriginGateway
	OriginTrack      = engine.OriginTrack
	OriginAutomation = automation.Origin
	StatusLost       = engine.StatusLost
	NewlyTracked     = engine.NewlyTracked
	AlreadyTracked   = engine.AlreadyTracked
	lostAfter404s    = engine.LostAfter404s
)

var (
	ErrIdempotencyKeyReused   = engine.ErrIdempotencyKeyReused
	ErrIdempotencyKeyInFlight = engine.ErrIdempotencyKeyInFlight
	ErrNoSuchIntent           = engine.ErrNoSuchIntent
)

func (t *Tracker) Create(ctx context.Context, req CreateRequest) (Created, error) {
	return t.jobs.Create(ctx, req)
}
func (t *Tracker) Job(project, id string) (JobView, bool) { return t.jobs.Job(project, id) }
func (t *Tracker) Jobs(project, status string) []JobView  { return t.jobs.Jobs(project, status) }
func (t *Tracker) Track(ctx context.Context, project, id string) (JobView, TrackResult, error) {
	return t.jobs.Track(ctx, project, id)
}
func (t *Tracker) Message(ctx context.Context, req MessageRequest) (Messaged, error) {
	return t.jobs.Message(ctx, req)
}
func (t *Tracker) RecentCreates(window time.Duration) map[string][]time.Time {
	return t.jobs.RecentCreates(window)
}
func (t *Tracker) RecentMessages(window time.Duration) map[string][]time.Time {
	return t.jobs.RecentMessages(window)
}
func (t *Tracker) ResolveIntent(ctx context.Context, project, intentID, jobID string) (JobView, TrackResult, error) {
	return t.jobs.Resolve(ctx, project, intentID, jobID)
}
func (t *Tracker) DismissIntent(project, id string) error {
	return t.Ops(job.Name).Dismiss(project, id)
}

// UnknownCreate is a create of unknown outcome as listed.
type UnknownCreate struct {
	ID, Project, IdempotencyKey, PromptExcerpt string
	StartedAt                                  time.Time
}

func (t *Tracker) UnknownCreates(project string) []UnknownCreate {
	out := []UnknownCreate{}
	for _, in := range t.Ops(job.Name).Unknown(project) {
		b := in.Base()
		out = append(out, UnknownCreate{ID: b.ID, Project: b.Project, IdempotencyKey: b.IdempotencyKey, PromptExcerpt: in.(*job.Intent).PromptExcerpt,
			StartedAt: b.StartedAt})
	}
	return out
}

// AddProjects is Follow.
func (t *Tracker) AddProjects(ids []string) error { return t.Follow(ids) }

// Started is the answer to a start of an op kind.
type Started[V any] struct {
	Op       V
	Code     int
	Replayed bool
}

// Ops is what the routes of an op kind ask of the engine.
type Ops[V, L any] struct {
	o    *engine.Ops
	view func(engine.Item) V
	list func(engine.Intent) L
}

func (o Ops[V, L]) One(project, id string) (V, bool) {
	it, ok := o.o.One(project, id)
	if !ok {
		var none V
		return none, false
	}
	return o.view(it), true
}

func (o Ops[V, L]) List(project string) []V {
	out := []V{}
	for _, it := range o.o.List(project) {
		out = append(out, o.view(it))
	}
	return out
}

func (o Ops[V, L]) Unknown(project string) []L {
	out := []L{}
	for _, in := range o.o.Unknown(project) {
		out = append(out, o.list(in))
	}
	return out
}

func (o Ops[V, L]) Dismiss(project, id string) error { return o.o.Dismiss(project, id) }

func (o Ops[V, L]) Resolve(ctx context.Context, project, intentID, id string) (V, TrackResult, error) {
	it, res, err := o.o.Resolve(ctx, project, intentID, id)
	var v V
	if it.Rec != nil {
		v = o.view(it)
	}
	return v, res, err
}

// started is s with its view.
func started[V any](s engine.Started, err error, view func(engine.Item) V) (Started[V], error) {
	out := Started[V]{Code: s.Code, Replayed: s.Replayed}
	if s.Item.Rec != nil {
		out.Op = view(s.Item)
	}
	return out, err
}

// UnknownIntent is what every op kind lists of a start of unknown outcome.
type UnknownIntent struct {
	ID             string    `json:"id"`
	Project        string    `json:"project"`
	IdempotencyKey string    `json:"idempotencyKey,omitempty"`
	StartedAt      time.Time `json:"startedAt"`
}

func unknownOf(in engine.Intent) UnknownIntent {
	b := in.Base()
	return UnknownIntent{ID: b.ID, Project: b.Project, IdempotencyKey: b.IdempotencyKey, StartedAt: b.StartedAt}
}

// The deployments.
type (
	DeploymentView = deployment.View
	DeployRequest  = deployment.Request
	Deployed       = Started[DeploymentView]
)

// UnknownTrigger is a deployment trigger of unknown outcome as listed.
type UnknownTrigger struct {
	UnknownIntent
	Kind string `json:"kind"`
}

const (
	KindUpdate  = deployment.KindUpdate
	KindPreview = deployment.KindPreview
)

func (t *Tracker) Deploy(ctx context.Context, req DeployRequest) (Deployed, error) {
	s, err := t.dep.Deploy(ctx, req)
	return started(s, err, deployment.ViewOf)
}

func (t *Tracker) TrackDeployment(ctx context.Context, project, kind, id string) (DeploymentView, TrackResult, error) {
	it, res, err := t.dep.Track(ctx, project, kind, id)
	var v DeploymentView
	if it.Rec != nil {
		v = deployment.ViewOf(it)
	}
	return v, res, err
}

func (t *Tracker) Deployment(id string, projects map[string]bool) (DeploymentView, bool) {
	it, ok := t.Ops(deployment.Name).Find(func(r engine.Record) bool { return r.ID() == id && (projects == nil || projects[r.Base().Project]) })
	if !ok {
		return DeploymentView{}, false
	}
	return deployment.ViewOf(it), true
}

func (t *Tracker) RecentDeployments(kind string, window time.Duration) map[string][]time.Time {
	return t.dep.Recent(kind)(window)
}

func (t *Tracker) DeploymentOps() Ops[DeploymentView, UnknownTrigger] {
	return Ops[DeploymentView, UnknownTrigger]{o: t.Ops(deployment.Name), view: deployment.ViewOf,
		list: func(in engine.Intent) UnknownTrigger {
			return UnknownTrigger{unknownOf(in), in.(*deployment.Intent).Kind}
		}}
}

// The static exports.
type (
	ExportView    = staticexport.View
	ExportRequest = staticexport.Request
	Exported      = Started[ExportView]
)

// UnknownExportStart is a start of unknown outcome as listed.
type UnknownExportStart struct {
	UnknownIntent
	Domain string `json:"domain"`
}

func (t *Tracker) StartExport(ctx context.Context, req ExportRequest) (Exported, error) {
	s, err := t.exp.Start(ctx, req)
	return started(s, err, staticexport.ViewOf)
}

func (t *Tracker) TrackExport(ctx context.Context, project, id string) (ExportView, TrackResult, error) {
	it, res, err := t.exp.Track(ctx, project, id)
	var v ExportView
	if it.Rec != nil {
		v = staticexport.ViewOf(it)
	}
	return v, res, err
}

func (t *Tracker) Export(project, id string) (ExportView, bool) {
	return t.ExportOps().One(project, id)
}
func (t *Tracker) Exports(project string) []ExportView { return t.ExportOps().List(project) }
func (t *Tracker) BundleExport(ctx context.Context, project, id string) (apiclient.StaticExportBundle, error) {
	return t.exp.Bundle(ctx, project, id)
}

func (t *Tracker) ExportOps() Ops[ExportView, UnknownExportStart] {
	return Ops[ExportView, UnknownExportStart]{o: t.Ops(staticexport.Name), view: staticexport.ViewOf,
		list: func(in engine.Intent) UnknownExportStart {
			return UnknownExportStart{unknownOf(in), in.(*staticexport.Intent).Domain}
		}}
}

// The automations.
type (
	AutomationRunView   = automation.View
	AutomationRequest   = automation.Request
	AutomationTriggered = Started[AutomationRunView]
)

// UnknownAutomationTrigger is a trigger of unknown outcome as listed.
type UnknownAutomationTrigger struct {
	UnknownIntent
	Automation string `json:"automation"`
}

const (
	FollowPending  = automation.FollowPending
	FollowAgentJob = automation.FollowAgentJob
	FollowNone     = automation.FollowNone
)

func (t *Tracker) TriggerAutomation(ctx context.Context, req AutomationRequest) (AutomationTriggered, error) {
	s, err := t.auto.Trigger(ctx, req)
	return started(s, err, t.auto.View)
}

func (t *Tracker) TrackAutomationRun(ctx context.Context, project, automation, jobID string) (AutomationRunView, TrackResult, error) {
	it, res, err := t.auto.Track(ctx, project, automation, jobID)
	var v AutomationRunView
	if it.Rec != nil {
		v = t.auto.View(it)
	}
	return v, res, err
}

func (t *Tracker) AutomationOps() Ops[AutomationRunView, UnknownAutomationTrigger] {
	return Ops[AutomationRunView, UnknownAutomationTrigger]{o: t.Ops(automation.Name), view: t.auto.View,
		list: func(in engine.Intent) UnknownAutomationTrigger {
			return UnknownAutomationTrigger{unknownOf(in), in.(*automation.Intent).Automation}
		}}
}

// The names of the tracker's tests for the engine's parts.
type (
	stateStore = engine.Store
	upstream   = any
)

var (
	newTracker = New
	storeKey   = engine.Key
)

// The state's buckets.
const (
	bucketIntents           = "intents"
	bucketMessageIntents    = "message_intents"
	bucketDeployments       = "deployments"
	bucketDeployIntents     = "deploy_intents"
	bucketExports           = "static_exports"
	bucketExportIntents     = "static_export_intents"
	bucketAutomations       = "automations"
	bucketAutomationIntents = "automation_intents"
)

// messageIntent is a follow-up's intent, written in its frozen state form
// (messageIntentV3) by the tests that play a crash after it was written.
type messageIntent struct {
	ID, Project, JobID, IdemKey, RequestHash string
	StartedAt                                time.Time
	By                                       string
}

func encodeMessageIntent(in *messageIntent) ([]byte, error) {
	return json.Marshal(map[string]any{"id": in.ID, "project": in.Project, "idempotencyKey": in.IdemKey, "requestHash": in.RequestHash,
		"startedAt": in.StartedAt, "jobId": in.JobID, "by": in.By})
}

func messageHash(jobID, prompt string) string { return engine.RequestHash("message", jobID, prompt) }

var intentSeq atomic.Int64

func newIntentID(prefix string) string { return fmt.Sprintf("%s%024d", prefix, intentSeq.Add(1)) }

var (
	CheckState   = engine.CheckState
	SalvageState = engine.SalvageState
	classify     = engine.Classify
	pick         = engine.Pick
	WithUser     = engine.WithUser
)

// stateSchema is the state's schema.
var stateSchema, _, _ = engine.Layout()

// statusUnread is the status of a job rebuilt by state salvage.
const statusUnread = "unread"

// promptExcerptLen is how much of a prompt a create's intent keeps.
const promptExcerptLen = 120

func decodeRecord(v []byte) (job.Record, error) {
	var r job.Record
	err := json.Unmarshal(v, &r)
	if err == nil && (r.Project == "" || r.Job.ID == "") {
		err = errors.New("no project or job id")
	}
	return r, err
}

func encodeRecord(r *job.Record) ([]byte, error) { return json.Marshal(r) }

// Status is the status page's part of the operations.
func (t *Tracker) Status() *status.Jobs {
	out := &status.Jobs{}
	for _, k := range t.Kinds() {
		out.Sections = append(out.Sections, k.(interface {
			Section(time.Time) status.Section
		}).Section(t.Now()))
	}
	if d, ok := t.MostOverdue(); ok {
		out.MostOverduePoll = &status.Poll{Project: d.Project, Kind: d.Kind, JobID: d.ID, DueAt: d.At}
	}
	return out
}

// rowsOf are the rows of the status page's section key, as its JSON
// shows them.
func rowsOf[T any](j *status.Jobs, key string) []T {
	data, err := json.Marshal(j)
	if err != nil {
		panic(err)
	}
	var back status.Jobs
	var out []T
	if err := json.Unmarshal(data, &back); err != nil {
		panic(err)
	}
	if err := back.Rows(key, &out); err != nil {
		panic(err)
	}
	return out
}

// statusDeployment is a deployment on the status page.
type statusDeployment struct {
	Project    string `json:"project"`
	Kind       string `json:"kind"`
	StatusID   string `json:"status_id"`
	Status     string `json:"status"`
	Branch     string `json:"branch"`
	SHA        string `json:"sha"`
	PreviewURL string `json:"preview_url"`
}

// statusProject is a project's agent jobs on the status page.
type statusProject struct {
	Project         string         `json:"project"`
	ByStatus        map[string]int `json:"by_status"`
	UnknownCreates  int            `json:"unknown_creates"`
	UnknownOutcomes map[string]int `json:"unknown_outcomes"`
}

// statusAutomation is an automation run on the status page.
type statusAutomation struct {
	Project    string `json:"project"`
	Automation string `json:"automation"`
	RunID      string `json:"run_id"`
	JobID      string `json:"job_id"`
	Status     string `json:"status"`
	Follow     string `json:"follow"`
}

// countSeries is how many series of name reg has.
func countSeries(t *testing.T, reg *prometheus.Registry, name string) int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return len(mf.GetMetric())
		}
	}
	return 0
}
