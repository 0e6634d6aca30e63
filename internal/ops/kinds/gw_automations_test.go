package kinds_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/gateway"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

func triggerPath(project, automation string) string {
	return "/api/v1/workflow/" + project + "/" + automation + "/trigger"
}

// run waits until the gateway shows project's run id with status.
func (e *deployEnv) waitRun(project, id, status string) AutomationRunView {
	e.t.Helper()
	var v AutomationRunView
	testutil.Eventually(e.t, 0, "run "+id+" "+status, func() bool {
		r := e.call("GET", "/api/v1/workflow/"+project+"/runs/"+id, "")
		return r.status == http.StatusOK && json.Unmarshal(r.body, &v) == nil && v.Status == status
	}, func() string { b, _ := json.Marshal(v); return string(b) })
	return v
}

func (e *deployEnv) triggerRun(project, automation string, hdr ...string) (jobID string) {
	e.t.Helper()
	r := e.call("POST", triggerPath(project, automation), "", hdr...)
	var body map[string]string
	if r.status != http.StatusAccepted || json.Unmarshal(r.body, &body) != nil || body["schemaId"] != automation || body["instanceId"] == "" {
		e.t.Fatalf("trigger %s: HTTP %d %s, want 202 {schemaId, instanceId, jobId}", automation, r.status, r.body)
	}
	return body["jobId"]
}

// TestAutomationsShareTheUpdateLimit: 6 deployment updates and 6
// automation triggers of one organization in 10 s: 10 reach the API (the
// fake counts them; its own limit of 10 is on, so two more would have met
// an upstream 429), the other 2 are refused here with 429 and Retry-After.
// The window rolls. (Organizations apart: TestDeploymentLocalLimits.)
func TestAutomationsShareTheUpdateLimit(t *testing.T) {
	t.Parallel()
	e := newDeployEnvWith(t, func(*fakeapi.Options) {})
	refused := 0
	for i := range 12 {
		path := "/api/v1/project/update/d1"
		if i%2 == 1 {
			path = triggerPath("d2", fakeapi.AutomationAgentJob) // d2: the same organization
		}
		r := e.call("POST", path, "")
		switch r.status {
		case http.StatusAccepted:
		case http.StatusTooManyRequests:
			refused++
			if r.header.Get("Retry-After") == "" || !strings.Contains(r.errorMessage(t), "nothing was sent") {
				t.Errorf("refusal %d: Retry-After %q, %s", i, r.header.Get("Retry-After"), r.body)
			}
		default:
			t.Fatalf("request %d (%s): HTTP %d %s", i, path, r.status, r.body)
		}
	}
	upstream := e.fake.Requests(apiclient.EndpointTriggerUpdate) + e.fake.Requests(fakeapi.TriggerAutomation)
	if upstream != gateway.UpdateLimit || refused != 2 {
		t.Errorf("%d requests reached the API and %d were refused here, want %d and 2", upstream, refused, gateway.UpdateLimit)
	}
	if v, _ := e.value("mintlify_automation_triggers_total", "project", "d2", "automation", "other", "result", "rate_limited"); v != 1 {
		t.Errorf("rate_limited automation triggers %v, want 1", v)
	}
	e.clock.Advance(gateway.UpdateWindow)
	if r := e.call("POST", triggerPath("d2", fakeapi.AutomationAgentJob), ""); r.status != http.StatusAccepted {
		t.Errorf("after the window: HTTP %d %s", r.status, r.body)
	}
}

// TestAutomationRunFollowedAsAgentJob: a run of wf_docs_refresh (an agent
// job upstream) is followed to its end as an agent job of origin
// automation, counted by the agent job metrics and as followed; a run of
// wf_changelog (get-job answers 404) is recorded not followed. The named
// automation is its own label value, the others "other".
func TestAutomationRunFollowedAsAgentJob(t *testing.T) {
	t.Parallel()
	e := newDeployEnv(t, "d3")
	jobID := e.triggerRun("d3", fakeapi.AutomationAgentJob)
	if v, ok := e.trk.AutomationOps().One("d3", jobID); !ok || v.JobID != jobID {
		t.Fatalf("the run is not recorded before the answer: %+v", v)
	}
	e.clock.Advance(gateway.UpdateWindow) // 10 s: past the sandbox run's 3 s
	v := e.waitRun("d3", jobID, "completed")
	if v.Follow != FollowAgentJob || v.SchemaID != fakeapi.AutomationAgentJob {
		t.Errorf("run %+v, want followed as an agent job", v)
	}
	job, ok := e.trk.Job("d3", jobID)
	if !ok || job.Tracking.Origin != OriginAutomation {
		t.Errorf("agent job %+v, want tracked with origin automation", job)
	}
	testutil.Eventually(t, 0, "the job counted", func() bool {
		n, _ := e.value("mintlify_agent_jobs_finished_total", "project", "d3", "status", "completed")
		return n == 1
	}, nil)
	if n, _ := e.value("mintlify_automation_runs_total", "project", "d3", "automation", fakeapi.AutomationAgentJob, "follow", "agent_job"); n != 1 {
		t.Errorf("runs followed %v, want 1", n)
	}

	bg := e.triggerRun("d3", fakeapi.AutomationUnfollowed)
	nf := e.waitRun("d3", bg, FollowNone)
	if nf.Follow != FollowNone {
		t.Errorf("unfollowable run %+v", nf)
	}
	if n, _ := e.value("mintlify_automation_runs_total", "project", "d3", "automation", fakeapi.AutomationUnfollowed, "follow", "not_followed"); n != 1 {
		t.Errorf("runs not followed %v, want 1", n)
	}
	if _, ok := e.trk.Job("d3", bg); ok {
		t.Errorf("a run get-job does not know was handed to the agent jobs")
	}
	st := rowsOf[statusAutomation](e.trk.Status(), "automations")
	if len(st) != 2 || st[0].Follow != FollowNone || st[1].Status != "completed" {
		t.Errorf("status page rows %+v, want the not followed run first, then the completed one", st)
	}
	if n, _ := e.value("mintlify_automation_triggers_total", "project", "d3", "automation", fakeapi.AutomationAgentJob, "result", "accepted"); n != 1 {
		t.Errorf("accepted triggers of the named automation %v, want 1", n)
	}
}

