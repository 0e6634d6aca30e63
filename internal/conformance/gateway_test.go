//go:build conformance

package conformance

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

// gatewayRoutes are the operations of the reference the gateway serves
// under /api, by file: the agent job API (v2) and the deployment and
// automation routes of openapi.json. The static export routes are the
// gateway's per project (/api/v1/static-export/{projectId}/...), not the
// reference's per organization paths: no generated request can reach
// them.
var gatewayRoutes = map[string][]string{
	"admin-openapi.json": {"/v2/agent/{projectId}/job", "/v2/agent/{projectId}/job/{id}", "/v2/agent/{projectId}/job/{id}/message"},
	"openapi.json":       {"/v1/project/update/{projectId}", "/v1/project/update-status/{statusId}", "/v1/project/preview/{projectId}", "/v1/workflow/{projectId}/{workflowSchemaId}/trigger"},
}

// knownGatewayFailures are the generated requests today's gateway fails
// (issue 44, 2: the gateway helper's to fix), as "METHOD /path: why". The
// test fails when the failures differ from these, either way: fix the
// gateway, then remove what it fixed here.
var knownGatewayFailures = []string{}

// TestGatewayUnderGeneratedRequests, part 3: Portman turns the reference of
// the routes the gateway serves into requests (one per operation, each with
// the reference's examples and Portman's contract tests; a created job's
// id and an update's status id carried into the requests that read them),
// Newman sends them to the gateway through `prism proxy --errors`. A
// request fails on an undocumented status, a 5xx, a violation Prism finds
// in the request or the answer, or a failed contract test. A planted 415
// must fail every one.
func TestGatewayUnderGeneratedRequests(t *testing.T) {
	t.Parallel()
	fake := httptest.NewServer(fakeapi.New(fakeOptions))
	t.Cleanup(fake.Close)
	x := exporter(t, "--mintlify.api-url="+fake.URL, "--mintlify.project="+project, "--mintlify.max-retries=0",
		"--analytics.min-interval=1h", "--agent.poll-interval=200ms",
		"--web.enable-agent-api", "--web.enable-deployment-api", "--web.enable-static-export-api", "--web.enable-automation-api")
	dir := t.TempDir()
	upstreams := map[string]string{}
	var collections []string
	var wg sync.WaitGroup
	errs := make(chan error, len(gatewayRoutes))
	bin := tool(t, "portman")
	for _, file := range slices.Sorted(maps.Keys(gatewayRoutes)) {
		paths := gatewayRoutes[file]
		spec := rootedSpec(t, dir, file, func(p string) bool { return slices.Contains(paths, p) })
		upstreams[file] = prism(t, "proxy", "--errors", spec, x.Base+"/api")
		out := filepath.Join(dir, strings.TrimSuffix(file, ".json")+".collection.json")
		collections = append(collections, out)
		wg.Go(func() { errs <- portman(t, bin, spec, paths, out) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	rt, url := newRouter(t, upstreams)

	failures, requests := judgeGateway(t, rt, url, collections)
	t.Logf("part 3, %d generated requests through prism proxy --errors to the gateway: %d failures%s", requests, len(failures), list(failures))
	if extra, fixed := diff(failures, knownGatewayFailures); len(extra)+len(fixed) > 0 {
		t.Errorf("the gateway's failures under generated requests changed:\nnew:%s\nno longer failing (remove them from knownGatewayFailures):%s", list(extra), list(fixed))
	}
	if requests < 7 {
		t.Errorf("%d generated requests, want one at least per operation (7)", requests)
	}

	// A gateway answering 415 to everything fails every request.
	ref, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	rt.plant = func(w http.ResponseWriter, r *http.Request) bool {
		rt.record(exchange{Method: r.Method, Path: r.URL.Path, Operation: ref.Operation(r), Status: http.StatusUnsupportedMediaType})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnsupportedMediaType)
		_, _ = w.Write([]byte(`{"error":"planted"}`))
		return true
	}
	planted, n := judgeGateway(t, rt, url, collections[1:]) // openapi.json's
	for _, op := range []string{"POST /project/preview/{projectId}", "POST /project/update/{projectId}", "POST /workflow/{projectId}/{workflowSchemaId}/trigger"} {
		if !slices.ContainsFunc(planted, func(f string) bool { return strings.HasPrefix(f, op+": undocumented status 415") }) {
			t.Errorf("a planted 415 on %s is not found among %d failures of %d requests:%s", op, len(planted), n, list(planted))
		}
	}
}

// portman runs Portman (bin) to write the Postman collection of spec's
// paths into out.
func portman(t *testing.T, bin, spec string, paths []string, out string) error {
	// Operations in the order of paths, so that a job is created before it
	// is read and an update triggered before its status.
	var order []string
	for _, p := range paths {
		for _, m := range []string{"POST", "GET"} {
			order = append(order, m+"::"+p)
		}
	}
	// A created job's id and an update's status id, for the requests that
	// read them.
	assign := []any{}
	for op, v := range map[string][2]string{"/v2/agent/{projectId}/job": {"id", "jobId"}, "/v1/project/update/{projectId}": {"statusId", "statusId"}} {
		if slices.Contains(paths, op) {
			assign = append(assign, map[string]any{"openApiOperation": "POST::" + op, "collectionVariables": []any{map[string]any{"responseBodyProp": v[0], "name": v[1]}}})
		}
	}
	cfg := map[string]any{
		"version": 1.0,
		"tests": map[string]any{"contractTests": []any{
			map[string]any{"openApiOperation": "*::/*", "statusSuccess": map[string]any{"enabled": true}},
			map[string]any{"openApiOperation": "*::/*", "contentType": map[string]any{"enabled": true}},
			map[string]any{"openApiOperation": "*::/*", "jsonBody": map[string]any{"enabled": true}},
			map[string]any{"openApiOperation": "*::/*", "schemaValidation": map[string]any{"enabled": true}},
		}},
		"assignVariables": assign,
		"overwrites": []any{map[string]any{"openApiOperation": "*::/*", "overwriteRequestPathVariables": []any{
			map[string]any{"key": "projectId", "value": project, "overwrite": true, "insert": false},
			map[string]any{"key": "id", "value": "{{jobId}}", "overwrite": true, "insert": false},
			map[string]any{"key": "statusId", "value": "{{statusId}}", "overwrite": true, "insert": false},
			map[string]any{"key": "workflowSchemaId", "value": fakeapi.AutomationAgentJob, "overwrite": true, "insert": false},
		}}},
		"globals": map[string]any{"orderOfOperations": order},
	}
	cfgFile := strings.TrimSuffix(out, ".collection.json") + ".portman.json"
	b, err := json.Marshal(cfg)
	if err == nil {
		err = os.WriteFile(cfgFile, b, 0o600)
	}
	if err != nil {
		return err
	}
	if text, err := run(t, 2*time.Minute, bin, "-l", spec, "-o", out, "-b", "{{baseUrl}}", "-c", cfgFile); err != nil {
		return fmt.Errorf("portman %s: %w\n%s", spec, err, tail(text, 4000))
	}
	return nil
}

// judgeGateway runs the collections with Newman against url (the router
// before the gateway's validating Prisms) and returns the failures, as
// "METHOD /path: why" (the path as the reference writes it), and how many
// requests were sent.
func judgeGateway(t *testing.T, rt *router, url string, collections []string) (failures []string, requests int) {
	t.Helper()
	ref, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	newman := tool(t, "newman")
	before := len(rt.exchanges())
	// One Newman per collection, at once: each runs its requests in order.
	reports := make([]string, len(collections))
	texts := make([]string, len(collections))
	var wg sync.WaitGroup
	for i, c := range collections {
		reports[i] = filepath.Join(t.TempDir(), "newman.json")
		// Newman exits non-zero when a contract test fails: the report
		// says which.
		wg.Go(func() {
			texts[i], _ = run(t, 5*time.Minute, newman, "run", c, "--env-var", "baseUrl="+url, "--env-var", "bearerToken="+key,
				"--reporters", "json", "--reporter-json-export", reports[i], "--timeout-request", "30000")
		})
	}
	wg.Wait()
	for i, r := range reports {
		failed, err := newmanFailures(r)
		if err != nil {
			t.Fatalf("newman %s: %v\n%s", collections[i], err, tail(texts[i], 4000))
		}
		failures = append(failures, failed...)
	}
	for _, x := range rt.exchanges()[before:] {
		requests++
		op := x.Operation
		if op == "" {
			op = x.Method + " " + x.Path
		}
		if file, _, ok := FileOf(x.Path); ok {
			documented, _ := ref.Documented(file, strings.SplitN(op, " ", 2)[1])
			if !slices.Contains(documented, fmt.Sprintf("%s %d", op, x.Status)) {
				failures = append(failures, fmt.Sprintf("%s: undocumented status %d", op, x.Status))
			}
		}
		if x.Status >= 500 && len(x.Response) == 0 {
			failures = append(failures, fmt.Sprintf("%s: server error %d", op, x.Status))
		}
		for _, v := range x.Request {
			failures = append(failures, fmt.Sprintf("%s: request violation %s", op, v))
		}
		for _, v := range x.Response {
			failures = append(failures, fmt.Sprintf("%s: answer violation %s", op, v))
		}
	}
	slices.Sort(failures)
	return slices.Compact(failures), requests
}

// newmanFailures are the failed assertions of a Newman JSON report, as
// "METHOD /path: assertion".
func newmanFailures(file string) ([]string, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var report struct {
		Run struct {
			Failures []struct {
				Error struct {
					Test    string `json:"test"`
					Message string `json:"message"`
				} `json:"error"`
			} `json:"failures"`
		} `json:"run"`
	}
	if err := json.Unmarshal(raw, &report); err != nil {
		return nil, err
	}
	var out []string
	for _, f := range report.Run.Failures {
		// Portman names its tests "[METHOD]::/path/:var - what".
		test := f.Error.Test
		if op, what, ok := strings.Cut(test, " - "); ok {
			m, p, _ := strings.Cut(strings.TrimPrefix(op, "["), "]::")
			p = colonVars(p)
			if _, base, ok := FileOf(p); ok {
				p = strings.TrimPrefix(p, base)
			}
			test = m + " " + p + ": contract test: " + what
		}
		out = append(out, test)
	}
	return out, nil
}

// colonVars writes Postman's :var path segments as the reference's {var}.
func colonVars(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		if v, ok := strings.CutPrefix(s, ":"); ok {
			parts[i] = "{" + v + "}"
		}
	}
	return strings.Join(parts, "/")
}

// diff is what got has that want has not, and the other way round.
func diff(got, want []string) (extra, missing []string) {
	for _, g := range got {
		if !slices.Contains(want, g) {
			extra = append(extra, g)
		}
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			missing = append(missing, w)
		}
	}
	return extra, missing
}

func list(items []string) string {
	if len(items) == 0 {
		return " none"
	}
	return "\n  " + strings.Join(items, "\n  ")
}
