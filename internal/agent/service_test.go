package agent

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/gateway"
)

func TestAgentLifecycle(t *testing.T) {
	e := newEnv(t, fakeapi.Options{ArchiveAfter: 300 * time.Millisecond})
	cfg := testConfig()
	e.start(cfg, true)

	pr := e.submit("p1", "add a page #fake:pr:300ms")
	if pr.Status != "active" || pr.PRLink != nil {
		t.Fatalf("new job: status %q prLink %v, want active and null", pr.Status, pr.PRLink)
	}
	nopr := e.submit("p1", "nothing to change #fake:nopr:300ms")
	failed := e.submit("p1", "break #fake:fail:300ms")
	archived := e.submit("p1", "archive me later #fake:archive:300ms")
	forced := e.submit("p1", "archived by hand #fake:pr:300ms")

	// Active jobs are visible as such while they run.
	if v, ok := e.job("p1", pr.ID); !ok || v.Status != "active" || v.Tracking.Origin != "gateway" {
		t.Fatalf("right after submit: %+v ok=%v", v, ok)
	}
	if got := e.metric("mintlify_agent_jobs", "project", "p1", "status", "active"); got < 1 {
		t.Errorf("active gauge = %v while jobs run", got)
	}
	if got := e.metric("mintlify_agent_job_oldest_active_age_seconds", "project", "p1"); got <= 0 {
		t.Errorf("oldest active age = %v while jobs run", got)
	}

	v := e.waitStatus("p1", pr.ID, "completed", 5*time.Second)
	if v.PRLink == nil || !strings.Contains(*v.PRLink, "/pull/") {
		t.Errorf("completed job has prLink %v", v.PRLink)
	}
	if v.Tracking.TerminalAt == nil {
		t.Errorf("completed job has no terminalAt: %+v", v.Tracking)
	}
	if v := e.waitStatus("p1", nopr.ID, "completed", 5*time.Second); v.PRLink != nil {
		t.Errorf("nopr job has prLink %q", *v.PRLink)
	}
	e.waitStatus("p1", failed.ID, "failed", 5*time.Second)
	e.waitStatus("p1", forced.ID, "completed", 5*time.Second)
	if err := e.fake.SetJobStatus("p1", forced.ID, "archived"); err != nil {
		t.Fatal(err)
	}
	// Archives after completion are seen by the slow re-check (30 poll
	// intervals = 1.5s here).
	if v := e.waitStatus("p1", archived.ID, "archived", 10*time.Second); v.ArchivedAt == nil {
		t.Error("archived job has no archivedAt")
	}
	e.waitStatus("p1", forced.ID, "archived", 10*time.Second)

	checks := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"mintlify_agent_jobs_submitted_total", []string{"project", "p1"}, 5},
		// pr, nopr, archive and forced all completed first.
		{"mintlify_agent_jobs_finished_total", []string{"project", "p1", "status", "completed"}, 4},
		{"mintlify_agent_jobs_finished_total", []string{"project", "p1", "status", "failed"}, 1},
		{"mintlify_agent_jobs_finished_total", []string{"project", "p1", "status", "archived"}, 2},
		{"mintlify_agent_job_pull_requests_total", []string{"project", "p1"}, 3},
		{"mintlify_agent_job_duration_seconds", []string{"project", "p1", "status", "completed"}, 4},
		{"mintlify_agent_job_duration_seconds", []string{"project", "p1", "status", "failed"}, 1},
		// The archive is not a first terminal status: no duration sample.
		{"mintlify_agent_job_duration_seconds", []string{"project", "p1", "status", "archived"}, 0},
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "active"}, 0},
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "completed"}, 2},
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "failed"}, 1},
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "archived"}, 2},
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "lost"}, 0},
		{"mintlify_agent_job_oldest_active_age_seconds", []string{"project", "p1"}, 0},
		{"mintlify_agent_jobs_lost_total", []string{"project", "p1"}, 0},
	}
	for _, c := range checks {
		if got := e.metric(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}

	// Terminal jobs other than completed are polled no more; completed
	// ones only at the slow cadence.
	before := e.fake.Requests(fakeapi.GetJob)
	time.Sleep(10 * cfg.PollInterval)
	if d := e.fake.Requests(fakeapi.GetJob) - before; d > 2 {
		t.Errorf("%d get-job calls in 10 poll intervals with only finished jobs", d)
	}
}