// TestAutomationRefusals: an automation not listed is refused here (403,
// nothing sent), the API's 400 and 404 reach the client as JSON errors
// with their status, a project without automations is 403, and a retry
// with an Idempotency-Key replays the first answer without sending.
func TestAutomationRefusals(t *testing.T) {
	t.Parallel()
	e := newDeployEnv(t, "d1")
	cases := []struct {
		name, path string
		status     int
		result     string
	}{
		{"not listed", triggerPath("d1", fakeapi.AutomationUnfollowed), http.StatusForbidden, "not_allowed"},
		{"inactive (API 400)", triggerPath("d2", fakeapi.AutomationInactive), http.StatusBadRequest, "bad_request"},
		{"unknown (API 404)", triggerPath("d2", "wf_nope"), http.StatusNotFound, "not_found"},
		{"project without automations", triggerPath("jobs-only", fakeapi.AutomationAgentJob), http.StatusForbidden, ""},
		{"unknown project", triggerPath("zz", fakeapi.AutomationAgentJob), http.StatusNotFound, ""},
		{"GET a trigger", triggerPath("d1", fakeapi.AutomationAgentJob), http.StatusMethodNotAllowed, ""},
	}
	for _, c := range cases {
		method := "POST"
		if strings.HasPrefix(c.name, "GET") {
			method = "GET"
		}
		r := e.call(method, c.path, "")
		if r.status != c.status || r.errorMessage(t) == "" {
			t.Errorf("%s: HTTP %d %s, want %d with a JSON error", c.name, r.status, r.body, c.status)
		}
	}
	if n := e.fake.Requests(fakeapi.TriggerAutomation); n != 2 {
		t.Errorf("%d triggers upstream, want 2 (the API's 400 and 404)", n)
	}
	if n, _ := e.value("mintlify_automation_triggers_total", "project", "d1", "automation", "other", "result", "not_allowed"); n != 1 {
		t.Errorf("not_allowed %v, want 1", n)
	}
	if n, _ := e.value("mintlify_automation_triggers_total", "project", "d2", "automation", "other", "result", "not_found"); n != 1 {
		t.Errorf("not_found %v, want 1", n)
	}
	first := e.triggerRun("d1", fakeapi.AutomationAgentJob, "Idempotency-Key", "ci-1")
	r := e.call("POST", triggerPath("d1", fakeapi.AutomationAgentJob), "", "Idempotency-Key", "ci-1")
	if r.status != http.StatusAccepted || r.header.Get("Idempotent-Replayed") != "true" || !strings.Contains(string(r.body), first) {
		t.Errorf("retry with the key: HTTP %d %s, want a replay of %s", r.status, r.body, first)
	}
	if n := e.fake.AutomationRuns(); n != 1 {
		t.Errorf("%d runs upstream, want 1", n)
	}
}

// lostTrigger triggers automation of project with key, the fake dropping
// its answer (502: an outcome unknown), and returns the project's
// unknown-triggers, checked to list it alone.
func (e *deployEnv) lostTrigger(project, automation, key string) UnknownAutomationTriggerList {
	e.t.Helper()
	e.fake.SetFault(fakeapi.TriggerAutomation, fakeapi.Fault{DropAnswer: true, Remaining: 1})
	if r := e.call("POST", triggerPath(project, automation), "", "Idempotency-Key", key); r.status != http.StatusBadGateway {
		e.t.Fatalf("dropped answer: HTTP %d %s, want 502", r.status, r.body)
	}
	var list UnknownAutomationTriggerList
	r := e.call("GET", "/api/v1/workflow/"+project+"/unknown-triggers", "")
	if json.Unmarshal(r.body, &list) != nil || len(list.UnknownTriggers) != 1 || list.UnknownTriggers[0].IdempotencyKey != key {
		e.t.Fatalf("unknown-triggers: HTTP %d %s", r.status, r.body)
	}
	return list
}

