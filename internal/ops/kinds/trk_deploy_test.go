package kinds_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/kinds/deployment"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/kinds/job"
)

// buildTime is the build time the fake reports (endedAt - createdAt):
// shorter than the rounds it takes the tracker to see the end, so that a
// duration measured from when the end was seen cannot pass for it.
const buildTime = 15 * time.Second

func (e *env) deploy(kind, branch string) Deployed {
	e.t.Helper()
	d, err := e.trk.Deploy(context.Background(), DeployRequest{Project: "p1", Kind: kind, Branch: branch})
	if err != nil {
		e.t.Fatalf("deploy %s %s: %v", kind, branch, err)
	}
	return d
}

func (e *env) deployStatus(id string) string {
	v, ok := e.trk.Deployment(id, nil)
	if !ok {
		return ""
	}
	return v.Status
}

func deployConfig(e *env) Config {
	cfg := e.config()
	cfg.Deployments = true
	return cfg
}

// TestDeploymentsFollowedToTheirEnd: triggered updates and previews are
// followed on the job tracker's rounds to success and failure, counted
// once, with the API's createdAt to endedAt as their duration and endedAt
// as the last success, and never polled again once final.
func TestDeploymentsFollowedToTheirEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{DeployDuration: buildTime})
	e.open(deployConfig(e))
	e.checkMetrics([]metricCase{
		{"mintlify_deployments_finished_total", []string{"project", "p1", "kind", "update", "status", "success"}, 0},
		{"mintlify_deployments_finished_total", []string{"project", "p1", "kind", "preview", "status", "failure"}, 0},
		{"mintlify_deployments_in_progress", []string{"project", "p1", "kind", "update"}, 0},
		{"mintlify_deployment_oldest_in_progress_age_seconds", []string{"project", "p1", "kind", "preview"}, 0},
	})
	if e.find("mintlify_deployment_last_success_timestamp_seconds", "project", "p1", "kind", "update") != nil {
		t.Error("last success exported before any success")
	}
	created := e.clock.Now()
	ok := e.deploy(KindUpdate, "")
	if ok.Code != 202 || ok.Op.Status != apiclient.DeploymentQueued || ok.Op.Tracking.Origin != OriginGateway {
		t.Errorf("update answered %+v", ok)
	}
	e.fake.SetDeploymentBranch("p1", "fail-main")
	bad := e.deploy(KindUpdate, "")
	pv := e.deploy(KindPreview, "feature/x")
	if pv.Op.PreviewURL != fakeapi.PreviewURL("p1", "feature/x") || pv.Op.Commit.Ref != "feature/x" {
		t.Errorf("preview answered %+v", pv.Op)
	}
	e.clock.Advance(30 * time.Second)
	e.checkMetrics([]metricCase{
		{"mintlify_deployments_in_progress", []string{"project", "p1", "kind", "update"}, 2},
		{"mintlify_deployments_in_progress", []string{"project", "p1", "kind", "preview"}, 1},
		{"mintlify_deployment_oldest_in_progress_age_seconds", []string{"project", "p1", "kind", "update"}, 30},
	})
	e.tickUntil(10, "every deployment final", func() bool {
		return e.deployStatus(ok.Op.ID) == "success" && e.deployStatus(bad.Op.ID) == "failure" && e.deployStatus(pv.Op.ID) == "success"
	})
	reads := e.fake.Requests(fakeapi.DeploymentStatus)
	e.runFor(5 * time.Minute)
	if got := e.fake.Requests(fakeapi.DeploymentStatus); got != reads {
		t.Errorf("%d status reads after every deployment was final, want none", got-reads)
	}
	e.checkMetrics([]metricCase{
		{"mintlify_deployments_finished_total", []string{"project", "p1", "kind", "update", "status", "success"}, 1},
		{"mintlify_deployments_finished_total", []string{"project", "p1", "kind", "update", "status", "failure"}, 1},
		{"mintlify_deployments_finished_total", []string{"project", "p1", "kind", "preview", "status", "success"}, 1},
		{"mintlify_deployments_finished_total", []string{"project", "p1", "kind", "preview", "status", "failure"}, 0},
		{"mintlify_deployment_duration_seconds", []string{"project", "p1", "kind", "update", "status", "failure"}, 1},
		{"mintlify_deployments_in_progress", []string{"project", "p1", "kind", "update"}, 0},
		{"mintlify_deployment_oldest_in_progress_age_seconds", []string{"project", "p1", "kind", "update"}, 0},
		{"mintlify_deployment_last_success_timestamp_seconds", []string{"project", "p1", "kind", "update"},
			float64(created.Add(buildTime).Unix())},
	})
	if got := e.histSum("mintlify_deployment_duration_seconds", "project", "p1", "kind", "update", "status", "success"); got != buildTime.Seconds() {
		t.Errorf("update duration %vs, want the API's createdAt to endedAt, %vs", got, buildTime.Seconds())
	}
	v, _ := e.trk.Deployment(ok.Op.ID, nil)
	if len(v.Commit.SHA) != 40 || v.Commit.Ref != "main" || v.Tracking.TerminalAt == nil || v.EndedAt.Sub(v.CreatedAt.Time) != buildTime {
		t.Errorf("followed update %+v", v)
	}
	if list := e.trk.DeploymentOps().List("p1"); len(list) != 3 {
		t.Errorf("Deployments lists %d, want 3", len(list))
	}
	if st := rowsOf[statusDeployment](e.trk.Status(), "deployments"); len(st) != 3 || st[0].StatusID != pv.Op.ID || st[0].PreviewURL != pv.Op.PreviewURL ||
		st[0].Branch != "feature/x" || len(st[0].SHA) != 40 {
		t.Errorf("status page deployments: %+v", st)
	}
}

