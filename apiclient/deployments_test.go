package apiclient_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

// TestDeploymentsFollowTheirBranch triggers updates and previews against
// the fake and reads each status to its end: the paths and bodies sent,
// the answers decoded (statusId, previewUrl, 202), and the course the
// branch sets, with endedAt - createdAt the build time the API reports.
func TestDeploymentsFollowTheirBranch(t *testing.T) {
	t.Parallel()
	clk := newClock()
	fake, rec, srv := startFake(t, fakeapi.Options{Now: clk.Now, DeployDuration: 90 * time.Second})
	c := newClient(t, srv.URL, nil)
	ctx := testCtx(t)

	up, err := c.TriggerUpdate(ctx, testProject)
	if err != nil {
		t.Fatalf("TriggerUpdate: %v", err)
	}
	last := rec.requests()[len(rec.requests())-1]
	if last.method != "POST" || last.uri != "/v1/project/update/"+testProject || len(last.body) != 0 {
		t.Errorf("update sent %s %s with body %q, want POST /v1/project/update/%s without a body", last.method, last.uri, last.body, testProject)
	}
	if up.StatusID == "" || up.Code != http.StatusAccepted || up.PreviewURL != "" {
		t.Errorf("update answered %+v, want a status id and 202", up)
	}
	created := clk.Now()
	clk.Advance(2 * time.Minute) // read after the build ended: endedAt is when it ended, not when it is read
	for i, want := range []string{"queued", "in_progress", "success", "success"} {
		d, err := c.DeploymentStatus(ctx, testProject, up.StatusID)
		if err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
		if d.Status != want || d.ID != up.StatusID || d.ProjectID != testProject || d.Commit.Ref != "main" || len(d.Commit.SHA) != 40 {
			t.Errorf("read %d: %+v, want status %s of main", i, d, want)
		}
		if !d.CreatedAt.Equal(created) {
			t.Errorf("read %d: createdAt %v, want %v", i, d.CreatedAt, created)
		}
		if final := apiclient.IsDeploymentFinal(d.Status); final != !d.EndedAt.IsZero() {
			t.Errorf("read %d: status %s with endedAt %v", i, d.Status, d.EndedAt)
		} else if final && d.EndedAt.Sub(d.CreatedAt.Time) != 90*time.Second {
			t.Errorf("read %d: endedAt - createdAt = %v, want the reported 90s", i, d.EndedAt.Sub(d.CreatedAt.Time))
		}
	}
	if got := rec.requests()[len(rec.requests())-1].uri; got != "/v1/project/update-status/"+up.StatusID {
		t.Errorf("status read %s", got)
	}

	cases := []struct {
		branch string
		course []string
	}{
		{"fail-build", []string{"queued", "in_progress", "failure", "failure"}},
		{"queued-forever", []string{"queued", "queued", "queued", "queued"}},
		{"building-x", []string{"queued", "building", "building", "success"}},
		{"feature/new page", []string{"queued", "in_progress", "success"}},
	}
	for _, tc := range cases {
		p, err := c.TriggerPreview(ctx, testProject, tc.branch)
		if err != nil {
			t.Fatalf("preview %s: %v", tc.branch, err)
		}
		var body map[string]any
		if err := json.Unmarshal(rec.requests()[len(rec.requests())-1].body, &body); err != nil || len(body) != 1 || body["branch"] != tc.branch {
			t.Errorf("preview %s: body %s, want {\"branch\"} only", tc.branch, rec.requests()[len(rec.requests())-1].body)
		}
		if p.PreviewURL != fakeapi.PreviewURL(testProject, tc.branch) || p.Code != http.StatusAccepted {
			t.Errorf("preview %s: %+v", tc.branch, p)
		}
		for i, want := range tc.course {
			d, err := c.DeploymentStatus(ctx, testProject, p.StatusID)
			if err != nil || d.Status != want || d.Commit.Ref != tc.branch {
				t.Errorf("preview %s read %d: %+v, %v; want %s", tc.branch, i, d, err, want)
			}
		}
		clk.Advance(time.Minute) // the next preview within the limit
	}
	if n := fake.Deployments(testProject, "preview"); n != len(cases) {
		t.Errorf("fake counted %d previews, want %d", n, len(cases))
	}
}

// TestDeploymentErrors: the fake's limits answer 429 with Retry-After,
// which closes the endpoint's gate (and only its); a missing deployment is
// a 404 APIError; an unreadable status body is not quoted in the error
// (it holds the summary and the logs).
func TestDeploymentErrors(t *testing.T) {
	t.Parallel()
	clk := newClock()
	fake, _, srv := startFake(t, fakeapi.Options{Now: clk.Now})
	c := newClient(t, srv.URL, func(cfg *apiclient.Config) { cfg.Now = clk.Now })
	ctx := testCtx(t)
	for i := range fakeapi.UpdateLimit {
		if _, err := c.TriggerUpdate(ctx, testProject); err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
	}
	_, err := c.TriggerUpdate(ctx, testProject)
	var apiErr *apiclient.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests || apiErr.RetryAfter <= 0 || apiErr.RetryAfter > fakeapi.UpdateWindow+time.Second {
		t.Fatalf("11th update in 10s: %v, want 429 with Retry-After", err)
	}
	if fake.Deployments(testProject, "update") != fakeapi.UpdateLimit || fake.Requests(fakeapi.TriggerUpdate) != fakeapi.UpdateLimit+1 {
		t.Errorf("a refused update was retried or created: %d deployments, %d requests", fake.Deployments(testProject, "update"), fake.Requests(fakeapi.TriggerUpdate))
	}
	if c.ThrottledUntil(apiclient.EndpointTriggerUpdate).IsZero() || !c.ThrottledUntil(apiclient.EndpointTriggerPreview).IsZero() {
		t.Error("the update's 429 must close the update gate, and only it")
	}
	if _, err := c.TriggerPreview(ctx, testProject, ""); err == nil {
		t.Error("an empty branch was sent")
	}
	if _, err := c.DeploymentStatus(ctx, testProject, "nope"); apiclient.StatusCode(err) != http.StatusNotFound {
		t.Errorf("unknown status id: %v, want 404", err)
	}
	p, err := c.TriggerPreview(ctx, testProject, "secret-branch")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeploymentStatus(ctx, "another", p.StatusID); !errors.Is(err, apiclient.ErrOtherProject) {
		t.Errorf("status read for another project: %v, want ErrOtherProject", err)
	}
	fake.SetFault(fakeapi.DeploymentStatus, fakeapi.Fault{MalformedJSON: true, Remaining: 1})
	if _, err := c.DeploymentStatus(ctx, testProject, p.StatusID); err == nil || strings.Contains(err.Error(), "succ") {
		t.Errorf("unreadable status: %v, want an error that does not quote the body", err)
	}
}
