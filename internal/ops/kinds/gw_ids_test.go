package kinds_test

import (
	"cmp"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
)

// opKind is one kind of operation as the id tests drive it over HTTP:
// how to start one, where it is listed and how a client hands one over.
type opKind struct {
	name     string
	endpoint string // the fake's endpoint that starts one
	start    func(e *deployEnv) response
	list     string // the project's list route
	track    func(id string) string
	// dropped: the client drops the API's unusable ids (automations: the
	// run is kept under its trigger's intent, not followed), so the start
	// is answered 202 without them.
	dropped bool
	// reason is what the 502 of an unusable id says ("" : "cannot be
	// kept", the engine's; a client that checks the id itself says so).
	reason string
}

var idKinds = []opKind{
	{name: "job", endpoint: fakeapi.CreateJob,
		start: func(e *deployEnv) response { return e.call("POST", "/api/v2/agent/d1/job", `{"prompt":"x"}`) },
		list:  "/api/v2/agent/d1/jobs",
		track: func(id string) string { return "/api/v2/agent/d1/job/" + url.PathEscape(id) + "/track" }},
	{name: "deployment", endpoint: apiclient.EndpointTriggerUpdate,
		start: func(e *deployEnv) response { return e.call("POST", "/api/v1/project/update/d1", "") },
		list:  "/api/v1/project/d1/deployments",
		track: func(id string) string { return "/api/v1/project/d1/update-status/" + url.PathEscape(id) + "/track" }},
	{name: "static_export", endpoint: fakeapi.StartStaticExport, reason: "no usable id",
		start: func(e *deployEnv) response {
			return e.call("POST", "/api/v1/static-export/d1/jobs", `{"domain":"docs.example.com"}`)
		},
		list:  "/api/v1/static-export/d1/jobs",
		track: func(id string) string { return "/api/v1/static-export/d1/jobs/" + url.PathEscape(id) + "/track" }},
	{name: "automation", endpoint: fakeapi.TriggerAutomation, dropped: true,
		start: func(e *deployEnv) response { return e.call("POST", triggerPath("d1", fakeapi.AutomationAgentJob), "") },
		list:  "/api/v1/workflow/d1/runs",
		track: func(id string) string { return "/api/v1/workflow/d1/runs/" + url.PathEscape(id) + "/track" }},
}

// TestIDKindsCoverEveryKind: the id tests drive every kind the engine
// follows (Kinds); a kind added without its row fails here.
func TestIDKindsCoverEveryKind(t *testing.T) {
	for _, k := range engine.Kinds() {
		if name := k.Declare().Name; !slices.ContainsFunc(idKinds, func(o opKind) bool { return o.name == name }) {
			t.Errorf("kind %s has no row in idKinds", name)
		}
	}
}

// TestIDsFromTheAPIAreChecked: an API that starts an operation and answers
// a 1 MB id, or one with a newline or a NUL, gets a small 502 (the
// operation is of unknown outcome: something started upstream), and the
// id is never stored, listed or answered (it once gave a 1 MB 500 from
// bbolt's "key too large", after the deployment had started).
func TestIDsFromTheAPIAreChecked(t *testing.T) {
	t.Parallel()
	for _, k := range idKinds {
		for name, suffix := range map[string]string{"1MB": strings.Repeat("x", 1<<20), "newline": "\nlevel=error", "NUL": "\x00"} {
			t.Run(k.name+"/"+name, func(t *testing.T) {
				t.Parallel()
				e := newDeployEnv(t, "d1")
				e.fake.SetFault(k.endpoint, fakeapi.Fault{IDSuffix: suffix, Remaining: 1})
				r := k.start(e)
				if k.dropped {
					if r.status != http.StatusAccepted || len(r.body) > 2048 {
						t.Fatalf("start: HTTP %d, %d bytes (%.200s), want a small 202 without the ids", r.status, len(r.body), r.body)
					}
					return
				}
				if r.status != http.StatusBadGateway || len(r.body) > 2048 {
					t.Fatalf("start: HTTP %d, %d bytes (%.200s), want a small 502", r.status, len(r.body), r.body)
				}
				if !strings.Contains(string(r.body), cmp.Or(k.reason, "cannot be kept")) {
					t.Errorf("start: %s, want the reason", r.body)
				}
				l := e.call("GET", k.list, "")
				if l.status != http.StatusOK || len(l.body) > 2048 || strings.Contains(string(l.body), "xxxxxxxx") {
					t.Errorf("list: HTTP %d, %d bytes", l.status, len(l.body))
				}
			})
		}
	}
}

// TestIDsFromClientsAreChecked: a track (or any route with an id) with an
// id of 10,000 characters, or with a NUL or a newline, is refused with a
// small 400 before anything is sent upstream or stored.
func TestIDsFromClientsAreChecked(t *testing.T) {
	t.Parallel()
	e := newDeployEnv(t, "d1")
	for _, k := range idKinds {
		for _, id := range []string{strings.Repeat("a", 10000), "a\x00b", "a\nb", strings.Repeat("a", bounded.MaxIDBytes+1)} {
			before := e.fake.Requests(apiclient.EndpointGetJob) + e.fake.Requests(apiclient.EndpointDeploymentStatus)
			r := e.call("POST", k.track(id), "")
			var body struct{ Error string }
			if r.status != http.StatusBadRequest || len(r.body) > 512 || json.Unmarshal(r.body, &body) != nil {
				t.Errorf("%s track of %s: HTTP %d, %d bytes %.200s, want a small 400", k.name, bounded.Excerpt(id), r.status, len(r.body), r.body)
			}
			if after := e.fake.Requests(apiclient.EndpointGetJob) + e.fake.Requests(apiclient.EndpointDeploymentStatus); after != before {
				t.Errorf("%s track of a bad id reached the API", k.name)
			}
		}
	}
	for _, path := range []string{"/api/v2/agent/d1/job/" + strings.Repeat("a", 200), "/api/v1/project/update-status/a%0Ab",
		"/api/v2/agent/d1/unknown-creates/" + strings.Repeat("i", 200), "/api/v1/static-export/d1/jobs/" + strings.Repeat("s", 200),
		triggerPath("d1", strings.Repeat("w", 200))} {
		method := "GET"
		switch {
		case strings.Contains(path, "unknown-creates"):
			method = "DELETE"
		case strings.HasSuffix(path, "/trigger"):
			method = "POST"
		}
		if r := e.call(method, path, ""); r.status != http.StatusBadRequest {
			t.Errorf("%s %.60s: HTTP %d, want 400", method, path, r.status)
		}
	}
}
