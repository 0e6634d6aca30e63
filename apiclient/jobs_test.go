package apiclient_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

func TestCreateAndGetJob(t *testing.T) {
	t.Parallel()
	clk := newClock()
	fake, rec, srv := startFake(t, fakeapi.Options{Now: clk.Now, ArchiveAfter: 30 * time.Second})
	c := newClient(t, srv.URL, nil)
	ctx := testCtx(t)
	created := clk.Now()

	type step struct {
		after      time.Duration
		status     string
		pr         bool
		archivedAt time.Duration // from creation; 0 = nil
	}
	cases := []struct {
		prompt string
		steps  []step
	}{
		{"fix the typo #fake:pr:1m", []step{{0, "active", false, 0}, {59 * time.Second, "active", false, 0}, {time.Minute, "completed", true, 0}}},
		{"#fake:nopr:1m", []step{{0, "active", false, 0}, {2 * time.Minute, "completed", false, 0}}},
		{"#fake:fail:1m", []step{{0, "active", false, 0}, {2 * time.Minute, "failed", false, 0}}},
		{"#fake:archive:1m", []step{{0, "active", false, 0}, {time.Minute, "completed", true, 0}, {90 * time.Second, "archived", true, 90 * time.Second}}},
		{"#fake:unknown:1m", []step{{0, "active", false, 0}, {2 * time.Minute, "waiting_for_review", false, 0}}},
	}
	for _, tc := range cases {
		clk.Set(created)
		job, err := c.CreateJob(ctx, testProject, tc.prompt)
		if err != nil {
			t.Fatalf("%q: CreateJob: %v", tc.prompt, err)
		}
		body := rec.requests()[len(rec.requests())-1].body
		var sent map[string]any
		if err := json.Unmarshal(body, &sent); err != nil || len(sent) != 1 || sent["prompt"] != tc.prompt {
			t.Errorf("%q: request body %s, want {\"prompt\": ...} only", tc.prompt, body)
		}
		if job.ID == "" || job.Status != apiclient.StatusActive || job.PRLink != nil || job.ArchivedAt != nil {
			t.Errorf("%q: created job %+v, want an active job with null prLink and archivedAt", tc.prompt, job)
		}
		if !job.CreatedAt.Equal(created) {
			t.Errorf("%q: createdAt %v, want %v", tc.prompt, job.CreatedAt, created)
		}
		if job.Source.Repository != "https://github.com/acme/docs" || job.Source.Ref == "" || job.Model == "" {
			t.Errorf("%q: source/model not decoded: %+v", tc.prompt, job)
		}
		for _, st := range tc.steps {
			clk.Set(created.Add(st.after))
			got, err := c.GetJob(ctx, testProject, job.ID)
			if err != nil {
				t.Fatalf("%q at +%v: GetJob: %v", tc.prompt, st.after, err)
			}
			if got.ID != job.ID || got.Status != st.status || !got.CreatedAt.Equal(created) {
				t.Errorf("%q at +%v: %+v, want status %s", tc.prompt, st.after, got, st.status)
			}
			if (got.PRLink != nil) != st.pr {
				t.Errorf("%q at +%v: prLink %v, want set=%v", tc.prompt, st.after, got.PRLink, st.pr)
			} else if st.pr && !strings.HasPrefix(*got.PRLink, "https://github.com/acme/docs/pull/") {
				t.Errorf("%q: prLink %q", tc.prompt, *got.PRLink)
			}
			switch {
			case st.archivedAt == 0 && got.ArchivedAt != nil:
				t.Errorf("%q at +%v: archivedAt %v, want null", tc.prompt, st.after, got.ArchivedAt)
			case st.archivedAt != 0 && (got.ArchivedAt == nil || !got.ArchivedAt.Equal(created.Add(st.archivedAt))):
				t.Errorf("%q at +%v: archivedAt %v, want %v", tc.prompt, st.after, got.ArchivedAt, created.Add(st.archivedAt))
			}
			if apiclient.IsTerminal(got.Status) != (st.status != "active" && st.status != "waiting_for_review") {
				t.Errorf("IsTerminal(%q) = %v", got.Status, apiclient.IsTerminal(got.Status))
			}
		}
	}
	if n := fake.JobCount(); n != len(cases) {
		t.Errorf("fake holds %d jobs, want %d", n, len(cases))
	}
}

