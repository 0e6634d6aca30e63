package fakeapi

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
)

// TriggerAutomation is the automation trigger's endpoint name, as the
// exporter's metrics name it.
const TriggerAutomation = "trigger_automation"

// Automation is an automation of the fake. The zero value (but its ID) is
// an active automation with a custom schedule, of every project, whose
// runs the get-job endpoint does not know.
type Automation struct {
	ID string
	// Project, when set, is the one project that has it: a trigger for
	// any other answers 404, as for another project's automation.
	Project string
	// Inactive automations, and those not on a custom schedule (run on a
	// push, say), answer 400: only scheduled ones can be triggered.
	Inactive, NotCustomSchedule bool
	// AgentJob: each run is an agent job of the project, which get-job
	// answers and which ends like any other job of the fake (its course
	// drawn from its id). Otherwise the run's jobId is a background job
	// get-job answers 404 for: the run cannot be followed.
	AgentJob bool
	// Prompt is the prompt of its runs' agent jobs; a #fake: directive in
	// it scripts them (empty: "automation ID run N", drawn from the id).
	Prompt string
}

// The sandbox's automations (DefaultAutomations): every project has both.
const (
	// AutomationAgentJob's runs are agent jobs get-job follows to their end.
	AutomationAgentJob = "wf_docs_refresh"
	// AutomationUnfollowed's runs answer a jobId get-job does not know.
	AutomationUnfollowed = "wf_changelog"
	// AutomationInactive and AutomationOnPush answer 400.
	AutomationInactive = "wf_paused"
	AutomationOnPush   = "wf_on_push"
)

// DefaultAutomations are the automations when Options.Automations is nil.
var DefaultAutomations = []Automation{
	// Its runs open a pull request after about 3 s: a run seen going from
	// active to completed, in the sandbox and the end-to-end tests.
	{ID: AutomationAgentJob, AgentJob: true, Prompt: "Refresh the docs from the latest code #fake:pr:3s"},
	{ID: AutomationUnfollowed},
	{ID: AutomationInactive, Inactive: true},
	{ID: AutomationOnPush, NotCustomSchedule: true},
}

// automationID is the shape of an id the fake takes; another answers 400
// as the API does for a malformed id.
var automationID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// routeAutomations serves the trigger.
func (s *Server) routeAutomations() {
	s.requests[TriggerAutomation] = &atomic.Int64{}
	s.mux.HandleFunc("POST /v1/workflow/{project}/{schema}/trigger", s.withChecks(TriggerAutomation, s.handleTriggerAutomation))
}

// automation finds id among project's automations.
func (s *Server) automation(project, id string) (Automation, bool) {
	list := s.opts.Automations
	if list == nil {
		list = DefaultAutomations
	}
	for _, a := range list {
		if a.ID == id && (a.Project == "" || a.Project == project) {
			return a, true
		}
	}
	return Automation{}, false
}

// handleTriggerAutomation is POST /v1/workflow/{project}/{schema}/trigger:
// 202 {schemaId, instanceId, jobId}, within the organization's 10 per 10 s
// that deployment updates share; 400 for a malformed id, an inactive
// automation or one without a custom schedule; 404 for one the project
// does not have.
func (s *Server) handleTriggerAutomation(w http.ResponseWriter, r *http.Request, project string, f Fault) {
	id := r.PathValue("schema")
	if !automationID.MatchString(id) {
		writeError(w, http.StatusBadRequest, "malformed automation id")
		return
	}
	a, ok := s.automation(project, id)
	switch {
	case !ok:
		writeError(w, http.StatusNotFound, "automation not found")
		return
	case a.Inactive:
		writeError(w, http.StatusBadRequest, "automation is not active")
		return
	case a.NotCustomSchedule:
		writeError(w, http.StatusBadRequest, "only automations with a custom schedule can be triggered")
		return
	}
	now := s.opts.Now()
	s.mu.Lock()
	if !s.spendTrigger(w, r, "automation", now) {
		s.mu.Unlock()
		return
	}
	run := strings.TrimPrefix(s.opts.JobIDPrefix, "job_") + fmt.Sprintf("%06d", s.nextID.Add(1))
	jobID := "bg_" + run
	if a.AgentJob {
		prompt := a.Prompt
		if prompt == "" {
			prompt = "automation " + a.ID + " run " + run
		}
		j := s.newJob(project, prompt, now, "")
		j.automation = true
		jobID = j.body.ID
	}
	s.runJobs[project] = append(s.runJobs[project], jobID)
	s.automationRuns++
	s.mu.Unlock()
	if f.DropAnswer {
		dropAnswer(w)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"schemaId": a.ID, "instanceId": "wfi_" + run + f.IDSuffix, "jobId": jobID + f.IDSuffix})
}

// AutomationJobIDs are the jobIds of project's automation runs, in the
// order they were triggered (agent jobs' and background jobs' alike).
func (s *Server) AutomationJobIDs(project string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.runJobs[project])
}

// HoldAutomationRuns keeps the agent jobs of automation runs active
// (true) until released (false): a run under way for as long as a test
// needs; once released each ends as its course says. A run that had ended
// when the hold began stays ended (seen active again, it would be a new
// turn of its job).
func (s *Server) HoldAutomationRuns(hold bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holdRuns, s.holdSince = hold, s.opts.Now()
}

// AutomationRuns is how many automation runs were triggered.
func (s *Server) AutomationRuns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.automationRuns
}
