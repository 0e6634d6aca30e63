package fakeapi_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

// The reference's operations this file holds the fake and the client to:
// the automation trigger (openapi.json) and the static exports
// (static-export-openapi.json). Self-contained, so that it can join the
// validation harness of every endpoint in internal/apiref.
var kindsReference = map[string][]string{
	"openapi.json":               {"/workflow/{projectId}/{workflowSchemaId}/trigger"},
	"static-export-openapi.json": {"/static-export/jobs", "/static-export/jobs/{jobId}", "/static-export/jobs/{jobId}/bundle"},
}

// judge sits in front of the fake: it validates every request the client
// sends and every answer the fake gives against the vendored reference
// (kin-openapi's openapi3filter, date-time and other formats checked), and
// records which documented statuses were seen.
type judge struct {
	t       *testing.T
	next    http.Handler
	routers []routers.Router
	docs    map[string]*openapi3.T
	opts    *openapi3filter.Options

	mu       sync.Mutex
	problems []string
	seen     map[string]bool // "METHOD /path status" of the reference
}

func newJudge(t *testing.T, next http.Handler) *judge {
	t.Helper()
	j := &judge{t: t, next: next, docs: map[string]*openapi3.T{}, seen: map[string]bool{}}
	for file := range kindsReference {
		doc, err := openapi3.NewLoader().LoadFromFile("../apiref/reference/" + file)
		if err != nil {
			t.Fatalf("loading %s: %v", file, err)
		}
		if err := doc.Validate(context.Background()); err != nil {
			t.Fatalf("%s is not a valid OpenAPI document: %v", file, err)
		}
		r, err := gorillamux.NewRouter(doc)
		if err != nil {
			t.Fatalf("routing %s: %v", file, err)
		}
		j.docs[file], j.routers = doc, append(j.routers, r)
	}
	j.opts = &openapi3filter.Options{
		IncludeResponseStatus:   true,
		MultiError:              true,
		SchemaValidationOptions: []openapi3.SchemaValidationOption{openapi3.EnableFormatValidation()},
		AuthenticationFunc: func(_ context.Context, in *openapi3filter.AuthenticationInput) error {
			if in.SecurityScheme.Type == "http" && in.SecurityScheme.Scheme == "bearer" &&
				strings.HasPrefix(in.RequestValidationInput.Request.Header.Get("Authorization"), "Bearer mint_") {
				return nil
			}
			return errors.New("no Bearer admin key")
		},
	}
	return j
}

// route finds the reference's operation of a request as the real server
// would receive it (the reference's servers are https://api.mintlify.com/v1).
func (j *judge) route(method, rawPath string, body []byte, header http.Header) (*openapi3filter.RequestValidationInput, error) {
	u, err := url.Parse("https://api.mintlify.com" + rawPath)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequest(method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = header.Clone()
	for _, r := range j.routers {
		route, params, err := r.FindRoute(req)
		if err == nil {
			return &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: j.opts}, nil
		}
	}
	return nil, fmt.Errorf("%s %s: no operation of the reference", method, rawPath)
}

func (j *judge) problem(format string, args ...any) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.problems = append(j.problems, fmt.Sprintf(format, args...))
}

func (j *judge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	in, err := j.route(r.Method, r.URL.EscapedPath(), body, r.Header)
	if err != nil {
		j.problem("%v", err)
		http.NotFound(w, r)
		return
	}
	// The client's requests must be what the reference asks for; the
	// test's own raw requests are wrong on purpose (to draw 400 and 401).
	if strings.HasPrefix(r.UserAgent(), "mintlify_exporter/") {
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			j.problem("client request %s %s: %v", r.Method, r.URL.Path, err)
		}
	}
	rec := httptest.NewRecorder()
	r.Body = io.NopCloser(bytes.NewReader(body))
	j.next.ServeHTTP(rec, r)
	if err := j.checkAnswer(in, rec.Code, rec.Header(), rec.Body.Bytes()); err != nil {
		j.problem("fake answer to %s %s (%d %.200s): %v", r.Method, r.URL.Path, rec.Code, rec.Body.Bytes(), err)
	}
	j.mu.Lock()
	j.seen[fmt.Sprintf("%s %s %d", r.Method, in.Route.Path, rec.Code)] = true
	j.mu.Unlock()
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}

func (j *judge) checkAnswer(in *openapi3filter.RequestValidationInput, status int, header http.Header, body []byte) error {
	return openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: status, Header: header, Body: io.NopCloser(bytes.NewReader(body)), Options: j.opts})
}