func TestAgentDurationWithinOnePollInterval(t *testing.T) {
	e := newEnv(t, fakeapi.Options{})
	cfg := testConfig()
	cfg.PollInterval = 100 * time.Millisecond
	e.start(cfg, true)
	const jobDur = 700 * time.Millisecond
	j := e.submit("p1", "#fake:pr:700ms")
	e.waitStatus("p1", j.ID, "completed", 5*time.Second)
	if n := e.metric("mintlify_agent_job_duration_seconds", "project", "p1", "status", "completed"); n != 1 {
		t.Fatalf("histogram count = %v, want 1", n)
	}
	got := e.histSum("mintlify_agent_job_duration_seconds", "project", "p1", "status", "completed")
	// createdAt is truncated to the millisecond by the fake; the upper
	// bound is one poll interval plus 100ms for the request itself and
	// scheduling under -race.
	lo, hi := (jobDur - time.Millisecond).Seconds(), (jobDur + cfg.PollInterval + 100*time.Millisecond).Seconds()
	if got < lo || got > hi {
		t.Errorf("duration = %.3fs, want within [%.3f, %.3f] (the fake's %s plus at most one poll interval)", got, lo, hi, jobDur)
	}
}

func TestAgentBadInputNeverReachesUpstream(t *testing.T) {
	e := newEnv(t, fakeapi.Options{})
	cfg := testConfig("p1")
	cfg.MaxPromptBytes = 1024
	e.start(cfg, false)

	big := strings.Repeat("a", 1025)
	huge := `{"prompt":"` + strings.Repeat("b", 8192) + `"}`
	cases := []struct {
		name        string
		contentType string
		body        string
		status      int
		reason      string
	}{
		{"no content type", "", `{"prompt":"x"}`, 415, "unsupported_media_type"},
		{"text/plain", "text/plain", `{"prompt":"x"}`, 415, "unsupported_media_type"},
		{"form", "application/x-www-form-urlencoded", `prompt=x`, 415, "unsupported_media_type"},
		{"empty body", "application/json", ``, 400, "bad_request"},
		{"malformed", "application/json", `{"prompt":`, 400, "bad_request"},
		{"not an object", "application/json", `["x"]`, 400, "bad_request"},
		{"null body", "application/json", `null`, 400, "bad_request"},
		{"string body", "application/json", `"x"`, 400, "bad_request"},
		{"trailing data", "application/json", `{"prompt":"x"} {"prompt":"y"}`, 400, "bad_request"},
		{"missing prompt", "application/json", `{"promt":"x"}`, 400, "bad_request"},
		{"null prompt", "application/json", `{"prompt":null}`, 400, "bad_request"},
		{"empty prompt", "application/json", `{"prompt":""}`, 400, "bad_request"},
		{"blank prompt", "application/json", `{"prompt":"  \n\t"}`, 400, "bad_request"},
		{"number prompt", "application/json", `{"prompt":42}`, 400, "bad_request"},
		{"object prompt", "application/json", `{"prompt":{"text":"x"}}`, 400, "bad_request"},
		{"prompt over the limit", "application/json; charset=utf-8", `{"prompt":"` + big + `"}`, 413, "too_large"},
		{"body over the limit", "application/json", huge, 413, "too_large"},
	}
	want := map[string]float64{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := e.fake.Requests(fakeapi.CreateJob)
			r := e.do("POST", "/api/v2/agent/p1/job", c.contentType, []byte(c.body))
			if r.status != c.status {
				t.Errorf("HTTP %d, want %d: %s", r.status, c.status, r.body)
			}
			r.errorMessage(t)
			if ct := r.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			if d := e.fake.Requests(fakeapi.CreateJob) - before; d != 0 {
				t.Errorf("%d create requests reached the API", d)
			}
		})
		want[c.reason]++
	}
	for reason, n := range want {
		if got := e.metric("mintlify_agent_job_submit_rejected_total", "project", "p1", "reason", reason); got != n {
			t.Errorf("rejected{reason=%q} = %v, want %v", reason, got, n)
		}
	}
	// The limit is on the body: exactly at it is accepted, a byte over is not.
	atLimit := `{"prompt":"` + strings.Repeat("c", 1024-len(`{"prompt":""}`)) + `"}`
	if r := e.do("POST", "/api/v2/agent/p1/job", "application/json", []byte(atLimit+" ")); r.status != 413 {
		t.Errorf("1025-byte body: HTTP %d, want 413", r.status)
	}
	if r := e.do("POST", "/api/v2/agent/p1/job", "application/json", []byte(atLimit)); r.status != 200 {
		t.Errorf("1024-byte body: HTTP %d, want 200: %s", r.status, r.body)
	}
}

