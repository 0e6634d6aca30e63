package fakeapi_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

func (e *env) create(project, prompt string) job {
	e.t.Helper()
	var j job
	e.decodeStatus(e.do("POST", "/v2/agent/"+project+"/job", `{"prompt":`+strconv.Quote(prompt)+`}`, nil), http.StatusCreated, &j)
	return j
}

func (e *env) job(project, id string) job {
	e.t.Helper()
	var j job
	e.decode(e.get("/v2/agent/"+project+"/job/"+id), &j)
	return j
}

func TestJobLifecycle(t *testing.T) {
	t.Parallel()
	clk := newClock()
	e := start(t, fakeapi.Options{Now: clk.Now, JobDuration: time.Minute, ArchiveAfter: 30 * time.Second})
	t0 := clk.Now()

	type want struct {
		status     string
		pr         bool
		archivedAt time.Time // zero: null
	}
	cases := []struct {
		prompt string
		at     map[time.Duration]want
	}{
		{"#fake:pr:10s", map[time.Duration]want{0: {"active", false, time.Time{}}, 9 * time.Second: {"active", false, time.Time{}}, 10 * time.Second: {"completed", true, time.Time{}}, time.Hour: {"completed", true, time.Time{}}}},
		{"please #fake:nopr:10s", map[time.Duration]want{0: {"active", false, time.Time{}}, 10 * time.Second: {"completed", false, time.Time{}}}},
		{"#fake:fail:10s", map[time.Duration]want{0: {"active", false, time.Time{}}, 10 * time.Second: {"failed", false, time.Time{}}, time.Hour: {"failed", false, time.Time{}}}},
		{"#fake:archive:10s", map[time.Duration]want{
			0:                {"active", false, time.Time{}},
			10 * time.Second: {"completed", true, time.Time{}},
			39 * time.Second: {"completed", true, time.Time{}},
			40 * time.Second: {"archived", true, t0.Add(40 * time.Second)},
			time.Hour:        {"archived", true, t0.Add(40 * time.Second)},
		}},
		{"#fake:unknown:10s", map[time.Duration]want{0: {"active", false, time.Time{}}, 10 * time.Second: {"waiting_for_review", false, time.Time{}}}},
		// Without a duration the job lasts JobDuration ±50%.
		{"#fake:pr", map[time.Duration]want{0: {"active", false, time.Time{}}, 29 * time.Second: {"active", false, time.Time{}}, 90 * time.Second: {"completed", true, time.Time{}}}},
	}
	for _, tc := range cases {
		clk.Set(t0)
		created := e.create("docs", tc.prompt)
		if created.ID == "" || created.Status != "active" || created.PRLink != nil || created.ArchivedAt != nil {
			t.Errorf("%q: created %+v, want active with null prLink and archivedAt", tc.prompt, created)
		}
		if !created.CreatedAt.Equal(t0) || created.Source.Repository == "" || created.Source.Ref == "" || created.Model == "" {
			t.Errorf("%q: created %+v", tc.prompt, created)
		}
		for after, w := range tc.at {
			clk.Set(t0.Add(after))
			r := e.get("/v2/agent/docs/job/" + created.ID)
			var got job
			e.decode(r, &got)
			if got.ID != created.ID || got.Status != w.status || !got.CreatedAt.Equal(t0) || got.Source != created.Source {
				t.Errorf("%q at +%v: %+v, want status %s", tc.prompt, after, got, w.status)
			}
			if (got.PRLink != nil) != w.pr {
				t.Errorf("%q at +%v: prLink %v, want set=%v", tc.prompt, after, got.PRLink, w.pr)
			}
			if w.pr && got.PRLink != nil && !strings.HasPrefix(*got.PRLink, "https://github.com/") {
				t.Errorf("%q: prLink %q", tc.prompt, *got.PRLink)
			}
			if w.archivedAt.IsZero() != (got.ArchivedAt == nil) || (got.ArchivedAt != nil && !got.ArchivedAt.Equal(w.archivedAt)) {
				t.Errorf("%q at +%v: archivedAt %v, want %v", tc.prompt, after, got.ArchivedAt, w.archivedAt)
			}
			// Nulls are sent as null, not left out.
			for _, field := range []string{`"prLink":`, `"archivedAt":`} {
				if !strings.Contains(string(r.body), field) {
					t.Errorf("%q: %s missing from %s", tc.prompt, field, r.body)
				}
			}
		}
	}
	if n := e.fake.JobCount(); n != len(cases) {
		t.Errorf("JobCount = %d, want %d", n, len(cases))
	}
}

