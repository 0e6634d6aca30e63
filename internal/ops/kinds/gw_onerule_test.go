package kinds_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

// TestOneRuleForEveryKind (issue 38, item 6), over HTTP on a real tracker
// and the fake, for agent jobs and deployments alike: a project exported
// without the kind answers 403 naming the setting, one not configured 404;
// a body that is JSON but not an object is called so; ?status= on every
// kind's list filters, and a status no operation has is 400; the audit
// line of a trigger names its id with the kind's key and has no empty
// field.
func TestOneRuleForEveryKind(t *testing.T) {
	t.Parallel()
	e := newDeployEnv(t, "d1") // d1 takes both; jobs-only no deployments; d2 no agent jobs
	for _, c := range []struct {
		method, path, body string
		status             int
		says               string
	}{
		{"POST", "/api/v2/agent/d2/job", `{"prompt":"x"}`, http.StatusForbidden, "agent_jobs"},
		{"POST", "/api/v1/project/update/jobs-only", "", http.StatusForbidden, "deployments: true"},
		{"POST", "/api/v2/agent/nowhere/job", `{"prompt":"x"}`, http.StatusNotFound, "not configured"},
		{"POST", "/api/v1/project/update/nowhere", "", http.StatusNotFound, "not configured"},
		{"POST", "/api/v2/agent/d1/job", `[1]`, http.StatusBadRequest, "expected a JSON object"},
		{"POST", "/api/v1/project/preview/d1", `[1]`, http.StatusBadRequest, "expected a JSON object"},
		{"POST", "/api/v1/project/update/d1", `"x"`, http.StatusBadRequest, "expected a JSON object"},
		{"POST", "/api/v1/project/update/d1", `{"a":`, http.StatusBadRequest, "malformed JSON"},
		{"GET", "/api/v1/project/d1/deployments?status=done", "", http.StatusBadRequest, "status must be one of"},
		{"GET", "/api/v2/agent/d1/jobs?status=done", "", http.StatusBadRequest, "status must be one of"},
		{"POST", "/api/v1/static-export/jobs-only/jobs", `{"domain":"docs.example.com"}`, http.StatusForbidden, "static_exports: true"},
		{"POST", "/api/v1/static-export/nowhere/jobs", `{"domain":"docs.example.com"}`, http.StatusNotFound, "not configured"},
		{"POST", "/api/v1/static-export/d1/jobs", `[1]`, http.StatusBadRequest, "expected a JSON object"},
		{"GET", "/api/v1/static-export/d1/jobs?status=done", "", http.StatusBadRequest, "status must be one of"},
		{"POST", triggerPath("jobs-only", fakeapi.AutomationAgentJob), "", http.StatusForbidden, "automations:"},
		{"POST", triggerPath("nowhere", fakeapi.AutomationAgentJob), "", http.StatusNotFound, "not configured"},
		{"POST", triggerPath("d1", fakeapi.AutomationAgentJob), `[1]`, http.StatusBadRequest, "expected a JSON object"},
		{"GET", "/api/v1/workflow/d1/runs?status=done", "", http.StatusBadRequest, "status must be one of"},
	} {
		r := e.call(c.method, c.path, c.body)
		var body struct{ Error string }
		if r.status != c.status || json.Unmarshal(r.body, &body) != nil || !strings.Contains(body.Error, c.says) {
			t.Errorf("%s %s %s: HTTP %d %s, want %d saying %q", c.method, c.path, c.body, r.status, r.body, c.status, c.says)
		}
	}

	id, _ := e.triggered(e.call("POST", "/api/v1/project/update/d1", ""))
	e.waitStatus(id, "success")
	for status, want := range map[string]int{"success": 1, "failure": 0, "queued": 0} {
		var l DeploymentList
		r := e.call("GET", "/api/v1/project/d1/deployments?status="+status, "")
		if r.status != http.StatusOK || json.Unmarshal(r.body, &l) != nil || len(l.Deployments) != want {
			t.Errorf("deployments?status=%s: HTTP %d %s, want %d", status, r.status, r.body, want)
		}
	}

	logs := e.logs.String()
	var line string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, `msg="deployment triggered"`) {
			line = l
		}
	}
	if !strings.Contains(line, "deployment="+id) || strings.Contains(line, " job=") || strings.Contains(line, "=\"\"") ||
		strings.HasSuffix(line, "=") || strings.Contains(line, "= ") {
		t.Errorf("audit line %q: want deployment=%s, no job=, no empty field", line, id)
	}
}