func TestJobDecodesNullsAndTimes(t *testing.T) {
	t.Parallel()
	bodies := map[string]func(*testing.T, *apiclient.Job){
		`{"id":"j1","status":"completed","source":{"repository":"https://github.com/o/r","ref":"main"},"model":"m","prLink":"https://github.com/o/r/pull/7","createdAt":"2025-01-02T03:04:05.678Z","archivedAt":"2025-01-03T00:00:00+02:00"}`: func(t *testing.T, j *apiclient.Job) {
			if j.PRLink == nil || *j.PRLink != "https://github.com/o/r/pull/7" {
				t.Errorf("prLink %v", j.PRLink)
			}
			if j.ArchivedAt == nil || !j.ArchivedAt.Equal(time.Date(2025, 1, 2, 22, 0, 0, 0, time.UTC)) {
				t.Errorf("archivedAt %v", j.ArchivedAt)
			}
			if !j.CreatedAt.Equal(time.Date(2025, 1, 2, 3, 4, 5, 678e6, time.UTC)) {
				t.Errorf("createdAt %v", j.CreatedAt)
			}
			if j.Source != (apiclient.Source{Repository: "https://github.com/o/r", Ref: "main"}) || j.Model != "m" || j.Status != "completed" {
				t.Errorf("job %+v", j)
			}
		},
		`{"id":"j2","status":"active","source":{},"model":"m","prLink":null,"createdAt":"2025-01-02T03:04:05Z","archivedAt":null}`: func(t *testing.T, j *apiclient.Job) {
			if j.PRLink != nil || j.ArchivedAt != nil {
				t.Errorf("nulls decoded as %v %v", j.PRLink, j.ArchivedAt)
			}
		},
		// archivedAt absent (its nullability is undocumented).
		`{"id":"j3","status":"active","createdAt":"2025-01-02T03:04:05Z"}`: func(t *testing.T, j *apiclient.Job) {
			if j.ArchivedAt != nil || j.PRLink != nil {
				t.Errorf("absent fields decoded as %v %v", j.PRLink, j.ArchivedAt)
			}
		},
	}
	for body, check := range bodies {
		_, srv := serve(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, body) })
		c := newClient(t, srv.URL, nil)
		j, err := c.GetJob(testCtx(t), testProject, "j")
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		check(t, j)
		j, err = c.CreateJob(testCtx(t), testProject, "p")
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		check(t, j)
	}
}