// TestDeploymentSurvivesRestart: a deployment in progress when the
// tracker stops is followed to its end by the next one on the same state,
// counted once there; those final before the restart are not counted
// again (every counter starts from zero), and an Idempotency-Key still
// replays its trigger.
func TestDeploymentSurvivesRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	e.open(deployConfig(e))
	done := e.deploy(KindUpdate, "")
	e.tickUntil(10, "first update final", func() bool { return e.deployStatus(done.Op.ID) == "success" })
	e.fake.HoldDeployments(true)
	d, err := e.trk.Deploy(context.Background(), DeployRequest{Project: "p1", Kind: KindPreview, Branch: "b", IdempotencyKey: "ci-42"})
	if err != nil {
		t.Fatal(err)
	}
	e.tickUntil(10, "preview in progress", func() bool { return e.deployStatus(d.Op.ID) == "in_progress" })

	e.open(deployConfig(e)) // a new process on the same state
	e.checkMetrics([]metricCase{
		{"mintlify_deployments_finished_total", []string{"project", "p1", "kind", "update", "status", "success"}, 0},
		{"mintlify_deployments_in_progress", []string{"project", "p1", "kind", "preview"}, 1},
	})
	again, err := e.trk.Deploy(context.Background(), DeployRequest{Project: "p1", Kind: KindPreview, Branch: "b", IdempotencyKey: "ci-42"})
	if err != nil || !again.Replayed || again.Op.ID != d.Op.ID || again.Code != 202 {
		t.Errorf("retry with the key after a restart: %+v, %v; want a replay of %s", again, err, d.Op.ID)
	}
	if n := e.fake.Deployments("p1", "preview"); n != 1 {
		t.Errorf("%d previews upstream, want 1", n)
	}
	e.fake.HoldDeployments(false)
	e.tickUntil(10, "preview final after the restart", func() bool { return e.deployStatus(d.Op.ID) == "success" })
	e.runFor(time.Minute)
	e.checkMetrics([]metricCase{
		{"mintlify_deployments_finished_total", []string{"project", "p1", "kind", "preview", "status", "success"}, 1},
		{"mintlify_deployments_finished_total", []string{"project", "p1", "kind", "update", "status", "success"}, 0},
		{"mintlify_deployments_in_progress", []string{"project", "p1", "kind", "preview"}, 0},
	})
}