func TestAgentUnknownProject(t *testing.T) {
	e := newEnv(t, fakeapi.Options{})
	e.start(testConfig("p1"), false)
	for _, r := range []response{
		e.submitRaw("p2", "hello"),
		e.do("POST", "/api/v2/agent/p2/job", "text/plain", []byte("x")),
		e.do("GET", "/api/v2/agent/p2/jobs", "", nil),
		e.do("GET", "/api/v2/agent/p2/job/job_1", "", nil),
		e.do("POST", "/api/v2/agent/p2/job/job_1/track", "", nil),
	} {
		if r.status != http.StatusNotFound {
			t.Errorf("HTTP %d, want 404: %s", r.status, r.body)
		}
		r.errorMessage(t)
	}
	if n := e.fake.Requests(fakeapi.CreateJob) + e.fake.Requests(fakeapi.GetJob); n != 0 {
		t.Errorf("%d requests reached the API", n)
	}
	for k := range e.series("mintlify_agent_job_submit_rejected_total") {
		if strings.Contains(k, "p2") {
			t.Errorf("series for an unconfigured project: %s", k)
		}
	}
}

func TestAgentRoutes(t *testing.T) {
	e := newEnv(t, fakeapi.Options{JobDuration: time.Hour})
	e.start(testConfig("p1"), false)
	r := e.do("GET", "/api/v2/agent/p1/job", "", nil)
	if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "POST" {
		t.Errorf("GET .../job: HTTP %d Allow %q", r.status, r.header.Get("Allow"))
	}
	r.errorMessage(t)
	r = e.do("DELETE", "/api/v2/agent/p1/job/x", "", nil)
	if r.status != http.StatusMethodNotAllowed {
		t.Errorf("DELETE .../job/x: HTTP %d", r.status)
	}
	r = e.do("GET", "/api/v1/whatever", "", nil)
	if r.status != http.StatusNotFound {
		t.Errorf("unknown path: HTTP %d", r.status)
	}
	r.errorMessage(t)
	if _, ok := e.job("p1", "job_nope"); ok {
		t.Error("untracked job found")
	}

	var ids []string
	for i := range 3 {
		ids = append(ids, e.submit("p1", fmt.Sprintf("job %d", i)).ID)
		time.Sleep(5 * time.Millisecond) // distinct createdAt
	}
	failed := e.submit("p1", "#fake:fail:1ms")
	e.run()
	e.waitStatus("p1", failed.ID, "failed", 5*time.Second)

	all := e.jobs("p1", "")
	if len(all) != 4 || all[0].ID != failed.ID || all[3].ID != ids[0] {
		t.Errorf("jobs not newest first: %v", jobIDs(all))
	}
	if got := jobIDs(e.jobs("p1", "?status=active")); !slices.Equal(got, []string{ids[2], ids[1], ids[0]}) {
		t.Errorf("status=active: %v", got)
	}
	if got := jobIDs(e.jobs("p1", "?status=failed")); !slices.Equal(got, []string{failed.ID}) {
		t.Errorf("status=failed: %v", got)
	}
	if got := e.jobs("p1", "?status=archived"); len(got) != 0 {
		t.Errorf("status=archived: %v", jobIDs(got))
	}
	if got := jobIDs(e.jobs("p1", "?limit=2")); len(got) != 2 || got[0] != failed.ID {
		t.Errorf("limit=2: %v", got)
	}
	if r := e.do("GET", "/api/v2/agent/p1/jobs?limit=0", "", nil); r.status != 400 {
		t.Errorf("limit=0: HTTP %d", r.status)
	}
	// The list carries the API's field names.
	r = e.do("GET", "/api/v2/agent/p1/jobs", "", nil)
	for _, field := range []string{`"id"`, `"status"`, `"source"`, `"repository"`, `"ref"`, `"model"`, `"prLink"`, `"createdAt"`, `"archivedAt"`, `"tracking"`} {
		if !strings.Contains(string(r.body), field) {
			t.Errorf("list body lacks %s", field)
		}
	}
}