// TestAutomationUnknownOutcome: a trigger whose answer is lost is listed
// under unknown-triggers, counted in its gauge and answers 409 for its
// key; settling it with the run's jobId follows the run and binds the key.
func TestAutomationUnknownOutcome(t *testing.T) {
	t.Parallel()
	e := newDeployEnv(t, "d1")
	list := e.lostTrigger("d1", fakeapi.AutomationAgentJob, "lost-1")
	if v, _ := e.value("mintlify_automation_unknown_outcomes", "project", "d1"); v != 1 {
		t.Errorf("unknown outcomes gauge %v, want 1", v)
	}
	if r := e.call("POST", triggerPath("d1", fakeapi.AutomationAgentJob), "", "Idempotency-Key", "lost-1"); r.status != http.StatusConflict {
		t.Errorf("retry of an unknown outcome: HTTP %d %s, want 409", r.status, r.body)
	}
	jobs := e.fake.AutomationJobIDs("d1")
	in := list.UnknownTriggers[0].ID
	if r := e.call("POST", "/api/v1/workflow/d1/runs/"+jobs[0]+"/track?intent="+in, ""); r.status != http.StatusCreated {
		t.Fatalf("settle: HTTP %d %s", r.status, r.body)
	}
	if v, _ := e.value("mintlify_automation_unknown_outcomes", "project", "d1"); v != 0 {
		t.Errorf("unknown outcomes gauge %v after the settle, want 0", v)
	}
	r := e.call("POST", triggerPath("d1", fakeapi.AutomationAgentJob), "", "Idempotency-Key", "lost-1")
	if r.status != http.StatusAccepted || !strings.Contains(string(r.body), jobs[0]) {
		t.Errorf("retry after the settle: HTTP %d %s, want the run", r.status, r.body)
	}
	if n := e.fake.AutomationRuns(); n != 1 {
		t.Errorf("%d runs upstream, want 1", n)
	}
}

// TestAutomationUnknownOutcomeOfARunNotFollowed: settling a trigger whose
// run get-job does not know (an automation that is no agent job) records
// the run not_followed and counts it, as the trigger's own answer would
// have, rather than answering 404: a replica handing such a run over
// (handoff) would otherwise leave it an unknown outcome for good.
func TestAutomationUnknownOutcomeOfARunNotFollowed(t *testing.T) {
	t.Parallel()
	e := newDeployEnv(t, "d3")
	list := e.lostTrigger("d3", fakeapi.AutomationUnfollowed, "lost-2")
	jobs := e.fake.AutomationJobIDs("d3")
	r := e.call("POST", "/api/v1/workflow/d3/runs/"+jobs[0]+"/track?intent="+list.UnknownTriggers[0].ID, "")
	if r.status != http.StatusCreated || !strings.Contains(string(r.body), "not_followed") {
		t.Fatalf("settle of a run get-job does not know: HTTP %d %s, want 201 with the run not_followed", r.status, r.body)
	}
	if v, _ := e.value("mintlify_automation_unknown_outcomes", "project", "d3"); v != 0 {
		t.Errorf("unknown outcomes gauge %v after the settle, want 0", v)
	}
	if v, _ := e.value("mintlify_automation_runs_total", "project", "d3", "automation", fakeapi.AutomationUnfollowed, "follow", "not_followed"); v != 1 {
		t.Errorf("runs_total{follow=not_followed} = %v, want 1", v)
	}
}

// TestAutomationRunReadThrough (issue 44, 2): a run the gateway does not
// follow (an agent job started elsewhere) is read from the API with the
// organization's key and answered as the API answers it, and stays not
// followed; one the API does not know is the API's 404.
func TestAutomationRunReadThrough(t *testing.T) {
	t.Parallel()
	e := newDeployEnv(t, "d1")
	j, err := e.api.CreateJob(context.Background(), "d1", "started elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	var v apiclient.Job
	r := e.call("GET", "/api/v1/workflow/d1/runs/"+j.ID, "")
	if r.status != http.StatusOK || json.Unmarshal(r.body, &v) != nil || v.ID != j.ID || v.Status == "" {
		t.Errorf("a run not followed: HTTP %d %s, want 200 with the API's answer", r.status, r.body)
	}
	if r := e.call("GET", "/api/v1/workflow/d1/runs", ""); !strings.Contains(string(r.body), `"runs":[]`) {
		t.Errorf("a run read through is followed: %s", r.body)
	}
	if r := e.call("GET", "/api/v1/workflow/d1/runs/nope", ""); r.status != http.StatusNotFound || r.errorMessage(t) == "" {
		t.Errorf("a run the API does not know: HTTP %d %s, want 404 JSON", r.status, r.body)
	}
}