// TestDeploymentHandedOver: a status id started elsewhere is followed to
// its end and counted; one final when handed over is kept, not counted;
// an unknown id or another project's is refused and not followed.
func TestDeploymentHandedOver(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{Projects: []string{"p1", "p2"}})
	e.open(deployConfig(e))
	ctx := context.Background()
	run, err := e.client.TriggerPreview(ctx, "p1", "fail-ci")
	if err != nil {
		t.Fatal(err)
	}
	v, res, err := e.trk.TrackDeployment(ctx, "p1", KindPreview, run.StatusID)
	if err != nil || res != NewlyTracked || v.Status != "queued" || v.Tracking.Origin != OriginTrack {
		t.Fatalf("track: %+v %v %v", v, res, err)
	}
	if _, res, _ := e.trk.TrackDeployment(ctx, "p1", KindPreview, run.StatusID); res != AlreadyTracked {
		t.Error("tracking it again is not AlreadyTracked")
	}
	e.tickUntil(10, "handed-over preview final", func() bool { return e.deployStatus(run.StatusID) == "failure" })

	old, err := e.client.TriggerUpdate(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 { // read to its end before it is handed over
		if _, err := e.client.DeploymentStatus(ctx, "p1", old.StatusID); err != nil {
			t.Fatal(err)
		}
	}
	if v, _, err := e.trk.TrackDeployment(ctx, "p1", KindUpdate, old.StatusID); err != nil || v.Status != "success" {
		t.Fatalf("tracking a finished update: %+v, %v", v, err)
	}
	e.runFor(time.Minute)
	e.checkMetrics([]metricCase{
		{"mintlify_deployments_finished_total", []string{"project", "p1", "kind", "preview", "status", "failure"}, 1},
		{"mintlify_deployments_finished_total", []string{"project", "p1", "kind", "update", "status", "success"}, 0},
	})
	if _, _, err := e.trk.TrackDeployment(ctx, "p1", KindUpdate, "nope"); apiclient.StatusCode(err) != 404 {
		t.Errorf("unknown status id: %v, want a 404", err)
	}
	if _, _, err := e.trk.TrackDeployment(ctx, "p2", KindUpdate, old.StatusID); !errors.Is(err, apiclient.ErrOtherProject) {
		t.Errorf("another project's status id: %v, want ErrOtherProject", err)
	}
	if n := len(e.trk.DeploymentOps().List("p1")) + len(e.trk.DeploymentOps().List("p2")); n != 2 {
		t.Errorf("%d deployments followed, want 2", n)
	}
}

// TestDeploymentPollingIsBounded: a deployment stuck in the queue is read
// less and less often (at most once a minute), an undocumented status is
// not final, and a deployment the API forgets is lost after three 404s.
func TestDeploymentPollingIsBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	e.open(deployConfig(e))
	stuck := e.deploy(KindPreview, "queued-forever")
	e.runFor(10 * time.Minute)
	// Every 10s it would be 60 reads; backing off, 10s, 20s, 40s, then
	// a minute: about 12.
	if n := e.fake.Requests(fakeapi.DeploymentStatus); n < 9 || n > 14 {
		t.Errorf("%d reads of a queued deployment in 10 minutes, want about 12", n)
	}
	if got := e.metric("mintlify_deployment_oldest_in_progress_age_seconds", "project", "p1", "kind", "preview"); got != 600 {
		t.Errorf("oldest in progress %vs, want 600 (queued ones count)", got)
	}
	if e.deployStatus(stuck.Op.ID) != "queued" {
		t.Errorf("stuck: %s", e.deployStatus(stuck.Op.ID))
	}
	b := e.deploy(KindUpdate, "")
	e.fake.SetDeploymentBranch("p1", "building-x")
	unk := e.deploy(KindUpdate, "")
	e.tickUntil(5, "undocumented status seen", func() bool { return e.deployStatus(unk.Op.ID) == "building" })
	if got := e.metric("mintlify_deployments_in_progress", "project", "p1", "kind", "update"); got < 1 {
		t.Errorf("in progress %v with a deployment building", got)
	}
	e.tickUntil(5, "building then success", func() bool { return e.deployStatus(unk.Op.ID) == "success" })
	e.fake.SetFault(fakeapi.DeploymentStatus, fakeapi.Fault{Status: 404})
	e.tickUntil(40, "an unknown deployment lost", func() bool { return e.deployStatus(stuck.Op.ID) == StatusLost })
	e.fake.ClearFaults()
	if got := e.metric("mintlify_deployments_finished_total", "project", "p1", "kind", "update", "status", "success"); got != 2 {
		t.Errorf("finished %v, want 2 (b %s)", got, e.deployStatus(b.Op.ID))
	}
	if got := e.metric("mintlify_deployments_finished_total", "project", "p1", "kind", "preview", "status", "success"); got != 0 {
		t.Errorf("a lost preview counted as finished: %v", got)
	}
}