func jobIDs(vs []gateway.JobView) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.ID
	}
	return out
}

func TestAgentLocalRateLimit(t *testing.T) {
	e := newEnv(t, fakeapi.Options{JobDuration: time.Hour})
	e.start(testConfig("p1", "p2"), false)
	for i := range 100 {
		if r := e.submitRaw("p1", fmt.Sprintf("job %d", i)); r.status != 200 {
			t.Fatalf("submission %d: HTTP %d: %s", i+1, r.status, r.body)
		}
	}
	before := e.fake.Requests(fakeapi.CreateJob)
	r := e.submitRaw("p1", "one too many")
	if r.status != http.StatusTooManyRequests {
		t.Fatalf("101st submission: HTTP %d, want 429: %s", r.status, r.body)
	}
	r.errorMessage(t)
	ra, err := strconv.Atoi(r.header.Get("Retry-After"))
	if err != nil || ra < 3500 || ra > 3600 {
		t.Errorf("Retry-After %q, want about an hour", r.header.Get("Retry-After"))
	}
	if d := e.fake.Requests(fakeapi.CreateJob) - before; d != 0 {
		t.Errorf("%d create requests reached the API past the local limit", d)
	}
	if got := e.metric("mintlify_agent_job_submit_rejected_total", "project", "p1", "reason", "rate_limited"); got != 1 {
		t.Errorf("rate_limited = %v", got)
	}
	// The limit is per project.
	e.submit("p2", "other project")

	// A restart does not reset the window.
	e.start(testConfig("p1", "p2"), false)
	if r := e.submitRaw("p1", "after restart"); r.status != http.StatusTooManyRequests {
		t.Errorf("after restart: HTTP %d, want 429", r.status)
	}
	if d := e.fake.Requests(fakeapi.CreateJob) - before; d != 1 {
		t.Errorf("%d create requests reached the API, want 1 (p2)", d-1)
	}
}

