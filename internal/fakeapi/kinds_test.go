package fakeapi_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

type triggered struct{ SchemaID, InstanceID, JobID string }

// TestAutomationChecks: the trigger refuses what the reference says it
// refuses (a malformed id, an inactive automation or one without a custom
// schedule 400; an unknown one or another project's 404; no key 401), a
// run of the agent-job automation is a job get-job answers until it ends,
// the other's jobId is one get-job does not know, and updates and runs
// share the organization's 10 per 10 s.
func TestAutomationChecks(t *testing.T) {
	t.Parallel()
	clk := newClock()
	e := start(t, fakeapi.Options{Now: clk.Now, Projects: []string{"docs", "other"},
		Automations: append([]fakeapi.Automation{{ID: "wf_other", Project: "other", AgentJob: true}}, fakeapi.DefaultAutomations...)})
	trigger := func(project, id string) response {
		return e.do("POST", "/v1/workflow/"+project+"/"+url.PathEscape(id)+"/trigger", "", nil)
	}
	e.wantError(e.do("POST", "/v1/workflow/docs/"+fakeapi.AutomationAgentJob+"/trigger", "", map[string]string{"Authorization": ""}), http.StatusUnauthorized, "no key")
	for id, status := range map[string]int{
		fakeapi.AutomationInactive: http.StatusBadRequest, fakeapi.AutomationOnPush: http.StatusBadRequest,
		"wf.bad": http.StatusBadRequest, "wf/x": http.StatusBadRequest, strings.Repeat("w", 65): http.StatusBadRequest,
		"wf_nope": http.StatusNotFound, "wf_other": http.StatusNotFound,
	} {
		e.wantError(trigger("docs", id), status, "automation "+id)
	}
	e.wantError(trigger("nope", fakeapi.AutomationAgentJob), http.StatusNotFound, "unknown project")
	if e.fake.AutomationRuns() != 0 || e.fake.JobCount() != 0 {
		t.Fatalf("refused triggers ran: %d runs, %d jobs", e.fake.AutomationRuns(), e.fake.JobCount())
	}

	var run, other triggered
	for _, tc := range []struct {
		project, id string
		into        *triggered
	}{{"docs", fakeapi.AutomationAgentJob, &run}, {"docs", fakeapi.AutomationUnfollowed, &other}, {"other", "wf_other", nil}} {
		r := trigger(tc.project, tc.id)
		var got triggered
		if r.status != http.StatusAccepted || json.Unmarshal(r.body, &got) != nil || got.SchemaID != tc.id || got.InstanceID == "" || got.JobID == "" {
			t.Fatalf("%s/%s: %d %s", tc.project, tc.id, r.status, r.body)
		}
		if tc.into != nil {
			*tc.into = got
		}
	}
	var j job
	e.decode(e.get("/v2/agent/docs/job/"+run.JobID), &j)
	if j.ID != run.JobID || j.Status != "active" {
		t.Errorf("the run's job: %+v, want active", j)
	}
	clk.Advance(time.Minute)
	e.decode(e.get("/v2/agent/docs/job/"+run.JobID), &j)
	if j.Status == "active" || e.fake.JobStatus("docs", run.JobID) != j.Status {
		t.Errorf("the run's job a minute on: %s, want it ended", j.Status)
	}
	e.wantError(e.get("/v2/agent/docs/job/"+other.JobID), http.StatusNotFound, "the unfollowed run's job")
	if e.fake.AutomationRuns() != 3 || e.fake.JobCount() != 2 {
		t.Errorf("%d runs and %d jobs, want 3 runs, 2 of them agent jobs", e.fake.AutomationRuns(), e.fake.JobCount())
	}

	// 3 runs a minute ago no longer count; 5 updates and 5 runs now do.
	for i := range fakeapi.UpdateLimit {
		var r response
		if i%2 == 0 {
			r = e.do("POST", "/v1/project/update/docs", "", nil)
		} else {
			r = trigger("docs", fakeapi.AutomationUnfollowed)
		}
		if r.status != http.StatusAccepted {
			t.Fatalf("trigger %d: %d %s", i, r.status, r.body)
		}
	}
	for _, r := range []response{trigger("docs", fakeapi.AutomationAgentJob), e.do("POST", "/v1/project/update/docs", "", nil)} {
		e.wantError(r, http.StatusTooManyRequests, "11th trigger in 10 s")
		if r.header.Get("Retry-After") == "" {
			t.Error("429 without Retry-After")
		}
	}
}

