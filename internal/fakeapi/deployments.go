package fakeapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Deployment endpoints of the fake, as the exporter's metrics name them.
const (
	TriggerUpdate    = "trigger_update"
	TriggerPreview   = "trigger_preview"
	DeploymentStatus = "deployment_status"
)

// The documented trigger limits, per organization.
const (
	// UpdateLimit updates (shared with the automation trigger) per
	// UpdateWindow.
	UpdateLimit  = 10
	UpdateWindow = 10 * time.Second
	// PreviewLimit previews per PreviewWindow.
	PreviewLimit  = 5
	PreviewWindow = time.Minute
)

// DefaultDeployDuration is the build time (endedAt - createdAt) a
// simulated deployment reports when read late enough, unless
// Options.DeployDuration says otherwise.
const DefaultDeployDuration = 42 * time.Second

// A deployment's course is set by the branch it deploys (a preview's
// branch, or for an update the project's deployment branch, "main" unless
// SetDeploymentBranch changed it), and advances one step per read of its
// status, so that a follower sees it move over a few polls whatever its
// clock:
//
//   - "fail-*": queued, in_progress, then failure;
//   - "queued-*": queued for ever (a deployment stuck in the queue);
//   - "building-*": queued, then the undocumented status "building" for two
//     reads, then success (an unknown status is not final);
//   - any other branch: queued, in_progress, then success.
//
// HoldDeployments keeps every deployment that reached in_progress there
// until it is released. endedAt is stamped at the first read that finds it
// final: createdAt + the deploy duration, or that read's time if sooner
// (never in the future), so a follower that reads it late still gets the
// build time the API reports, not when it saw the end.
var deployBranch = regexp.MustCompile(`^(fail|queued|building)-`)

// deployment is one simulated deployment.
type deployment struct {
	id, project, kind, branch, previewURL string
	createdAt                             time.Time
	// endedAt is stamped by the first read that finds it final.
	endedAt time.Time
	// reads counts the status reads, which move it along its course.
	reads int
	// fail: it ends in failure whatever its branch (FailEveryUpdate).
	fail bool
}

// deploymentBody is the update-status object as the reference writes it.
// Fields the schema does not make nullable are left out while they have
// no value (endedAt before the end, screenshot): the schema allows absent
// but not null there; author alone is nullable.
type deploymentBody struct {
	ID         string     `json:"_id"`
	ProjectID  string     `json:"projectId"`
	CreatedAt  string     `json:"createdAt"`
	EndedAt    *string    `json:"endedAt,omitempty"`
	Status     string     `json:"status"`
	Summary    string     `json:"summary"`
	Logs       []string   `json:"logs"`
	Subdomain  string     `json:"subdomain"`
	Screenshot *string    `json:"screenshot,omitempty"`
	Author     *struct{}  `json:"author"`
	Commit     commitBody `json:"commit"`
	Source     string     `json:"source"`
}

type commitBody struct {
	SHA          string `json:"sha"`
	Ref          string `json:"ref"`
	Message      string `json:"message"`
	FilesChanged struct {
		// Empty lists, never null: the schema types them as arrays.
		Added    []string `json:"added"`
		Modified []string `json:"modified"`
		Removed  []string `json:"removed"`
	} `json:"filesChanged"`
}

// statusAt is the status of d after its reads, held or not.
func (d *deployment) statusAt(held bool) string {
	outcome := deployBranch.FindStringSubmatch(d.branch)
	kind := ""
	if outcome != nil {
		kind = outcome[1]
	}
	switch {
	case d.reads <= 1 || kind == "queued":
		return "queued"
	case held:
		return "in_progress"
	case kind == "building" && d.reads <= 3:
		return "building"
	case kind == "building":
		return "success"
	case d.reads == 2:
		return "in_progress"
	case kind == "fail" || d.fail:
		return "failure"
	}
	return "success"
}

func (s *Server) deploymentBody(d *deployment, status string) deploymentBody {
	b := deploymentBody{
		ID:        d.id,
		ProjectID: d.project,
		CreatedAt: d.createdAt.UTC().Format(time.RFC3339Nano),
		Status:    status,
		// Free text the exporter must never export or log.
		Summary:   "Deployed " + d.branch + " (summary text is free text)",
		Logs:      []string{"Cloning " + d.branch, "Building pages"},
		Subdomain: d.project,
		Source:    "api",
	}
	if status == "success" || status == "failure" {
		if d.endedAt.IsZero() {
			d.endedAt = d.createdAt.Add(s.opts.DeployDuration)
			if now := s.opts.Now().Truncate(time.Millisecond); now.Before(d.endedAt) {
				d.endedAt = now
			}
		}
		e := d.endedAt.UTC().Format(time.RFC3339Nano)
		b.EndedAt = &e
	}
	b.Commit.SHA = fmt.Sprintf("%016x%016x%08x", hash(d.id), hash(d.id, "2"), uint32(hash(d.id, "3")))
	b.Commit.Ref = d.branch
	b.Commit.Message = "docs: a commit message is free text"
	b.Commit.FilesChanged.Added = []string{}
	b.Commit.FilesChanged.Modified = []string{"index.mdx"}
	b.Commit.FilesChanged.Removed = []string{}
	return b
}

// handleTriggerUpdate is POST /v1/project/update/{project}: 202
// {"statusId"}, within 10 per 10 s per organization.
func (s *Server) handleTriggerUpdate(w http.ResponseWriter, r *http.Request, project string, f Fault) {
	s.startDeployment(w, r, project, f, "update", "")
}