func TestAgentUpstreamErrors(t *testing.T) {
	e := newEnv(t, fakeapi.Options{Projects: []string{"p1"}})
	e.start(testConfig("p1", "p9"), false)

	e.fake.SetFault(fakeapi.CreateJob, fakeapi.Fault{Status: 500, Remaining: 1})
	r := e.submitRaw("p1", "x")
	if r.status != 500 || !strings.Contains(r.errorMessage(t), "injected fault") {
		t.Errorf("upstream 500: HTTP %d %s", r.status, r.body)
	}
	// p9 is configured here but unknown upstream: the API's 404 and message.
	r = e.submitRaw("p9", "x")
	if r.status != 404 || r.errorMessage(t) != "project not found" {
		t.Errorf("upstream 404: HTTP %d %s", r.status, r.body)
	}
	if got := e.metric("mintlify_agent_job_submit_rejected_total", "project", "p1", "reason", "upstream_error"); got != 1 {
		t.Errorf("upstream_error = %v", got)
	}

	e.fake.SetFault(fakeapi.CreateJob, fakeapi.Fault{Status: 429, RetryAfter: "30", Remaining: 1})
	r = e.submitRaw("p1", "x")
	if r.status != 429 || r.header.Get("Retry-After") != "30" {
		t.Errorf("upstream 429: HTTP %d Retry-After %q %s", r.status, r.header.Get("Retry-After"), r.body)
	}
	// The client now holds creates back until the Retry-After passes: 429
	// again, and nothing is sent.
	before := e.fake.Requests(fakeapi.CreateJob)
	r = e.submitRaw("p1", "x")
	if r.status != 429 || r.header.Get("Retry-After") == "" {
		t.Errorf("throttled: HTTP %d Retry-After %q %s", r.status, r.header.Get("Retry-After"), r.body)
	}
	if d := e.fake.Requests(fakeapi.CreateJob) - before; d != 0 {
		t.Errorf("%d requests sent while throttled", d)
	}
	if got := e.metric("mintlify_agent_job_submit_rejected_total", "project", "p1", "reason", "rate_limited"); got != 2 {
		t.Errorf("rate_limited = %v, want 2", got)
	}
	if got := e.metric("mintlify_agent_jobs_submitted_total", "project", "p1"); got != 0 {
		t.Errorf("submitted = %v after only failures", got)
	}
	if n := len(e.jobs("p1", "")); n != 0 {
		t.Errorf("%d jobs tracked after only failures", n)
	}
}

