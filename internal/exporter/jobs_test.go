package exporter

import (
	"context"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/config"
	"github.com/mintlify-exporter/mintlify_exporter/internal/status"
)

// followingJobs records what the jobs part asks of the tracker and its
// gateway.
type followingJobs struct {
	http.Handler
	followed, accepted [][]string
}

func (f *followingJobs) Status() *status.Jobs      { return nil }
func (f *followingJobs) Follow(ids []string) error { f.followed = append(f.followed, ids); return nil }
func (f *followingJobs) SetProjects(ids []string)  { f.accepted = append(f.accepted, ids) }
func (f *followingJobs) Run(context.Context)       {}

// TestReloadAppliesDeployments: with the deployment routes alone, a
// reload's projects with deployments are read from the state before the
// reload is committed, then take deployments at once with their
// organization's limits; no project accepts agent jobs, and the status
// page links each project's deployments.
func TestReloadAppliesDeployments(t *testing.T) {
	parse := func(yaml string) *config.Config {
		t.Helper()
		cfg, err := config.Parse("c.yml", []byte(yaml), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	const orgs = "organizations: [{name: a, api_key_env: A}, {name: b, api_key_env: B}]\n"
	first := parse(orgs + "projects: [{id: p1, organization: a, deployments: true, agent_jobs: true}, {id: p2, organization: b}]\n")
	next := parse(orgs + "projects: [{id: p1, organization: a}, {id: p2, organization: b, deployments: true}, {id: p3, organization: b, deployments: true}]\n")
	fj := &followingJobs{}
	j := &jobsPart{ops: fj, on: map[string]bool{"deployment": true}, projects: &atomic.Pointer[[]string]{}}
	j.store(first)
	if got := j.cfg.Load().Taking("deployment"); !slices.Equal(got, []string{"p1"}) {
		t.Errorf("at start: deployments %v", got)
	}
	if err := j.prepare(next); err != nil {
		t.Fatal(err)
	}
	if got := fj.followed[len(fj.followed)-1]; !slices.Contains(got, "p2") || !slices.Contains(got, "p3") {
		t.Errorf("the reload followed %v, want p2 and p3 read before it is committed", got)
	}
	if got := j.cfg.Load().Taking("deployment"); !slices.Equal(got, []string{"p1"}) || len(fj.accepted) != 0 {
		t.Errorf("prepare changed the projects taking deployments: %v, %v", got, fj.accepted)
	}
	j.commit(next)
	if got := j.cfg.Load().Taking("deployment"); !slices.Equal(got, []string{"p2", "p3"}) || len(fj.accepted) != 1 {
		t.Errorf("after the reload: deployments %v, want p2 p3", got)
	}
	if got := j.cfg.Load().OrganizationOf("p3"); got != "b" {
		t.Errorf("p3's organization %q", got)
	}
	var r status.Report
	j.report(&r, "/metrics")
	var hrefs []string
	for _, l := range r.Links {
		hrefs = append(hrefs, l.Href)
	}
	if want := []string{"/metrics", "/-/healthy", "/api/v1/project/p2/deployments", "/api/v1/project/p3/deployments"}; !slices.Equal(hrefs, want) {
		t.Errorf("links %v, want %v", hrefs, want)
	}
}

// TestGatewayNameNamesEveryKindEnabled: the gateway's start line names the
// kinds of operation it serves, each one enabled and no other (it once
// named three kinds "as enabled" and left automations out).
func TestGatewayNameNamesEveryKindEnabled(t *testing.T) {
	for _, c := range []struct {
		on   []string
		want string
	}{
		{[]string{"job"}, "agent job gateway"},
		{[]string{"automation"}, "automation run gateway"},
		{[]string{"job", "deployment"}, "agent job and deployment gateway"},
		{[]string{"deployment", "static_export", "automation"}, "deployment, static export and automation run gateway"},
		{[]string{"job", "deployment", "static_export", "automation"}, "agent job, deployment, static export and automation run gateway"},
	} {
		on := map[string]bool{}
		for _, k := range c.on {
			on[k] = true
		}
		if got := gatewayName(on); got != c.want {
			t.Errorf("gatewayName(%v) = %q, want %q", c.on, got, c.want)
		}
	}
}