func TestCreateJobWithoutIDIsAnError(t *testing.T) {
	t.Parallel()
	_, srv := serve(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"status":"active"}`) })
	c := newClient(t, srv.URL, nil)
	if j, err := c.CreateJob(testCtx(t), testProject, "p"); err == nil {
		t.Errorf("got %+v, want an error for a job without id", j)
	}
}

func TestJobIDsPathEscaped(t *testing.T) {
	t.Parallel()
	fake, rec, srv := startFake(t, fakeapi.Options{Projects: []string{testProject, "a/b", "team docs"}})
	c := newClient(t, srv.URL, nil)
	ctx := testCtx(t)

	for _, p := range []string{"a/b", "team docs"} {
		job, err := c.CreateJob(ctx, p, "x")
		if err != nil {
			t.Fatalf("create in %q: %v (sent %s)", p, err, rec.requests()[len(rec.requests())-1].uri)
		}
		if _, err := c.GetJob(ctx, p, job.ID); err != nil {
			t.Errorf("get in %q: %v", p, err)
		}
	}
	job, err := c.CreateJob(ctx, testProject, "x")
	if err != nil {
		t.Fatal(err)
	}
	before := fake.Requests(fakeapi.GetJob)
	// Escaped, these reach the get-job handler as one (unknown) id. Sent
	// raw, they would hit no route or another one.
	for _, id := range []string{job.ID + "/x", "a b", "?x=1", "#frag", job.ID + "%2F"} {
		_, err := c.GetJob(ctx, testProject, id)
		var apiErr *apiclient.APIError
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || apiErr.Message != "job not found" {
			t.Errorf("job id %q: err = %v, want the fake's own 404 (sent %s)", id, err, rec.requests()[len(rec.requests())-1].uri)
		}
	}
	if got := fake.Requests(fakeapi.GetJob) - before; got != 5 {
		t.Errorf("get-job handler saw %d of 5 requests", got)
	}
	n := len(rec.requests())
	for _, id := range []string{"", ".", ".."} {
		if _, err := c.GetJob(ctx, testProject, id); err == nil {
			t.Errorf("job id %q accepted", id)
		}
		if _, err := c.CreateJob(ctx, id, "x"); err == nil {
			t.Errorf("project id %q accepted", id)
		}
	}
	if got := len(rec.requests()) - n; got != 0 {
		t.Errorf("%d requests sent for invalid ids", got)
	}
}

func TestSendMessage(t *testing.T) {
	t.Parallel()
	clk := newClock()
	fake, rec, srv := startFake(t, fakeapi.Options{Now: clk.Now})
	c := newClient(t, srv.URL, nil) // MaxRetries 2: a message must not use them
	ctx := testCtx(t)
	job, err := c.CreateJob(ctx, testProject, "#fake:pr:1m")
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Minute)
	got, status, err := c.SendMessage(ctx, testProject, job.ID, "also fix the typo #fake:fail:1m")
	if err != nil || status != http.StatusOK || got == nil || got.ID != job.ID || got.Status != apiclient.StatusActive {
		t.Fatalf("SendMessage: %+v %d %v, want the job active again", got, status, err)
	}
	last := rec.requests()[len(rec.requests())-1]
	var sent map[string]any
	if err := json.Unmarshal(last.body, &sent); err != nil || len(sent) != 1 || sent["prompt"] != "also fix the typo #fake:fail:1m" {
		t.Errorf("request body %s, want {\"prompt\": ...} only", last.body)
	}
	clk.Advance(2 * time.Minute)
	if j, err := c.GetJob(ctx, testProject, job.ID); err != nil || j.Status != apiclient.StatusFailed {
		t.Errorf("after the follow-up's turn: %+v %v, want failed (its own directive)", j, err)
	}

	if _, _, err := c.SendMessage(ctx, testProject, "job_999999", "x"); apiclient.StatusCode(err) != http.StatusNotFound {
		t.Errorf("unknown job: %v, want 404", err)
	}
	// Never retried once it may have reached the server.
	fake.SetFault(fakeapi.SendMessage, fakeapi.Fault{Status: http.StatusServiceUnavailable})
	before := fake.Requests(fakeapi.SendMessage)
	if _, _, err := c.SendMessage(ctx, testProject, job.ID, "x"); apiclient.StatusCode(err) != http.StatusServiceUnavailable {
		t.Errorf("503: %v", err)
	}
	if d := fake.Requests(fakeapi.SendMessage) - before; d != 1 {
		t.Errorf("a failed message was sent %d times, want 1", d)
	}
	fake.ClearFaults()
	if _, _, err := c.SendMessage(ctx, testProject, "../x", "x"); err == nil {
		t.Error("a job id that is not one path segment was accepted")
	}
}

// TestSendMessageEmptyAnswer: the API does not document the answer's
// body; an empty 2xx is a success without a job.
func TestSendMessageEmptyAnswer(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "POST" || r.URL.Path != "/v2/agent/docs/job/job_1/message" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(srv.Close)
	c := newClient(t, srv.URL, nil)
	job, status, err := c.SendMessage(testCtx(t), testProject, "job_1", "x")
	if err != nil || status != http.StatusAccepted || job != nil {
		t.Errorf("%+v %d %v, want no job, 202, no error", job, status, err)
	}
}
