package kinds_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

// value is the value of the series of family name with labels kv (pairs),
// and whether it exists.
func (e *deployEnv) value(name string, kv ...string) (float64, bool) {
	e.t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			for i := 0; i+1 < len(kv); i += 2 {
				if l[kv[i]] != kv[i+1] {
					continue series
				}
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue(), true
			}
			return m.GetCounter().GetValue(), true
		}
	}
	return 0, false
}

// unknownTriggers lists d1's triggers of unknown outcome over HTTP.
func (e *deployEnv) unknownTriggers() UnknownTriggerList {
	e.t.Helper()
	r := e.call("GET", "/api/v1/project/d1/unknown-triggers", "")
	var l UnknownTriggerList
	if r.status != http.StatusOK || json.Unmarshal(r.body, &l) != nil {
		e.t.Fatalf("unknown-triggers: HTTP %d %s", r.status, r.body)
	}
	return l
}

// TestUnknownTriggersSeenAndSettled (issue 36, 4.2): a trigger whose
// answer was lost is counted in mintlify_deployment_unknown_outcomes,
// listed at .../unknown-triggers and answered 409 on a retry with its key;
// followed with track?intent= it takes the key (a retry is answered with
// the deployment, nothing sent); dismissed, its key is free again.
func TestUnknownTriggersSeenAndSettled(t *testing.T) {
	t.Parallel()
	e := newDeployEnv(t)
	if v, ok := e.value("mintlify_deployment_unknown_outcomes", "project", "d1", "kind", "update"); !ok || v != 0 {
		t.Fatalf("mintlify_deployment_unknown_outcomes{d1,update} = %v (present %v), want a pre-created 0", v, ok)
	}
	lose := func(key string) UnknownTriggerList {
		t.Helper()
		e.fake.SetFault(fakeapi.TriggerUpdate, fakeapi.Fault{DropAnswer: true, Remaining: 1})
		if r := e.call("POST", "/api/v1/project/update/d1", "", "Idempotency-Key", key); r.status != http.StatusBadGateway {
			t.Fatalf("trigger with a dropped answer: HTTP %d %s, want 502", r.status, r.body)
		}
		return e.unknownTriggers()
	}

	// Followed with the status id an operator found.
	l := lose("k-follow")
	if len(l.UnknownTriggers) != 1 || l.UnknownTriggers[0].IdempotencyKey != "k-follow" || l.UnknownTriggers[0].Kind != "update" {
		t.Fatalf("unknown-triggers = %+v, want the one trigger", l)
	}
	if v, _ := e.value("mintlify_deployment_unknown_outcomes", "project", "d1", "kind", "update"); v != 1 {
		t.Errorf("mintlify_deployment_unknown_outcomes{d1,update} = %v, want 1", v)
	}
	for _, p := range rowsOf[statusProject](e.trk.Status(), "projects") {
		if p.Project == "d1" && p.UnknownOutcomes["deployment"] != 1 {
			t.Errorf("status page: d1 has %d unknown deployment triggers, want 1", p.UnknownOutcomes["deployment"])
		}
	}
	r := e.call("POST", "/api/v1/project/update/d1", "", "Idempotency-Key", "k-follow")
	if r.status != http.StatusConflict || !strings.Contains(string(r.body), "unknown-triggers/"+l.UnknownTriggers[0].ID) {
		t.Fatalf("retry of a trigger of unknown outcome: HTTP %d %s, want 409 naming how to settle it", r.status, r.body)
	}
	ids := e.fake.DeploymentIDs("d1", "update")
	if len(ids) != 1 {
		t.Fatalf("the fake started %d deployments, want 1", len(ids))
	}
	sent := e.triggers()
	r = e.call("POST", "/api/v1/project/d1/update-status/"+ids[0]+"/track?intent="+l.UnknownTriggers[0].ID, "")
	if r.status != http.StatusCreated {
		t.Fatalf("track ?intent=: HTTP %d %s, want 201", r.status, r.body)
	}
	r = e.call("POST", "/api/v1/project/update/d1", "", "Idempotency-Key", "k-follow")
	if id, _ := e.triggered(r); id != ids[0] || r.header.Get("Idempotent-Replayed") != "true" || e.triggers() != sent {
		t.Errorf("retry after the resolve: %s (replayed %q), want %s replayed with nothing sent", id, r.header.Get("Idempotent-Replayed"), ids[0])
	}
	e.waitStatus(ids[0], "success")
	if got := e.finished("d1", "update", "success"); got != 1 {
		t.Errorf("finished{d1,update,success} = %v, want 1", got)
	}

	// Dismissed: nothing was started (for the test, whatever the fake did).
	l = lose("k-dismiss")
	if len(l.UnknownTriggers) != 1 {
		t.Fatalf("unknown-triggers = %+v, want one", l)
	}
	if r := e.call("DELETE", "/api/v1/project/d1/unknown-triggers/"+l.UnknownTriggers[0].ID, ""); r.status != http.StatusNoContent {
		t.Fatalf("dismiss: HTTP %d %s", r.status, r.body)
	}
	if r := e.call("DELETE", "/api/v1/project/d1/unknown-triggers/"+l.UnknownTriggers[0].ID, ""); r.status != http.StatusNotFound {
		t.Errorf("second dismiss: HTTP %d, want 404", r.status)
	}
	if v, _ := e.value("mintlify_deployment_unknown_outcomes", "project", "d1", "kind", "update"); v != 0 {
		t.Errorf("mintlify_deployment_unknown_outcomes after settling both = %v, want 0", v)
	}
	e.triggered(e.call("POST", "/api/v1/project/update/d1", "", "Idempotency-Key", "k-dismiss"))
}
