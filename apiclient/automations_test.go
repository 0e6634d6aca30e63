package apiclient_test

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

// TestTriggerAutomation triggers the fake's two runnable automations: the
// request sent (POST, no body, the path), the answer decoded (202, the
// three ids), and what get-job says of each run's jobId: an agent job
// that ends for one, 404 (not followable) for the other. Each trigger is
// counted under trigger_automation.
func TestTriggerAutomation(t *testing.T) {
	t.Parallel()
	clk := newClock()
	reg := prometheus.NewPedanticRegistry()
	m := apiclient.NewMetrics(reg)
	_, rec, srv := startFake(t, fakeapi.Options{Now: clk.Now})
	c := newClient(t, srv.URL, func(cfg *apiclient.Config) { cfg.Metrics = m })
	ctx := testCtx(t)

	run, err := c.TriggerAutomation(ctx, testProject, fakeapi.AutomationAgentJob)
	if err != nil {
		t.Fatalf("TriggerAutomation: %v", err)
	}
	last := rec.requests()[len(rec.requests())-1]
	if last.method != "POST" || last.uri != "/v1/workflow/"+testProject+"/"+fakeapi.AutomationAgentJob+"/trigger" || len(last.body) != 0 {
		t.Errorf("sent %s %s with body %q", last.method, last.uri, last.body)
	}
	if last.header.Get("Authorization") != "Bearer "+testKey {
		t.Error("the trigger was not sent with the key")
	}
	if run.Code != http.StatusAccepted || run.SchemaID != fakeapi.AutomationAgentJob || run.InstanceID == "" || run.JobID == "" {
		t.Fatalf("answer %+v, want 202 with the automation, a run and a job", run)
	}
	job, err := c.GetJob(ctx, testProject, run.JobID)
	if err != nil || job.Status != apiclient.StatusActive {
		t.Fatalf("the run's job: %+v, %v; want active", job, err)
	}
	clk.Advance(2 * time.Minute)
	if job, err = c.GetJob(ctx, testProject, run.JobID); err != nil || !apiclient.IsTerminal(job.Status) {
		t.Errorf("the run's job two minutes on: %+v, %v; want it ended", job, err)
	}

	other, err := c.TriggerAutomation(ctx, testProject, fakeapi.AutomationUnfollowed)
	if err != nil || other.JobID == "" || other.JobID == run.JobID || other.InstanceID == run.InstanceID {
		t.Fatalf("second automation: %+v, %v; want a run of its own", other, err)
	}
	if _, err := c.GetJob(ctx, testProject, other.JobID); apiclient.StatusCode(err) != http.StatusNotFound {
		t.Errorf("get-job of an unfollowed run's job: %v, want 404", err)
	}

	requests, _ := m.Collectors()
	if got := testutil.ToFloat64(requests.WithLabelValues(apiclient.EndpointTriggerAutomation, "202")); got != 2 {
		t.Errorf("{trigger_automation,202} = %v, want 2", got)
	}
	if !slices.Contains(apiclient.OperationEndpoints, apiclient.EndpointTriggerAutomation) {
		t.Error("trigger_automation is not among the client's operation endpoints (its metrics are not pre-created)")
	}
	if got := histogramCount(t, reg, apiclient.EndpointTriggerAutomation); got != 2 {
		t.Errorf("trigger_automation duration count = %d, want 2", got)
	}
}