func TestJobDefaultOutcomesAreKnown(t *testing.T) {
	t.Parallel()
	clk := newClock()
	e := start(t, fakeapi.Options{Now: clk.Now, JobDuration: time.Minute, ArchiveAfter: time.Minute})
	var ids []string
	for range 60 {
		ids = append(ids, e.create("docs", "update the quickstart").ID)
	}
	clk.Advance(time.Hour)
	seen := map[string]int{}
	for _, id := range ids {
		j := e.job("docs", id)
		seen[j.Status]++
		switch j.Status {
		case "completed", "failed", "archived":
		default:
			t.Errorf("job %s: status %q an hour after creation", id, j.Status)
		}
		if j.Status == "failed" && j.PRLink != nil {
			t.Errorf("failed job %s has a prLink", id)
		}
	}
	if seen["completed"] == 0 || seen["failed"] == 0 {
		t.Errorf("outcomes %v: want a mix", seen)
	}
}

func TestSetJobStatusAndForgetJob(t *testing.T) {
	t.Parallel()
	clk := newClock()
	e := start(t, fakeapi.Options{Now: clk.Now})
	pr := e.create("docs", "#fake:pr:10s")
	active := e.create("docs", "#fake:pr:10m")
	clk.Advance(time.Minute)

	// Archiving a completed job: archivedAt is the time of archiving and
	// stays put; the PR it opened stays.
	archivedAt := clk.Now()
	if err := e.fake.SetJobStatus("docs", pr.ID, "archived"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	j := e.job("docs", pr.ID)
	if j.Status != "archived" || j.ArchivedAt == nil || !j.ArchivedAt.Equal(archivedAt) {
		t.Errorf("forced archive: %+v, want archived at %v", j, archivedAt)
	}
	if j.PRLink == nil {
		t.Error("forced archive dropped the prLink of a job that had opened its PR")
	}

	// Forcing a job that is still running.
	if err := e.fake.SetJobStatus("docs", active.ID, "failed"); err != nil {
		t.Fatal(err)
	}
	clk.Set(fixedNow().Add(2 * time.Minute))
	if j := e.job("docs", active.ID); j.Status != "failed" || j.PRLink != nil || j.ArchivedAt != nil {
		t.Errorf("forced failed: %+v", j)
	}
	if err := e.fake.SetJobStatus("docs", active.ID, "archived"); err != nil {
		t.Fatal(err)
	}
	if j := e.job("docs", active.ID); j.Status != "archived" || j.PRLink != nil {
		t.Errorf("archived before it finished: %+v, want no prLink", j)
	}
	// An empty status returns the job to its scripted course.
	if err := e.fake.SetJobStatus("docs", active.ID, ""); err != nil {
		t.Fatal(err)
	}
	if j := e.job("docs", active.ID); j.Status != "active" || j.ArchivedAt != nil {
		t.Errorf("after clearing the override: %+v, want active", j)
	}

	if err := e.fake.ForgetJob("docs", pr.ID); err != nil {
		t.Fatal(err)
	}
	e.wantError(e.get("/v2/agent/docs/job/"+pr.ID), 404, "forgotten job")
	if err := e.fake.SetJobStatus("docs", "job_nope", "failed"); err == nil {
		t.Error("SetJobStatus on an unknown job succeeded")
	}
	if err := e.fake.ForgetJob("docs", "job_nope"); err == nil {
		t.Error("ForgetJob on an unknown job succeeded")
	}
}

func TestJobsArePerProject(t *testing.T) {
	t.Parallel()
	e := start(t, fakeapi.Options{Projects: []string{"docs", "other"}})
	j := e.create("docs", "x")
	e.wantError(e.get("/v2/agent/other/job/"+j.ID), 404, "job of another project")
	e.wantError(e.get("/v2/agent/docs/job/job_999999"), 404, "unknown job")
	if got := e.fake.Requests(fakeapi.GetJob); got != 2 {
		t.Errorf("Requests(get_job) = %d, want 2", got)
	}
	if got := e.fake.Requests(fakeapi.CreateJob); got != 1 {
		t.Errorf("Requests(create_job) = %d, want 1", got)
	}
}

func TestCreateJobValidation(t *testing.T) {
	t.Parallel()
	e := start(t, fakeapi.Options{})
	for _, tc := range []struct {
		name, body, contentType string
		want                    int
	}{
		{"ok", `{"prompt":"x"}`, "application/json", 201},
		{"charset", `{"prompt":"x"}`, "application/json; charset=utf-8", 201},
		{"extra fields", `{"prompt":"x","other":1}`, "application/json", 201},
		{"text/plain", `{"prompt":"x"}`, "text/plain", 415},
		{"form", `prompt=x`, "application/x-www-form-urlencoded", 415},
		{"no content type", `{"prompt":"x"}`, "", 415},
		{"empty prompt", `{"prompt":""}`, "application/json", 400},
		{"missing prompt", `{}`, "application/json", 400},
		{"null prompt", `{"prompt":null}`, "application/json", 400},
		{"number prompt", `{"prompt":5}`, "application/json", 400},
		{"array prompt", `{"prompt":["x"]}`, "application/json", 400},
		{"malformed", `{"prompt":`, "application/json", 400},
		{"not an object", `"x"`, "application/json", 400},
		{"empty body", ``, "application/json", 400},
	} {
		hdr := map[string]string{"Content-Type": tc.contentType}
		r := e.do("POST", "/v2/agent/docs/job", tc.body, hdr)
		if tc.want == http.StatusCreated {
			var j job
			e.decodeStatus(r, http.StatusCreated, &j)
			continue
		}
		e.wantError(r, tc.want, tc.name)
	}
	if n := e.fake.JobCount(); n != 3 {
		t.Errorf("JobCount = %d, want 3: rejected requests create nothing", n)
	}
	// Wrong methods are not routes.
	if r := e.do("GET", "/v2/agent/docs/job", "", nil); r.status != http.StatusMethodNotAllowed {
		t.Errorf("GET on create: %d", r.status)
	}
}

func TestCreateJobRateLimit(t *testing.T) {
	t.Parallel()
	clk := newClock()
	e := start(t, fakeapi.Options{Projects: []string{"docs", "other"}, Now: clk.Now})
	t0 := clk.Now()
	for range fakeapi.CreateJobLimit / 2 {
		e.create("docs", "x")
	}
	clk.Advance(30 * time.Minute)
	for range fakeapi.CreateJobLimit / 2 {
		e.create("docs", "x")
	}
	r := e.do("POST", "/v2/agent/docs/job", `{"prompt":"x"}`, nil)
	e.wantError(r, 429, "101st create within the hour")
	// The oldest creation leaves the window at t0+1h, 30m from now.
	if got := r.header.Get("Retry-After"); got != "1801" {
		t.Errorf("Retry-After %q, want 1801", got)
	}
	if n := e.fake.JobCount(); n != fakeapi.CreateJobLimit {
		t.Errorf("JobCount = %d, want %d", n, fakeapi.CreateJobLimit)
	}
	// Per project.
	e.create("other", "x")
	// Rejected attempts do not count against the limit: once the first
	// batch has aged out, 50 more fit.
	clk.Set(t0.Add(time.Hour))
	for i := range fakeapi.CreateJobLimit / 2 {
		if r := e.do("POST", "/v2/agent/docs/job", `{"prompt":"x"}`, nil); r.status != http.StatusCreated {
			t.Fatalf("create %d after the window moved: %d %s", i, r.status, r.body)
		}
	}
	e.wantError(e.do("POST", "/v2/agent/docs/job", `{"prompt":"x"}`, nil), 429, "limit again")
}

func TestServe(t *testing.T) {
	t.Parallel()
	fake := fakeapi.New(fakeapi.Options{APIKey: key})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, wait, err := fake.Serve(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Errorf("base URL %q, want loopback", base)
	}
	get := func() (int, error) {
		req, _ := http.NewRequest("GET", base+"/v1/analytics/any/visitors", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if status, err := get(); err != nil || status != 200 {
		t.Errorf("status %d, err %v", status, err)
	}
	cancel()
	if err := wait(); err != nil {
		t.Errorf("wait: %v", err)
	}
	if _, err := get(); err == nil {
		t.Error("still serving after its context ended")
	}
	if _, _, err := fake.Serve(context.Background(), "256.0.0.1:0"); err == nil {
		t.Error("Serve on a bad address succeeded")
	}
}

func TestFollowUpMessage(t *testing.T) {
	t.Parallel()
	clk := newClock()
	e := start(t, fakeapi.Options{Projects: []string{"docs", "other"}, Now: clk.Now})
	j := e.create("docs", "#fake:pr:1m")
	clk.Advance(2 * time.Minute)
	if got := e.job("docs", j.ID); got.Status != "completed" || got.PRLink == nil {
		t.Fatalf("first turn: %+v", got)
	}
	msg := func(project, id, prompt string) response {
		return e.do("POST", "/v2/agent/"+project+"/job/"+id+"/message", `{"prompt":`+strconv.Quote(prompt)+`}`, nil)
	}
	var after job
	e.decode(msg("docs", j.ID, "more #fake:fail:30s"), &after)
	if after.ID != j.ID || after.Status != "active" || after.PRLink != nil {
		t.Errorf("answer to the message: %+v, want the job active again", after)
	}
	clk.Advance(29 * time.Second)
	if got := e.job("docs", j.ID); got.Status != "active" {
		t.Errorf("during the second turn: %s", got.Status)
	}
	clk.Advance(time.Second)
	if got := e.job("docs", j.ID); got.Status != "failed" || !got.CreatedAt.Equal(j.CreatedAt) {
		t.Errorf("after the second turn: %+v, want failed (the message's directive), createdAt unchanged", got)
	}
	if n := e.fake.Messages("docs", j.ID); n != 1 {
		t.Errorf("Messages = %d", n)
	}

	e.wantError(msg("docs", "job_999999", "x"), 404, "unknown job")
	e.wantError(e.do("POST", "/v2/agent/docs/job/"+j.ID+"/message", `{"prompt":""}`, nil), 400, "empty prompt")
	e.wantError(e.do("POST", "/v2/agent/docs/job/"+j.ID+"/message", `{"prompt":1}`, nil), 400, "number prompt")

	// 100 per project per hour, its own limit beside creates'.
	for i := 1; i < fakeapi.MessageLimit; i++ {
		if r := msg("docs", j.ID, "x"); r.status != 200 {
			t.Fatalf("message %d: %d %s", i+1, r.status, r.body)
		}
	}
	r := msg("docs", j.ID, "x")
	e.wantError(r, 429, "101st message within the hour")
	if r.header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	if r := e.do("POST", "/v2/agent/docs/job", `{"prompt":"x"}`, nil); r.status != http.StatusCreated {
		t.Errorf("create after the message limit: %d", r.status)
	}
	o := e.create("other", "x")
	if r := msg("other", o.ID, "x"); r.status != 200 {
		t.Errorf("other project: %d", r.status)
	}
}

func TestJobIDPrefix(t *testing.T) {
	t.Parallel()
	e := start(t, fakeapi.Options{JobIDPrefix: "job_run7_"})
	if j := e.create("docs", "x"); j.ID != "job_run7_000001" {
		t.Errorf("id %q, want job_run7_000001", j.ID)
	}
	if j := start(t, fakeapi.Options{}).create("docs", "x"); j.ID != "job_000001" {
		t.Errorf("default id %q", j.ID)
	}
}