func TestAgentUpstream404MeansLost(t *testing.T) {
	e := newEnv(t, fakeapi.Options{})
	cfg := testConfig()
	e.start(cfg, true)
	j := e.submit("p1", "#fake:pr:1h")
	eventually(t, 5*time.Second, "first poll", func() bool { return e.fake.Requests(fakeapi.GetJob) > 0 })
	if err := e.fake.ForgetJob("p1", j.ID); err != nil {
		t.Fatal(err)
	}
	v := e.waitStatus("p1", j.ID, "lost", 10*time.Second)
	if v.Tracking.LastUpstreamStatus != "active" || v.Tracking.LastError == "" || v.Tracking.TerminalAt == nil {
		t.Errorf("lost job tracking: %+v", v.Tracking)
	}
	if got := jobIDs(e.jobs("p1", "?status=lost")); !slices.Equal(got, []string{j.ID}) {
		t.Errorf("status=lost: %v", got)
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "lost"}, 1},
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "active"}, 0},
		{"mintlify_agent_jobs_lost_total", []string{"project", "p1"}, 1},
		{"mintlify_agent_job_oldest_active_age_seconds", []string{"project", "p1"}, 0},
	} {
		if got := e.metric(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	for k, v := range e.series("mintlify_agent_jobs_finished_total") {
		if v != 0 {
			t.Errorf("lost job counted as finished: %s = %v", k, v)
		}
	}
	// Not retried forever.
	n := e.fake.Requests(fakeapi.GetJob)
	if n < lostAfter404s+1 {
		t.Errorf("declared lost after %d gets, want %d 404s in a row", n, lostAfter404s)
	}
	time.Sleep(10 * cfg.PollInterval)
	if d := e.fake.Requests(fakeapi.GetJob) - n; d != 0 {
		t.Errorf("lost job polled %d more times", d)
	}
}

func TestAgentUnknownStatus(t *testing.T) {
	e := newEnv(t, fakeapi.Options{})
	e.start(testConfig(), true)
	j := e.submit("p1", "#fake:unknown:100ms")
	e.waitStatus("p1", j.ID, "waiting_for_review", 5*time.Second)
	if got := e.metric("mintlify_agent_jobs", "project", "p1", "status", "waiting_for_review"); got != 1 {
		t.Errorf("gauge for the unknown status = %v", got)
	}
	if got := e.metric("mintlify_agent_job_oldest_active_age_seconds", "project", "p1"); got <= 0 {
		t.Errorf("oldest active age = %v with a job in an unknown status", got)
	}
	// Still polled: not terminal.
	n := e.fake.Requests(fakeapi.GetJob)
	eventually(t, 5*time.Second, "more polls", func() bool { return e.fake.Requests(fakeapi.GetJob) >= n+3 })
	for k, v := range e.series("mintlify_agent_jobs_finished_total") {
		if v != 0 {
			t.Errorf("unknown status counted as finished: %s = %v", k, v)
		}
	}
	if err := e.fake.SetJobStatus("p1", j.ID, "completed"); err != nil {
		t.Fatal(err)
	}
	e.waitStatus("p1", j.ID, "completed", 5*time.Second)
	if got := e.metric("mintlify_agent_jobs_finished_total", "project", "p1", "status", "completed"); got != 1 {
		t.Errorf("finished completed = %v", got)
	}
	if _, ok := e.series("mintlify_agent_jobs")["project=p1,status=waiting_for_review"]; ok {
		t.Error("the unknown status series stays after no job has it")
	}
}

func TestAgentRestartRecovery(t *testing.T) {
	e := newEnv(t, fakeapi.Options{})
	cfg := testConfig()
	e.start(cfg, true)
	done := e.submit("p1", "#fake:pr:100ms")
	failed := e.submit("p1", "#fake:fail:100ms")
	running := e.submit("p1", "#fake:pr:2s")
	e.waitStatus("p1", done.ID, "completed", 5*time.Second)
	e.waitStatus("p1", failed.ID, "failed", 5*time.Second)
	if got := e.metric("mintlify_agent_jobs_finished_total", "project", "p1", "status", "completed"); got != 1 {
		t.Fatalf("before restart: completed = %v", got)
	}

	// Restart on the same state file, as a new process would.
	e.start(cfg, true)
	if v, ok := e.job("p1", done.ID); !ok || v.Status != "completed" || v.PRLink == nil {
		t.Errorf("finished job after restart: %+v %v", v, ok)
	}
	if v, ok := e.job("p1", running.ID); !ok || v.Status != "active" {
		t.Errorf("running job after restart: %+v %v", v, ok)
	}
	if got := e.metric("mintlify_agent_jobs", "project", "p1", "status", "completed"); got != 1 {
		t.Errorf("completed gauge after restart = %v", got)
	}
	e.waitStatus("p1", running.ID, "completed", 10*time.Second)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		// Only the job that finished after the restart counts in the new process.
		{"mintlify_agent_jobs_finished_total", []string{"project", "p1", "status", "completed"}, 1},
		{"mintlify_agent_jobs_finished_total", []string{"project", "p1", "status", "failed"}, 0},
		{"mintlify_agent_job_pull_requests_total", []string{"project", "p1"}, 1},
		{"mintlify_agent_job_duration_seconds", []string{"project", "p1", "status", "completed"}, 1},
		{"mintlify_agent_jobs_submitted_total", []string{"project", "p1"}, 0},
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "completed"}, 2},
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "failed"}, 1},
	} {
		if got := e.metric(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}

	// A third start: everything terminal, nothing counted.
	e.start(cfg, true)
	time.Sleep(5 * cfg.PollInterval)
	for k, v := range e.series("mintlify_agent_jobs_finished_total") {
		if v != 0 {
			t.Errorf("counted again after restart: %s = %v", k, v)
		}
	}
}