// TestTriggerAutomationRefusals: the API's 400s and 404s reach the caller
// as *APIError with its {error} text, never retried; the organization's
// 10 per 10 s, shared with updates, answers 429; an id that is empty,
// holds a NUL or a newline, is 10,000 bytes or a dot segment never leaves,
// and the error does not quote it; an id with a slash is sent escaped.
func TestTriggerAutomationRefusals(t *testing.T) {
	t.Parallel()
	clk := newClock()
	fake, rec, srv := startFake(t, fakeapi.Options{Now: clk.Now, Projects: []string{testProject, "other"},
		Automations: append([]fakeapi.Automation{{ID: "wf_other", Project: "other"}}, fakeapi.DefaultAutomations...)})
	c := newClient(t, srv.URL, nil)
	ctx := testCtx(t)

	for _, tc := range []struct {
		id     string
		status int
		text   string
	}{
		{fakeapi.AutomationInactive, http.StatusBadRequest, "not active"},
		{fakeapi.AutomationOnPush, http.StatusBadRequest, "custom schedule"},
		{"wf~bad", http.StatusBadRequest, "malformed"},
		{"wf_nope", http.StatusNotFound, "not found"},
		{"wf_other", http.StatusNotFound, "not found"}, // another project's
	} {
		before := fake.Requests(fakeapi.TriggerAutomation)
		_, err := c.TriggerAutomation(ctx, testProject, tc.id)
		var apiErr *apiclient.APIError
		if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status || !strings.Contains(apiErr.Message, tc.text) ||
			apiErr.Endpoint != apiclient.EndpointTriggerAutomation {
			t.Errorf("%s: %v, want %d with the API's text %q", tc.id, err, tc.status, tc.text)
		}
		if err != nil && strings.Contains(err.Error(), testKey) {
			t.Errorf("%s: the error holds the key", tc.id)
		}
		if n := fake.Requests(fakeapi.TriggerAutomation) - before; n != 1 {
			t.Errorf("%s: %d requests, want 1 (a refusal is not retried)", tc.id, n)
		}
	}
	if fake.AutomationRuns() != 0 {
		t.Errorf("%d runs after refusals only", fake.AutomationRuns())
	}
	// A run queued whose answer was lost: an error, and never sent again
	// (it would be a second run).
	fake.SetFault(fakeapi.TriggerAutomation, fakeapi.Fault{DropAnswer: true, Remaining: 1})
	before := fake.Requests(fakeapi.TriggerAutomation)
	if _, err := c.TriggerAutomation(ctx, testProject, fakeapi.AutomationUnfollowed); err == nil ||
		fake.Requests(fakeapi.TriggerAutomation)-before != 1 || fake.AutomationRuns() != 1 {
		t.Errorf("answer lost: %v after %d requests and %d runs, want an error after one of each", err, fake.Requests(fakeapi.TriggerAutomation)-before, fake.AutomationRuns())
	}
	clk.Advance(fakeapi.UpdateWindow) // the limit below starts afresh

	long := strings.Repeat("a", 10000)
	sent := len(rec.requests())
	for _, ids := range [][2]string{{testProject, ""}, {testProject, "wf\x00x"}, {testProject, "wf\nx"}, {testProject, long},
		{testProject, ".."}, {testProject, "wf\u2028x"}, {testProject, "wf\xffx"}, {"", "wf"}, {"do\ncs", "wf"}, {long, "wf"}} {
		_, err := c.TriggerAutomation(ctx, ids[0], ids[1])
		if err == nil {
			t.Errorf("ids %q: sent", ids)
			continue
		}
		if len(err.Error()) > 200 || strings.ContainsAny(err.Error(), "\x00\n") {
			t.Errorf("ids %.20q: the error quotes the id: %.300q", ids, err)
		}
	}
	if n := len(rec.requests()) - sent; n != 0 {
		t.Errorf("%d requests left with ids that must not be sent", n)
	}

	if _, err := c.TriggerAutomation(ctx, testProject, "wf/x"); apiclient.StatusCode(err) != http.StatusBadRequest {
		t.Errorf("wf/x: %v, want the API's 400", err)
	}
	if got := rec.requests()[len(rec.requests())-1].uri; got != "/v1/workflow/"+testProject+"/wf%2Fx/trigger" {
		t.Errorf("wf/x sent as %s, want one escaped segment", got)
	}

	// The organization's 10 per 10 s: 5 updates and 5 runs spend it.
	for i := range fakeapi.UpdateLimit {
		var err error
		if i%2 == 0 {
			_, err = c.TriggerUpdate(ctx, testProject)
		} else {
			_, err = c.TriggerAutomation(ctx, testProject, fakeapi.AutomationUnfollowed)
		}
		if err != nil {
			t.Fatalf("trigger %d: %v", i, err)
		}
	}
	_, err := c.TriggerAutomation(ctx, testProject, fakeapi.AutomationAgentJob)
	var apiErr *apiclient.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests || apiErr.RetryAfter <= 0 {
		t.Errorf("11th trigger in 10 s: %v, want 429 with Retry-After", err)
	}
	if fake.AutomationRuns() != 1+fakeapi.UpdateLimit/2 {
		t.Errorf("%d runs, want %d", fake.AutomationRuns(), 1+fakeapi.UpdateLimit/2)
	}
}

// TestTriggerAutomationTolerantReader: every field of the 202 is optional
// in the reference: an empty body or object is a queued run that cannot be
// followed (the automation is the one asked for); an id the client would
// not send is not handed back either.
func TestTriggerAutomationTolerantReader(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body string
		want apiclient.AutomationTrigger
	}{
		{``, apiclient.AutomationTrigger{SchemaID: "wf", Code: 202}},
		{`{}`, apiclient.AutomationTrigger{SchemaID: "wf", Code: 202}},
		{`{"schemaId": null, "jobId": null, "instanceId": "i1", "extra": [1]}`, apiclient.AutomationTrigger{SchemaID: "wf", InstanceID: "i1", Code: 202}},
		{`{"schemaId": "wf", "instanceId": "i\n1", "jobId": "` + strings.Repeat("j", 5000) + `"}`, apiclient.AutomationTrigger{SchemaID: "wf", Code: 202}},
	} {
		_, srv := serve(t, func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusAccepted)
			_, _ = w.Write([]byte(tc.body))
		})
		got, err := newClient(t, srv.URL, nil).TriggerAutomation(testCtx(t), testProject, "wf")
		if err != nil || got != tc.want {
			t.Errorf("answer %.60q: %+v, %v; want %+v", tc.body, got, err, tc.want)
		}
	}
}