type exportJob struct {
	JobID     string  `json:"jobId"`
	Status    string  `json:"status"`
	Progress  float64 `json:"progress"`
	PageCount int     `json:"pageCount"`
	CreatedAt string  `json:"createdAt"`
	UpdatedAt string  `json:"updatedAt"`
	Error     *string `json:"error"`
}

// TestStaticExportCourse: an export's exact course on the fake's clock
// (queued for a tenth of its duration, running with one-decimal progress
// and pages, completed at its end; a "fail" domain fails halfway), the
// bodies and organizations the start refuses, the job seen only by its
// organization, and the bundle: 409 until completed (and for a failed
// export), then a presigned-looking URL signed anew on each call.
func TestStaticExportCourse(t *testing.T) {
	t.Parallel()
	clk := newClock()
	e := start(t, fakeapi.Options{Now: clk.Now, APIKey: "-", StaticExportDuration: time.Minute, StaticExportDisabled: []string{"mint_noexport"},
		Organizations: []fakeapi.Organization{{Key: key, Projects: []string{"docs"}}, {Key: "mint_other"}, {Key: "mint_noexport"}}})
	for _, body := range []string{`{}`, `{"domain": ""}`, `{"domain": 3}`, `{"domain": "https://docs.example.com"}`, `{"domain": "docs.example.com/docs"}`,
		`{"domain": "a.b", "paths": "index"}`, `{"domain": "a.b", "paths": [""]}`, `{"domain": "a.b", "paths": [1]}`, `{"domain": "a.b", "version": 2}`, `not json`} {
		e.wantError(e.do("POST", "/v1/static-export/jobs", body, nil), http.StatusBadRequest, "start "+body)
	}
	e.wantError(e.do("POST", "/v1/static-export/jobs", `{"domain": "noexport.example.com"}`, nil), http.StatusForbidden, "a domain without static export")
	for _, body := range []string{`{"domain": "docs.example.com"}`, `{}`} {
		e.wantError(e.do("POST", "/v1/static-export/jobs", body, map[string]string{"Authorization": "Bearer mint_noexport"}),
			http.StatusForbidden, "an organization without static export, "+body)
	}
	e.wantError(e.do("POST", "/v1/static-export/jobs", `{"domain": "docs.example.com"}`, map[string]string{"Authorization": ""}), http.StatusUnauthorized, "no key")
	if e.fake.StaticExports() != 0 {
		t.Fatalf("%d exports after refusals only", e.fake.StaticExports())
	}

	startExport := func(body string) exportJob {
		r := e.do("POST", "/v1/static-export/jobs", body, nil)
		var j exportJob
		if r.status != http.StatusAccepted || json.Unmarshal(r.body, &j) != nil || j.JobID == "" {
			t.Fatalf("start %s: %d %s", body, r.status, r.body)
		}
		return j
	}
	ok := startExport(`{"domain": "docs.example.com", "version": "2024-06-01"}`)
	fail := startExport(`{"domain": "failing.example.com", "paths": ["index", "a", "b", "c", "d", "e", "f", "g", "h", "i"]}`)
	created := clk.Now().UTC().Format(time.RFC3339Nano)
	bundle := func(id, auth string) response {
		return e.do("POST", "/v1/static-export/jobs/"+id+"/bundle", "", map[string]string{"Authorization": auth})
	}
	for _, tc := range []struct {
		at                 time.Duration
		status             string
		progress           float64
		pages              int
		failStatus         string
		failProgress       float64
		failPages          int
		updated, failUpdtd time.Duration
	}{
		{0, "queued", 0, 0, "queued", 0, 0, 0, 0},
		{5 * time.Second, "queued", 0, 0, "queued", 0, 0, 0, 0},
		{6 * time.Second, "running", 0, 0, "running", 0, 0, 6 * time.Second, 6 * time.Second},
		{33 * time.Second, "running", 50, 150, "failed", 44.4, 4, 33 * time.Second, 30 * time.Second},
		{59 * time.Second, "running", 98.1, 294, "failed", 44.4, 4, 59 * time.Second, 30 * time.Second},
		{time.Minute, "completed", 100, 300, "failed", 44.4, 4, time.Minute, 30 * time.Second},
		{time.Hour, "completed", 100, 300, "failed", 44.4, 4, time.Minute, 30 * time.Second},
	} {
		clk.Set(fixedNow().Add(tc.at))
		var a, b exportJob
		e.decode(e.get("/v1/static-export/jobs/"+ok.JobID), &a)
		e.decode(e.get("/v1/static-export/jobs/"+fail.JobID), &b)
		if a.Status != tc.status || a.Progress != tc.progress || a.PageCount != tc.pages || a.Error != nil || a.CreatedAt != created ||
			a.UpdatedAt != fixedNow().Add(tc.updated).UTC().Format(time.RFC3339Nano) {
			t.Errorf("at %v: %+v, want %s %v%% %d pages updated at +%v", tc.at, a, tc.status, tc.progress, tc.pages, tc.updated)
		}
		if b.Status != tc.failStatus || b.Progress != tc.failProgress || b.PageCount != tc.failPages ||
			(b.Error != nil) != (tc.failStatus == "failed") || b.UpdatedAt != fixedNow().Add(tc.failUpdtd).UTC().Format(time.RFC3339Nano) {
			t.Errorf("failing at %v: %+v, want %s %v%% %d pages", tc.at, b, tc.failStatus, tc.failProgress, tc.failPages)
		}
		if tc.status != "completed" {
			e.wantError(bundle(ok.JobID, "Bearer "+key), http.StatusConflict, "bundle at "+tc.at.String())
		}
		e.wantError(bundle(fail.JobID, "Bearer "+key), http.StatusConflict, "bundle of the failing export at "+tc.at.String())
	}

	e.wantError(e.get("/v1/static-export/jobs/se_nope"), http.StatusNotFound, "unknown job")
	e.wantError(e.do("GET", "/v1/static-export/jobs/"+ok.JobID, "", map[string]string{"Authorization": "Bearer mint_other"}), http.StatusNotFound, "another organization's job")
	e.wantError(bundle(ok.JobID, "Bearer mint_other"), http.StatusNotFound, "another organization's bundle")
	e.wantError(bundle("se_nope", "Bearer "+key), http.StatusNotFound, "bundle of an unknown job")

	var urls []string
	for range 2 {
		var b struct {
			JobID     string `json:"jobId"`
			BundleURL string `json:"bundleUrl"`
			SizeBytes int64  `json:"sizeBytes"`
			ExpiresAt string `json:"expiresAt"`
		}
		e.decode(bundle(ok.JobID, "Bearer "+key), &b)
		if b.JobID != ok.JobID || !strings.HasPrefix(b.BundleURL, fakeapi.BundleURLPrefix+ok.JobID+"/bundle.tar.gz?") ||
			!strings.Contains(b.BundleURL, "&X-Amz-Expires=3600&") || b.SizeBytes <= 0 || b.ExpiresAt != clk.Now().Add(time.Hour).UTC().Format(time.RFC3339) {
			t.Errorf("bundle %+v", b)
		}
		urls = append(urls, b.BundleURL)
	}
	if urls[0] == urls[1] {
		t.Error("two bundles with one signature")
	}
}
