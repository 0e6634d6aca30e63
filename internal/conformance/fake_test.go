package conformance_test

import (
	"context"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/conformance"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// refEnv is the fake behind a transport that validates every exchange
// against the API's reference: what the client sends, what the fake
// answers.
const key = "mint_fake_test"

func fixedNow() time.Time { return time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC) }

type refEnv struct {
	t      *testing.T
	fake   *fakeapi.Server
	url    string
	tr     *conformance.Transport
	client *apiclient.Client
	// answers checks the answers to raw's requests.
	answers *conformance.Transport
}

func startRef(t *testing.T, opts fakeapi.Options) *refEnv {
	t.Helper()
	ref, err := conformance.Load()
	if err != nil {
		t.Fatal(err)
	}
	if opts.APIKey == "" {
		opts.APIKey = key
	}
	if opts.Projects == nil {
		opts.Projects = []string{"docs"}
	}
	if opts.Now == nil {
		opts.Now = fixedNow
	}
	fake := fakeapi.New(opts)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	tr := &conformance.Transport{Ref: ref, Fail: t.Errorf}
	c, err := apiclient.New(apiclient.Config{BaseURL: srv.URL, APIKey: key, HTTPClient: &http.Client{Transport: tr}, Timeout: time.Minute,
		BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return &refEnv{t: t, fake: fake, url: srv.URL, tr: tr, client: c,
		answers: &conformance.Transport{Ref: ref, Fail: t.Errorf, AnswersOnly: true}}
}

// raw sends a request of our own (for the error answers the client never
// provokes, often with a request the reference refuses on purpose) and
// returns its status: the answer is validated, the request is not.
func (e *refEnv) raw(method, path, body string) int {
	e.t.Helper()
	return e.rawAuth(method, path, body, "Bearer "+key)
}

// rawAuth is raw with the Authorization header auth (none if empty).
func (e *refEnv) rawAuth(method, path, body, auth string) int {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Transport: e.answers}).Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// want checks that an exchange got the documented status it was meant to.
func (e *refEnv) want(what string, got, want int) {
	e.t.Helper()
	if got != want {
		e.t.Errorf("%s: HTTP %d, want the documented %d", what, got, want)
	}
}

// unanswered lists the statuses a reference file documents for the
// operations of opPaths that neither the client nor raw drew: statuses
// never answered, so never checked.
func (e *refEnv) unanswered(file string, opPaths ...string) []string {
	e.t.Helper()
	documented, err := e.tr.Ref.Documented(file, opPaths...)
	if err != nil {
		e.t.Fatal(err)
	}
	seen := e.tr.Answered()
	maps.Copy(seen, e.answers.Answered())
	var out []string
	for _, d := range documented {
		if !seen[d] {
			out = append(out, d)
		}
	}
	return out
}

// TestReferenceAnalytics walks every analytics endpoint with the client
// (every request it sends and every page the fake answers validated), and
// provokes each documented error status (400, 500). The answers that the
// fake's faults bend on purpose beyond the reference (UnknownEnum,
// MalformedJSON) are not served here; those within it (FractionalCounts,
// NullCreatedAt, CursorURL) are.
func TestReferenceAnalytics(t *testing.T) {
	t.Parallel()
	e := startRef(t, fakeapi.Options{Paths: 30})
	ctx := t.Context()
	week := apiclient.DateRange{DateFrom: "2025-03-08", DateTo: "2025-03-15"}
	walks := func(what string) {
		t.Helper()
		if _, err := e.client.AllVisitors(ctx, "docs", apiclient.VisitorsQuery{DateFrom: week.DateFrom, DateTo: week.DateTo}, 10, 0); err != nil {
			t.Errorf("%s: visitors: %v", what, err)
		}
		if _, err := e.client.ViewsPages(ctx, "docs", week, 10, 0, func([]apiclient.PathViews) {}); err != nil {
			t.Errorf("%s: views: %v", what, err)
		}
		if _, err := e.client.FeedbackByPage(ctx, "docs", apiclient.FeedbackByPageQuery{DateRange: week, Limit: 5, Source: "contextual", Status: "pending"}); err != nil {
			t.Errorf("%s: feedback by page: %v", what, err)
		}
		if _, err := e.client.AllFeedback(ctx, "docs", week, 20, 0); err != nil {
			t.Errorf("%s: feedback: %v", what, err)
		}
		if _, err := e.client.TopSearches(ctx, "docs", week, 150, 0); err != nil {
			t.Errorf("%s: searches: %v", what, err)
		}
		if _, err := e.client.AllTurns(ctx, "docs", apiclient.DateRange{DateFrom: "2025-03-13T06:00:00Z", DateTo: week.DateTo}, 50, 0); err != nil {
			t.Errorf("%s: assistant: %v", what, err)
		}
		if _, err := e.client.AssistantCallerStats(ctx, "docs", week); err != nil {
			t.Errorf("%s: caller stats: %v", what, err)
		}
	}
	walks("plain")
	// Answers the reference allows that a reader may not expect.
	for _, ep := range []string{fakeapi.Visitors, fakeapi.Views, fakeapi.FeedbackByPage, fakeapi.Feedback, fakeapi.Searches, fakeapi.Assistant, fakeapi.AssistantCallerStats} {
		e.fake.SetFault(ep, fakeapi.Fault{FractionalCounts: true, CursorURL: true, NullCreatedAt: true})
	}
	walks("fractions, cursor URLs, null createdAt")
	e.fake.ClearFaults()
	// Each bound is optional on its own.
	e.want("only dateFrom", e.raw("GET", "/v1/analytics/docs/views?dateFrom=2025-03-01", ""), 200)
	e.want("only dateTo", e.raw("GET", "/v1/analytics/docs/assistant?dateTo=2025-03-14", ""), 200)
	for _, path := range []string{"visitors", "views", "feedback", "feedback/by-page", "searches", "assistant", "assistant/caller-stats"} {
		e.want(path+" 400", e.raw("GET", "/v1/analytics/docs/"+path+"?dateFrom=2025-03-14&dateTo=2025-03-01", ""), 400)
	}
	e.fake.SetFault(fakeapi.Feedback, fakeapi.Fault{Status: 500})
	e.want("feedback 500", e.raw("GET", "/v1/analytics/docs/feedback", ""), 500)
	if n := e.tr.Exchanges(); n < 40 {
		t.Errorf("only %d exchanges checked", n)
	}
}

// TestReferenceOperations creates, reads and follows up agent jobs and
// triggers and follows deployments, through the client and by hand, with
// each documented status.
func TestReferenceOperations(t *testing.T) {
	t.Parallel()
	e := startRef(t, fakeapi.Options{CreateLimit: 2, MessageLimit: 2, Organizations: []fakeapi.Organization{
		{Key: key, Projects: []string{"docs"}}, {Key: "mint_other", Projects: []string{"other"}},
	}, Projects: []string{"docs", "other"}})
	ctx := t.Context()

	job, status, err := e.client.CreateJobWithStatus(ctx, "docs", "add a page #fake:pr:1h")
	if err != nil || status != http.StatusCreated {
		t.Fatalf("create: %d %v", status, err)
	}
	if _, err := e.client.GetJob(ctx, "docs", job.ID); err != nil {
		t.Errorf("get: %v", err)
	}
	if _, status, err := e.client.SendMessage(ctx, "docs", job.ID, "and another"); err != nil || status != http.StatusOK {
		t.Errorf("message: %d %v", status, err)
	}
	e.want("create 400", e.raw("POST", "/v2/agent/docs/job", `{"prompt":""}`), 400)
	e.want("get 404", e.raw("GET", "/v2/agent/docs/job/job_404", ""), 404)
	e.want("message 400", e.raw("POST", "/v2/agent/docs/job/"+job.ID+"/message", `{"prompt":""}`), 400)
	e.want("message 404", e.raw("POST", "/v2/agent/docs/job/job_404/message", `{"prompt":"x"}`), 404)
	e.want("create, second", e.raw("POST", "/v2/agent/docs/job", `{"prompt":"x"}`), 201)
	e.want("create 429", e.raw("POST", "/v2/agent/docs/job", `{"prompt":"x"}`), 429)
	e.want("message, second", e.raw("POST", "/v2/agent/docs/job/"+job.ID+"/message", `{"prompt":"x"}`), 200)
	e.want("message 429", e.raw("POST", "/v2/agent/docs/job/"+job.ID+"/message", `{"prompt":"x"}`), 429)

	// Deployments: every status of their course (queued, in_progress,
	// success, failure), read until final.
	for _, branch := range []string{"main", "fail-build"} {
		tr, err := e.client.TriggerPreview(ctx, "docs", branch)
		if err != nil {
			t.Fatalf("preview %s: %v", branch, err)
		}
		for range 5 {
			if _, err := e.client.DeploymentStatus(ctx, "docs", tr.StatusID); err != nil {
				t.Errorf("status of %s: %v", branch, err)
			}
		}
	}
	if _, err := e.client.TriggerUpdate(ctx, "docs"); err != nil {
		t.Errorf("update: %v", err)
	}
	e.want("preview 400", e.raw("POST", "/v1/project/preview/docs", `{"branch":""}`), 400)
	e.want("preview 403", e.raw("POST", "/v1/project/preview/other", `{"branch":"main"}`), 403)
}

// TestReferenceAutomationsAndStaticExports drives the client and raw
// requests onto the fake until every status the reference documents for
// the automation trigger (openapi.json) and the static exports
// (static-export-openapi.json) has been answered: every request of the
// client and every answer of the fake must validate, and a documented
// status never answered fails the test.
func TestReferenceAutomationsAndStaticExports(t *testing.T) {
	t.Parallel()
	clk := testutil.NewClock(fixedNow())
	e := startRef(t, fakeapi.Options{Now: clk.Now, StaticExportDuration: time.Minute})
	ctx := t.Context()

	for _, id := range []string{fakeapi.AutomationAgentJob, fakeapi.AutomationUnfollowed, fakeapi.AutomationInactive, "wf~x", "wf_nope"} {
		_, _ = e.client.TriggerAutomation(ctx, "docs", id)
	}
	ok, err := e.client.StartStaticExport(ctx, apiclient.StaticExportRequest{Domain: "docs.example.com", Version: "2024-06-01", Paths: []string{"index", "guides/getting-started"}})
	if err != nil {
		t.Fatal(err)
	}
	failing, err := e.client.StartStaticExport(ctx, apiclient.StaticExportRequest{Domain: "failing.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = e.client.StartStaticExport(ctx, apiclient.StaticExportRequest{Domain: "noexport.example.com"})
	e.want("start 400", e.raw("POST", "/v1/static-export/jobs", `{"paths": "index"}`), 400)
	e.want("start 401", e.rawAuth("POST", "/v1/static-export/jobs", `{"domain": "docs.example.com"}`, ""), 401)
	for _, at := range []time.Duration{0, 10 * time.Second, 59 * time.Second, time.Minute} {
		clk.Set(fixedNow().Add(at))
		_, _ = e.client.GetStaticExport(ctx, ok.JobID)
		_, _ = e.client.GetStaticExport(ctx, failing.JobID)
		_, _ = e.client.BundleStaticExport(ctx, ok.JobID)
	}
	_, _ = e.client.GetStaticExport(ctx, "se_nope")
	_, _ = e.client.BundleStaticExport(ctx, "se_nope")
	e.want("status 401", e.rawAuth("GET", "/v1/static-export/jobs/"+ok.JobID, "", ""), 401)
	e.want("bundle 401", e.rawAuth("POST", "/v1/static-export/jobs/"+ok.JobID+"/bundle", "", "Bearer nope"), 401)

	if missing := e.unanswered("openapi.json", "/workflow/{projectId}/{workflowSchemaId}/trigger"); len(missing) > 0 {
		t.Errorf("documented statuses never answered, so never checked: %v", missing)
	}
	if missing := e.unanswered("static-export-openapi.json", "/static-export/jobs", "/static-export/jobs/{jobId}", "/static-export/jobs/{jobId}/bundle"); len(missing) > 0 {
		t.Errorf("documented statuses never answered, so never checked: %v", missing)
	}
}

// TestReferenceRefusesWhatItShould: the judge judges. Answers the fake
// sent before it followed the reference are refused, and so are answers
// out of the static exports' and the trigger's schemas (bounds, integers,
// date-times, enums, required fields, undocumented statuses), and the
// requests the reference does not allow (bounds, bodies, no key).
func TestReferenceRefusesWhatItShould(t *testing.T) {
	t.Parallel()
	ref, err := conformance.Load()
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) *http.Request {
		r := httptest.NewRequestWithContext(context.Background(), "GET", "https://api.mintlify.com"+path, nil)
		r.Header.Set("Authorization", "Bearer "+key)
		return r
	}
	post := func(path string) *http.Request {
		r := httptest.NewRequestWithContext(context.Background(), "POST", "https://api.mintlify.com"+path, nil)
		r.Header.Set("Authorization", "Bearer "+key)
		r.Header.Set("Content-Type", "application/json")
		return r
	}
	jsonHeader := http.Header{"Content-Type": {"application/json"}}
	const turn = `{"id":"c1","timestamp":"2025-03-14T10:00:00Z","query":"q","response":"r","responseType":"answer","resolutionStatus":"answered","queryCategory":null,"pageUrl":"https://x","sources":%s}`
	const export = `"jobId": "se_1", "status": "running", "createdAt": "2026-08-21T10:00:00Z", "updatedAt": "2026-08-21T10:00:00Z"`
	const job = `{"id":"job_1","status":"active","source":{"repository":"https://github.com/a/b","ref":"main"},"model":"m","prLink":null,"createdAt":"2025-03-14T10:00:00Z","archivedAt":null}`
	for _, c := range []struct {
		name   string
		req    *http.Request
		status int
		body   string
		ok     bool
	}{
		{"sources as objects", get("/v1/analytics/docs/assistant"), 200, `{"conversations":[` + strings.Replace(turn, "%s", `[{"title":"Quickstart","url":"https://x/q"}]`, 1) + `],"nextCursor":null,"hasMore":false}`, true},
		{"sources as strings", get("/v1/analytics/docs/assistant"), 200, `{"conversations":[` + strings.Replace(turn, "%s", `["/quickstart"]`, 1) + `],"nextCursor":null,"hasMore":false}`, false},
		{"job created 201", post("/v2/agent/docs/job"), 201, job, true},
		{"job created 200", post("/v2/agent/docs/job"), 200, job, false},
		{"endedAt null", get("/v1/project/update-status/s1"), 200, `{"_id":"s1","projectId":"docs","createdAt":"2025-03-14T10:00:00Z","endedAt":null,"status":"queued"}`, false},
		{"endedAt absent", get("/v1/project/update-status/s1"), 200, `{"_id":"s1","projectId":"docs","createdAt":"2025-03-14T10:00:00Z","status":"queued"}`, true},
		{"analytics error with details", get("/v1/analytics/docs/views"), 400, `{"error":"bad","details":[{"message":"dateFrom"}]}`, true},
		{"analytics error without error", get("/v1/analytics/docs/views"), 400, `{"details":[{"message":"dateFrom"}]}`, false},
		{"a count of 10.0", get("/v1/analytics/docs/views"), 200, `{"totals":{"human":10.0,"ai":0,"total":10.0},"views":[],"hasMore":false}`, true},
		// Static exports and the automation trigger.
		{"export job", get("/v1/static-export/jobs/se_1"), 200, `{` + export + `, "progress": 42.5, "pageCount": 1}`, true},
		{"export progress 150", get("/v1/static-export/jobs/se_1"), 200, `{` + export + `, "progress": 150, "pageCount": 1}`, false},
		{"export without pageCount", get("/v1/static-export/jobs/se_1"), 200, `{` + export + `, "progress": 1}`, false},
		{"export pageCount 1.5", get("/v1/static-export/jobs/se_1"), 200, `{` + export + `, "progress": 1, "pageCount": 1.5}`, false},
		{"export createdAt yesterday", get("/v1/static-export/jobs/se_1"), 200, `{` + strings.Replace(export, `"createdAt": "2026-08-21T10:00:00Z"`, `"createdAt": "yesterday"`, 1) + `, "progress": 1, "pageCount": 1}`, false},
		{"export status done", get("/v1/static-export/jobs/se_1"), 200, `{` + strings.Replace(export, "running", "done", 1) + `, "progress": 1, "pageCount": 1}`, false},
		{"bundle", post("/v1/static-export/jobs/se_1/bundle"), 200, `{"jobId": "se_1", "bundleUrl": "https://x/b.tar.gz", "sizeBytes": 1, "expiresAt": "2026-08-21T11:00:00Z"}`, true},
		{"bundle without expiresAt", post("/v1/static-export/jobs/se_1/bundle"), 200, `{"jobId": "se_1", "bundleUrl": "https://x", "sizeBytes": 1}`, false},
		{"bundle 418", post("/v1/static-export/jobs/se_1/bundle"), 418, `{"error": "x"}`, false},
		{"trigger", post("/v1/workflow/p/wf/trigger"), 202, `{"schemaId": "wf", "instanceId": "i", "jobId": "j"}`, true},
		{"trigger schemaId 5", post("/v1/workflow/p/wf/trigger"), 202, `{"schemaId": 5}`, false},
	} {
		err := ref.CheckResponse(c.req, c.status, jsonHeader, []byte(c.body))
		if (err == nil) != c.ok {
			t.Errorf("%s: accepted = %v, want %v (%v)", c.name, err == nil, c.ok, err)
		}
	}
	for _, c := range []struct {
		path string
		ok   bool
	}{
		{"/v1/analytics/docs/assistant?limit=1000", true},
		{"/v1/analytics/docs/assistant?limit=1001", false},
		{"/v1/analytics/docs/feedback?source=nonsense", false},
		{"/v1/analytics/docs/nowhere", false},
	} {
		err := ref.CheckRequest(get(c.path), nil)
		if (err == nil) != c.ok {
			t.Errorf("request %s: accepted = %v, want %v (%v)", c.path, err == nil, c.ok, err)
		}
	}
	for _, c := range []struct {
		body string
		ok   bool
	}{
		{`{"domain": "a.b", "paths": ["index"]}`, true},
		{`{"paths": ["index"]}`, false},
		{`{"domain": 3}`, false},
		{`{"domain": "a.b", "paths": "index"}`, false},
	} {
		err := ref.CheckRequest(post("/v1/static-export/jobs"), []byte(c.body))
		if (err == nil) != c.ok {
			t.Errorf("start export %s: accepted = %v, want %v (%v)", c.body, err == nil, c.ok, err)
		}
	}
	keyless := get("/v1/static-export/jobs/se_1")
	keyless.Header.Del("Authorization")
	if err := ref.CheckRequest(keyless, nil); err == nil {
		t.Error("a request without a key was accepted")
	}
}