// handleTriggerPreview is POST /v1/project/preview/{project} with
// {"branch"}: 202 {"statusId", "previewUrl"}, within 5 a minute per
// organization; 400 without a branch.
func (s *Server) handleTriggerPreview(w http.ResponseWriter, r *http.Request, project string, f Fault) {
	data, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var req struct {
		Branch *string `json:"branch"`
	}
	if err != nil || json.Unmarshal(data, &req) != nil || req.Branch == nil || *req.Branch == "" {
		writeError(w, http.StatusBadRequest, "branch is required and must be a non-empty string")
		return
	}
	s.startDeployment(w, r, project, f, "preview", *req.Branch)
}

// startDeployment records a deployment of project (kind update or
// preview, of branch; an update's is the project's deployment branch) and
// answers 202, or 429 when the organization's limit is spent.
func (s *Server) startDeployment(w http.ResponseWriter, r *http.Request, project string, f Fault, kind, branch string) {
	now := s.opts.Now()
	s.mu.Lock()
	if !s.spendTrigger(w, r, kind, now) {
		s.mu.Unlock()
		return
	}
	if kind == "update" {
		branch = s.deployBranches[project]
		if branch == "" {
			branch = "main"
		}
	}
	// "dep_" and the run's part of JobIDPrefix: unique across runs as job ids are.
	d := &deployment{id: fmt.Sprintf("dep_%s%06d", strings.TrimPrefix(s.opts.JobIDPrefix, "job_"), s.nextID.Add(1)) + f.IDSuffix, project: project, kind: kind,
		branch: branch, createdAt: now.Truncate(time.Millisecond)}
	if kind == "update" && s.opts.FailEveryUpdate > 0 {
		s.updateCount[project]++
		d.fail = s.updateCount[project]%s.opts.FailEveryUpdate == 0
	}
	body := map[string]string{"statusId": d.id}
	if kind == "preview" {
		d.previewURL = PreviewURL(project, branch)
		body["previewUrl"] = d.previewURL
	}
	s.deployments[d.id] = d
	s.mu.Unlock()
	if f.DropAnswer {
		dropAnswer(w)
		return
	}
	writeJSON(w, http.StatusAccepted, body)
}

// spendTrigger spends one of the organization's trigger slots: kind
// "preview" from the previews' limit, any other (updates and automation
// runs, which share one) from the updates'. When none is free it answers
// 429 with Retry-After and returns false. s.mu is held.
func (s *Server) spendTrigger(w http.ResponseWriter, r *http.Request, kind string, now time.Time) bool {
	token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	org, _ := s.organization(token)
	limit, window, log, what := orDefault(s.opts.UpdateLimit, UpdateLimit), UpdateWindow, s.updates, "update and automation"
	if kind == "preview" {
		limit, window, log, what = orDefault(s.opts.PreviewLimit, PreviewLimit), PreviewWindow, s.previews, "preview"
	}
	return takeSlot(w, log, s.quotaKey(org, token), limit, window, now, fmt.Sprintf("%d %s triggers per %s per organization", limit, what, window))
}

// PreviewURL is the preview URL the fake answers for a branch.
func PreviewURL(project, branch string) string {
	slug := strings.Trim(nonSlug.ReplaceAllString(strings.ToLower(branch), "-"), "-")
	return "https://" + project + "-" + slug + ".mintlify.app"
}

var nonSlug = regexp.MustCompile(`[^a-z0-9]+`)

// handleDeploymentStatus is GET /v1/project/update-status/{statusId}: the
// deployment, one step further along its course.
func (s *Server) handleDeploymentStatus(w http.ResponseWriter, r *http.Request) {
	f, org, _, ok := s.precheck(DeploymentStatus, w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	d := s.deployments[r.PathValue("statusId")]
	if d == nil || (org != nil && !slices.Contains(org.Projects, d.project)) {
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, "deployment not found")
		return
	}
	d.reads++
	body := s.deploymentBody(d, d.statusAt(s.holdDeploys))
	s.mu.Unlock()
	if f.UnknownEnum {
		body.Status = UnknownEnumValue
	}
	answerState(w, f, body, `{"status": "succ`)
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// takeSlot spends one use of a limit of limit per window kept in log
// under key (negative limit: none). When none is free it answers 429 with
// Retry-After and "rate limit: " and what the limit is, and returns
// false. s.mu is held.
func takeSlot(w http.ResponseWriter, log map[string][]time.Time, key string, limit int, window time.Duration, now time.Time, what string) bool {
	recent := log[key][:0]
	for _, t := range log[key] {
		if now.Sub(t) < window {
			recent = append(recent, t)
		}
	}
	log[key] = recent
	if limit > 0 && len(recent) >= limit {
		w.Header().Set("Retry-After", fmt.Sprint(int(recent[0].Add(window).Sub(now).Seconds())+1))
		writeError(w, http.StatusTooManyRequests, "rate limit: "+what)
		return false
	}
	log[key] = append(recent, now)
	return true
}

// SetDeploymentBranch sets the branch an update of project deploys (its
// course: see deployBranch); "" is "main".
func (s *Server) SetDeploymentBranch(project, branch string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deployBranches[project] = branch
}

// HoldDeployments keeps every deployment that has reached in_progress
// there (true) until released (false): a deployment under way for as long
// as a test needs.
func (s *Server) HoldDeployments(hold bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holdDeploys = hold
}

// Deployments counts the deployments triggered, by project and kind
// ("update", "preview"): a test finds one triggered twice, or one that
// should never have left the exporter.
func (s *Server) Deployments(project, kind string) int { return len(s.DeploymentIDs(project, kind)) }

// DeploymentIDs are the status ids of project's deployments of kind,
// sorted: what an operator finds in the platform's dashboard.
func (s *Server) DeploymentIDs(project, kind string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id, d := range s.deployments {
		if d.project == project && d.kind == kind {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids) // numbered in order: the last is the newest
	return ids
}