func TestAgentStateFileLocked(t *testing.T) {
	e := newEnv(t, fakeapi.Options{})
	e.start(testConfig(), false)
	cfg := testConfig()
	cfg.StatePath = e.statePath
	if _, err := New(e.client, nil, cfg, nil); err == nil || !strings.Contains(err.Error(), "locked") {
		t.Errorf("second Service on the same state file: err = %v, want locked", err)
	}
}

func TestAgentConcurrentSubmissions(t *testing.T) {
	// 200 submissions at once over two projects: the API's limit (and ours)
	// is 100 per hour per project.
	e := newEnv(t, fakeapi.Options{JobDuration: 300 * time.Millisecond})
	svc := e.start(testConfig("p1", "p2"), true)
	var (
		mu  sync.Mutex
		ids = map[string]string{}
		wg  sync.WaitGroup
	)
	for i := range 200 {
		project := []string{"p1", "p2"}[i%2]
		wg.Go(func() {
			r := e.submitRaw(project, fmt.Sprintf("job %d #fake:pr", i))
			if r.status != 200 {
				t.Errorf("submission %d: HTTP %d: %s", i, r.status, r.body)
				return
			}
			var j apiclient.Job
			if err := json.Unmarshal(r.body, &j); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			ids[j.ID] = project
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(ids) != 200 {
		t.Fatalf("%d distinct jobs accepted, want 200", len(ids))
	}
	// Every accepted job is in the state file already.
	if n, err := svc.store.Len(); err != nil || n != 200 {
		t.Errorf("state file holds %d jobs (%v), want 200", n, err)
	}
	eventually(t, 20*time.Second, "all jobs completed", func() bool {
		return e.metric("mintlify_agent_jobs", "project", "p1", "status", "completed")+
			e.metric("mintlify_agent_jobs", "project", "p2", "status", "completed") == 200
	})
	for _, p := range []string{"p1", "p2"} {
		for name, want := range map[string]float64{
			"mintlify_agent_jobs_submitted_total":    100,
			"mintlify_agent_jobs_finished_total":     100,
			"mintlify_agent_job_pull_requests_total": 100,
		} {
			labels := []string{"project", p}
			if name == "mintlify_agent_jobs_finished_total" {
				labels = append(labels, "status", "completed")
			}
			if got := e.metric(name, labels...); got != want {
				t.Errorf("%s%v = %v, want %v", name, labels, got, want)
			}
		}
	}
	for id, p := range ids {
		if v, ok := e.job(p, id); !ok || v.Status != "completed" {
			t.Errorf("job %s/%s: %+v %v", p, id, v.Status, ok)
		}
	}
}

func TestAgentTrack(t *testing.T) {
	e := newEnv(t, fakeapi.Options{})
	e.start(testConfig(), false) // not polling: every get is the track's own
	ctx := t.Context()
	elsewhere, err := e.client.CreateJob(ctx, "p1", "made elsewhere #fake:pr:300ms")
	if err != nil {
		t.Fatal(err)
	}
	gets := e.fake.Requests(fakeapi.GetJob)
	r := e.do("POST", "/api/v2/agent/p1/job/"+elsewhere.ID+"/track", "", nil)
	if r.status != http.StatusCreated {
		t.Fatalf("track: HTTP %d: %s", r.status, r.body)
	}
	if d := e.fake.Requests(fakeapi.GetJob) - gets; d != 1 {
		t.Errorf("track made %d get requests, want 1", d)
	}
	// Tracking again is a no-op.
	r = e.do("POST", "/api/v2/agent/p1/job/"+elsewhere.ID+"/track", "", nil)
	if r.status != http.StatusOK {
		t.Errorf("track again: HTTP %d: %s", r.status, r.body)
	}
	if d := e.fake.Requests(fakeapi.GetJob) - gets; d != 1 {
		t.Errorf("track again made a request")
	}
	if v, ok := e.job("p1", elsewhere.ID); !ok || v.Tracking.Origin != "track" || v.Status != "active" {
		t.Errorf("tracked job: %+v %v", v, ok)
	}
	// Unknown upstream: 404, nothing tracked.
	r = e.do("POST", "/api/v2/agent/p1/job/job_999999/track", "", nil)
	if r.status != http.StatusNotFound {
		t.Errorf("track unknown: HTTP %d: %s", r.status, r.body)
	}
	r.errorMessage(t)
	if _, ok := e.job("p1", "job_999999"); ok {
		t.Error("unknown job got tracked")
	}

	// A job that already finished elsewhere is tracked but not counted.
	finished, err := e.client.CreateJob(ctx, "p1", "#fake:fail:1ms")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if r := e.do("POST", "/api/v2/agent/p1/job/"+finished.ID+"/track", "", nil); r.status != http.StatusCreated {
		t.Fatalf("track finished: HTTP %d: %s", r.status, r.body)
	}

	e.run()
	e.waitStatus("p1", elsewhere.ID, "completed", 5*time.Second)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"mintlify_agent_jobs_finished_total", []string{"project", "p1", "status", "completed"}, 1},
		{"mintlify_agent_jobs_finished_total", []string{"project", "p1", "status", "failed"}, 0},
		{"mintlify_agent_job_pull_requests_total", []string{"project", "p1"}, 1},
		{"mintlify_agent_jobs_submitted_total", []string{"project", "p1"}, 0},
		{"mintlify_agent_jobs", []string{"project", "p1", "status", "failed"}, 1},
	} {
		if got := e.metric(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

func TestAgentPollBackoff(t *testing.T) {
	e := newEnv(t, fakeapi.Options{})
	cfg := testConfig()
	e.start(cfg, false)
	j := e.submit("p1", "#fake:pr:100ms")
	e.fake.SetFault(fakeapi.GetJob, fakeapi.Fault{Status: 503})
	e.run()
	time.Sleep(40 * cfg.PollInterval)
	n := e.fake.Requests(fakeapi.GetJob)
	// Without backoff: about 40. With doubling from 50ms: 50+100+200+400+800
	// ms covers 1.55s of the 2s, so about 6 (jitter ±20%).
	if n < 3 || n > 10 {
		t.Errorf("%d polls in 40 poll intervals of errors, want backoff (about 6)", n)
	}
	v, _ := e.job("p1", j.ID)
	if v.Status != "active" || !strings.Contains(v.Tracking.LastError, "503") {
		t.Errorf("job during errors: status %q lastError %q", v.Status, v.Tracking.LastError)
	}
	e.fake.ClearFaults()
	v = e.waitStatus("p1", j.ID, "completed", 10*time.Second)
	if v.Tracking.LastError != "" {
		t.Errorf("lastError not cleared: %q", v.Tracking.LastError)
	}
}

func TestAgentRetention(t *testing.T) {
	e := newEnv(t, fakeapi.Options{})
	cfg := testConfig()
	cfg.Retention = 500 * time.Millisecond
	svc := e.start(cfg, true)
	j := e.submit("p1", "#fake:fail:50ms")
	keep := e.submit("p1", "#fake:pr:1h")
	e.waitStatus("p1", j.ID, "failed", 5*time.Second)
	eventually(t, 5*time.Second, "the job to be forgotten", func() bool {
		_, ok := e.job("p1", j.ID)
		return !ok
	})
	if n, _ := svc.store.Len(); n != 1 {
		t.Errorf("state file holds %d jobs, want 1", n)
	}
	if _, ok := e.job("p1", keep.ID); !ok {
		t.Error("active job forgotten")
	}
	if got := e.metric("mintlify_agent_jobs", "project", "p1", "status", "failed"); got != 0 {
		t.Errorf("failed gauge = %v after retention", got)
	}
	if got := e.metric("mintlify_agent_jobs_finished_total", "project", "p1", "status", "failed"); got != 1 {
		t.Errorf("finished failed = %v: counters keep counting", got)
	}
}