// documented lists "METHOD /path status" for every status the reference
// documents for kindsReference's operations.
func (j *judge) documented() []string {
	var out []string
	for file, paths := range kindsReference {
		for _, p := range paths {
			for method, op := range j.docs[file].Paths.Value(p).Operations() {
				for status := range op.Responses.Map() {
					out = append(out, fmt.Sprintf("%s %s %s", method, p, status))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestKindsAgainstReference drives the client and raw requests through the
// judge onto the fake until every status the reference documents for the
// automation trigger and the static exports has been answered: every
// request of the client and every answer of the fake must validate.
func TestKindsAgainstReference(t *testing.T) {
	t.Parallel()
	clk := newClock()
	fake := fakeapi.New(fakeapi.Options{APIKey: key, Projects: []string{"docs"}, Now: clk.Now, StaticExportDuration: time.Minute})
	j := newJudge(t, fake)
	srv := httptest.NewServer(j)
	t.Cleanup(srv.Close)
	c, err := apiclient.New(apiclient.Config{BaseURL: srv.URL, APIKey: key, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	raw := func(method, path, body, auth string) {
		req, _ := http.NewRequestWithContext(ctx, method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}

	for _, id := range []string{fakeapi.AutomationAgentJob, fakeapi.AutomationUnfollowed, fakeapi.AutomationInactive, "wf~x", "wf_nope"} {
		_, _ = c.TriggerAutomation(ctx, "docs", id)
	}
	ok, err := c.StartStaticExport(ctx, apiclient.StaticExportRequest{Domain: "docs.example.com", Version: "2024-06-01", Paths: []string{"index", "guides/getting-started"}})
	if err != nil {
		t.Fatal(err)
	}
	failing, err := c.StartStaticExport(ctx, apiclient.StaticExportRequest{Domain: "failing.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.StartStaticExport(ctx, apiclient.StaticExportRequest{Domain: "noexport.example.com"})
	raw("POST", "/v1/static-export/jobs", `{"paths": "index"}`, "Bearer "+key)
	raw("POST", "/v1/static-export/jobs", `{"domain": "docs.example.com"}`, "")
	for _, at := range []time.Duration{0, 10 * time.Second, 59 * time.Second, time.Minute} {
		clk.Set(fixedNow().Add(at))
		_, _ = c.GetStaticExport(ctx, ok.JobID)
		_, _ = c.GetStaticExport(ctx, failing.JobID)
		_, _ = c.BundleStaticExport(ctx, ok.JobID)
	}
	_, _ = c.GetStaticExport(ctx, "se_nope")
	_, _ = c.BundleStaticExport(ctx, "se_nope")
	raw("GET", "/v1/static-export/jobs/"+ok.JobID, "", "")
	raw("POST", "/v1/static-export/jobs/"+ok.JobID+"/bundle", "", "Bearer nope")

	j.mu.Lock()
	defer j.mu.Unlock()
	for _, p := range j.problems {
		t.Error(p)
	}
	var missing []string
	for _, d := range j.documented() {
		if !j.seen[d] {
			missing = append(missing, d)
		}
	}
	if len(missing) > 0 {
		t.Errorf("documented statuses never answered, so never checked: %v", missing)
	}
}

// TestJudgeRefusesWhatTheReferenceRefuses: the judge is not a rubber
// stamp: answers and a request the reference refuses fail it.
func TestJudgeRefusesWhatTheReferenceRefuses(t *testing.T) {
	t.Parallel()
	j := newJudge(t, http.NotFoundHandler())
	json := http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer mint_x"}}
	job := `"jobId": "se_1", "status": "running", "createdAt": "2026-08-21T10:00:00Z", "updatedAt": "2026-08-21T10:00:00Z"`
	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/v1/static-export/jobs/se_1", `{` + job + `, "progress": 150, "pageCount": 1}`},
		{"GET", "/v1/static-export/jobs/se_1", `{` + job + `, "progress": 1}`},
		{"GET", "/v1/static-export/jobs/se_1", `{` + job + `, "progress": 1, "pageCount": 1.5}`},
		{"GET", "/v1/static-export/jobs/se_1", `{"jobId": "se_1", "status": "running", "progress": 1, "pageCount": 1, "createdAt": "yesterday", "updatedAt": "2026-08-21T10:00:00Z"}`},
		{"GET", "/v1/static-export/jobs/se_1", `{` + strings.Replace(job, "running", "done", 1) + `, "progress": 1, "pageCount": 1}`},
		{"POST", "/v1/static-export/jobs/se_1/bundle", `{"jobId": "se_1", "bundleUrl": "https://x", "sizeBytes": 1}`},
		{"POST", "/v1/workflow/p/wf/trigger", `{"schemaId": 5}`},
	} {
		in, err := j.route(tc.method, tc.path, nil, json)
		if err != nil {
			t.Fatal(err)
		}
		status := 200
		if strings.Contains(tc.path, "trigger") {
			status = 202
		}
		if j.checkAnswer(in, status, json, []byte(tc.body)) == nil {
			t.Errorf("%s %s %s passed the judge", tc.method, tc.path, tc.body)
		}
	}
	in, _ := j.route("POST", "/v1/static-export/jobs/se_1/bundle", nil, json)
	if j.checkAnswer(in, 418, json, []byte(`{"error": "x"}`)) == nil {
		t.Error("an undocumented status passed the judge")
	}
	for _, body := range []string{`{"paths": ["index"]}`, `{"domain": 3}`, `{"domain": "a.b", "paths": "index"}`} {
		in, err := j.route("POST", "/v1/static-export/jobs", []byte(body), json)
		if err != nil {
			t.Fatal(err)
		}
		if openapi3filter.ValidateRequest(context.Background(), in) == nil {
			t.Errorf("start %s passed the judge", body)
		}
	}
	if in, err := j.route("GET", "/v1/static-export/jobs/se_1", nil, http.Header{}); err != nil || openapi3filter.ValidateRequest(context.Background(), in) == nil {
		t.Errorf("a request without a key passed the judge (%v)", err)
	}
}