// TestDeployIdempotency: a key replays its trigger without sending it
// again, refuses another request (another branch, or a job's key), and a
// trigger whose answer was lost answers 409-style until forgotten.
func TestDeployIdempotency(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	e.open(deployConfig(e))
	ctx := context.Background()
	req := DeployRequest{Project: "p1", Kind: KindPreview, Branch: "a", IdempotencyKey: "k1"}
	first, err := e.trk.Deploy(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.trk.Deploy(ctx, req)
	if err != nil || !again.Replayed || again.Op.ID != first.Op.ID {
		t.Errorf("replay: %+v %v", again, err)
	}
	req.Branch = "b"
	if _, err := e.trk.Deploy(ctx, req); !errors.Is(err, ErrIdempotencyKeyReused) {
		t.Errorf("same key, another branch: %v", err)
	}
	if _, err := e.trk.Create(ctx, CreateRequest{Project: "p1", Prompt: "x", IdempotencyKey: "k1"}); !errors.Is(err, ErrIdempotencyKeyReused) {
		t.Errorf("a job with a deployment's key: %v", err)
	}
	for _, bad := range []DeployRequest{{Project: "p1", Kind: KindPreview}, {Project: "p1", Kind: KindUpdate, Branch: "x"},
		{Project: "p1", Kind: "rollback"}, {Kind: KindUpdate}} {
		if _, err := e.trk.Deploy(ctx, bad); err == nil {
			t.Errorf("Deploy(%+v) accepted", bad)
		}
	}
	if n := e.fake.Requests(fakeapi.TriggerUpdate) + e.fake.Requests(fakeapi.TriggerPreview); n != 1 {
		t.Errorf("%d triggers sent, want only the first preview", n)
	}
	e.fake.SetFault(fakeapi.TriggerUpdate, fakeapi.Fault{DropAnswer: true, Remaining: 1})
	lost := DeployRequest{Project: "p1", Kind: KindUpdate, IdempotencyKey: "k2"}
	var unknown *StartOutcomeUnknownError
	if _, err := e.trk.Deploy(ctx, lost); !errors.As(err, &unknown) || unknown.Err == nil {
		t.Fatalf("dropped answer: %v, want an outcome unknown", err)
	}
	e.open(deployConfig(e))
	if _, err := e.trk.Deploy(ctx, lost); !errors.As(err, &unknown) || unknown.Err != nil {
		t.Errorf("retry after a restart: %v, want the outcome unknown again, nothing sent", err)
	}
	if n := e.fake.Requests(fakeapi.TriggerUpdate); n != 1 {
		t.Errorf("%d update requests, want 1", n)
	}
	e.clock.Advance(e.trk.cfg.Retention)
	e.tick()
	if _, err := e.trk.Deploy(ctx, lost); err != nil {
		t.Errorf("after retention the key is free: %v", err)
	}
}

// TestDeploymentStateIsCheckedAndSalvaged: state check reads the
// deployments and their trigger intents as readable; salvage sorts loose
// ones into their buckets (a deployment intent is not taken for a create
// intent), prefers the final version of a deployment, and keeps them in
// the salvaged file, where a new tracker follows them on.
func TestDeploymentStateIsCheckedAndSalvaged(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	e.open(deployConfig(e))
	e.fake.HoldDeployments(true)
	d := e.deploy(KindPreview, "b")
	e.tickUntil(5, "in progress", func() bool { return e.deployStatus(d.Op.ID) == "in_progress" })
	e.close()
	rep, err := CheckState(e.statePath)
	if err != nil || rep.Entries[bucketDeployments] != 1 || rep.Unreadable != 0 || rep.Schema != stateSchema {
		t.Fatalf("check: %+v, %v", rep, err)
	}
	di, err := json.Marshal(&deployment.Intent{IntentBase: engine.IntentBase{ID: "di_1", Project: "p1", RequestHash: "h", StartedAt: t0}, Kind: KindUpdate})
	if err != nil {
		t.Fatal(err)
	}
	if b, ok := classify("", []byte(storeKey("p1", "di_1")), di); !ok || b != bucketDeployIntents {
		t.Errorf("a loose deployment intent classified %q %v", b, ok)
	}
	ci, _ := json.Marshal(&job.Intent{IntentBase: engine.IntentBase{ID: "ci_1", Project: "p1", RequestHash: "h", StartedAt: t0}})
	if _, ok := classify(bucketDeployIntents, []byte(storeKey("p1", "ci_1")), ci); ok {
		t.Error("a create intent accepted as a deployment intent")
	}
	running := deployment.Record{Kind: KindUpdate, StatusID: "x", Op: engine.Op{Project: "p1", Origin: OriginGateway, Status: "in_progress"}}
	done := running
	done.Status, done.Counted = "success", true
	ra, _ := json.Marshal(&running)
	rb, _ := json.Marshal(&done)
	for _, pair := range [][2][]byte{{ra, rb}, {rb, ra}} {
		var got deployment.Record
		if json.Unmarshal(pick(bucketDeployments, pair[0], pair[1]), &got) != nil || !got.Counted {
			t.Errorf("picked %+v, want the final version", got)
		}
	}
	salvaged := e.statePath + ".salvaged"
	if _, err := SalvageState(e.statePath, salvaged); err != nil {
		t.Fatal(err)
	}
	e.statePath = salvaged
	e.open(deployConfig(e))
	e.fake.HoldDeployments(false)
	e.tickUntil(5, "followed on from the salvaged file", func() bool { return e.deployStatus(d.Op.ID) == "success" })
}

// TestDeploymentWriteFailure: a deployment triggered upstream whose write
// fails is followed in memory; a retry with its key is answered as the
// trigger was (a StateError), never sent again; once the state takes
// writes, the next poll writes it and deletes its intent, so that after a
// restart its key replays it and no trigger is of unknown outcome.
func TestDeploymentWriteFailure(t *testing.T) {
	t.Parallel()
	e := newEnv(t, fakeapi.Options{})
	trk := e.open(deployConfig(e))
	fs := &failingStore{stateStore: trk.store.get()}
	trk.store.set(fs)
	fs.failDeployments.Store(true)
	req := DeployRequest{Project: "p1", Kind: KindUpdate, IdempotencyKey: "k"}
	var se *StateError
	if _, err := trk.Deploy(context.Background(), req); !errors.As(err, &se) || se.What != "deployment" {
		t.Fatalf("write failure: %v, want a deployment's StateError", err)
	}
	if _, err := trk.Deploy(context.Background(), req); !errors.As(err, &se) {
		t.Errorf("retry before the write landed: %v, want a StateError", err)
	}
	if n := e.fake.Deployments("p1", "update"); n != 1 {
		t.Errorf("%d updates upstream, want 1", n)
	}
	fs.failDeployments.Store(false)
	e.tick()
	e.open(deployConfig(e))
	d, err := e.trk.Deploy(context.Background(), req)
	if err != nil || !d.Replayed {
		t.Errorf("retry after a restart: %+v, %v; want a replay", d, err)
	}
	if n := len(e.trk.DeploymentOps().Unknown("p1")); e.trk.RecentDeployments(KindUpdate, time.Hour)["p1"] == nil || n != 0 {
		t.Errorf("intents left after the write landed: %d", n)
	}
}
