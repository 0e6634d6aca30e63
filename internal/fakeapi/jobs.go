package fakeapi

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"
)

type source struct {
	Repository string `json:"repository"`
	Ref        string `json:"ref"`
}

// jobBody is the agent job object as the spec writes it.
type jobBody struct {
	ID         string     `json:"id"`
	Status     string     `json:"status"`
	Source     source     `json:"source"`
	Model      string     `json:"model"`
	PRLink     *string    `json:"prLink"`
	CreatedAt  time.Time  `json:"createdAt"`
	ArchivedAt *time.Time `json:"archivedAt"`
}

// Outcomes a job can be scripted to reach.
const (
	OutcomePR      = "pr"      // completed with a pull request
	OutcomeNoPR    = "nopr"    // completed, no files changed
	OutcomeFail    = "fail"    // failed
	OutcomeArchive = "archive" // completed with a PR, archived later
	OutcomeUnknown = "unknown" // reports a status the spec does not list
)

type job struct {
	project string
	prompt  string // of the create
	body    jobBody
	// outcome and duration are the current turn's fate; turnStart is when
	// the turn started (createdAt, then the time of each follow-up).
	outcome   string
	duration  time.Duration
	turnStart time.Time
	// messages counts the follow-ups received.
	messages int
	gone     bool   // answers 404
	override string // status forced by SetJobStatus
	// overrideAt is when the override was set.
	overrideAt time.Time
	// automation: the job is an automation's run (HoldAutomationRuns).
	automation bool
}

// directive lets a test or a sandbox user script a job through its prompt:
// "#fake:fail", "#fake:nopr", "#fake:pr", "#fake:archive", "#fake:unknown",
// optionally with a duration: "#fake:fail:3s".
var directive = regexp.MustCompile(`#fake:(pr|nopr|fail|archive|unknown)(?::([0-9.]+[a-z]+))?`)

// outcomeFor picks a turn's fate: the prompt's directive, else a stable
// pseudo-random draw from the id (70% PR, 12% no PR, 13% failed, 5%
// archived); a follow-up's id is the job's id and its turn number.
func (s *Server) outcomeFor(id, prompt string) (string, time.Duration) {
	h := hash(id)
	d := s.opts.JobDuration/2 + time.Duration(h%1000)*s.opts.JobDuration/1000
	if m := directive.FindStringSubmatch(prompt); m != nil {
		if m[2] != "" {
			if pd, err := time.ParseDuration(m[2]); err == nil {
				d = pd
			}
		}
		return m[1], d
	}
	switch r := (h >> 10) % 100; {
	case r < 70:
		return OutcomePR, d
	case r < 82:
		return OutcomeNoPR, d
	case r < 95:
		return OutcomeFail, d
	default:
		return OutcomeArchive, d
	}
}

// view computes the job's state at now from its creation time and fate.
func (s *Server) view(j *job, now time.Time) jobBody {
	b := j.body
	end := j.turnStart.Add(j.duration)
	switch {
	case j.override != "":
		b.Status = j.override
	case j.automation && s.holdRuns && end.After(s.holdSince):
		b.Status = "active"
	case now.Before(end):
		b.Status = "active"
	case j.outcome == OutcomeFail:
		b.Status = "failed"
	case j.outcome == OutcomeUnknown:
		b.Status = "waiting_for_review"
	default:
		b.Status = "completed"
	}
	if b.Status == "completed" && j.outcome != OutcomeNoPR {
		b.PRLink = prLink(b.ID)
	}
	if j.override == "archived" {
		at := j.overrideAt.UTC()
		b.ArchivedAt = &at
		// Archiving does not undo a pull request the job had opened by then.
		if (j.outcome == OutcomePR || j.outcome == OutcomeArchive) && !j.overrideAt.Before(end) {
			b.PRLink = prLink(b.ID)
		}
	}
	if j.outcome == OutcomeArchive && j.override == "" && !now.Before(end.Add(s.opts.ArchiveAfter)) {
		b.Status = "archived"
		at := end.Add(s.opts.ArchiveAfter).UTC()
		b.ArchivedAt = &at
	}
	return b
}

func prLink(id string) *string {
	link := fmt.Sprintf("https://github.com/acme/docs/pull/%s", strings.TrimPrefix(id, "job_"))
	return &link
}

func (s *Server) handleCreateJob(w http.ResponseWriter, r *http.Request, project string, f Fault) {
	prompt, ok := readPrompt(w, r)
	if !ok {
		return
	}
	now := s.opts.Now()
	s.mu.Lock()
	if s.rateLimited(w, s.created, project, s.opts.CreateLimit, CreateJobLimit, "job creations", now) {
		s.mu.Unlock()
		return
	}
	j := s.newJob(project, prompt, now, f.IDSuffix)
	body := s.view(j, now)
	s.mu.Unlock()
	// 201, as the reference documents job creation.
	answerJob(w, f, http.StatusCreated, body)
}

// newJob starts an agent job of project, scripted by prompt (a create, or
// an automation's run). s.mu is held.
func (s *Server) newJob(project, prompt string, now time.Time, idSuffix string) *job {
	id := fmt.Sprintf("%s%06d", s.opts.JobIDPrefix, s.nextID.Add(1)) + idSuffix
	outcome, d := s.outcomeFor(id, prompt)
	j := &job{project: project, prompt: prompt, outcome: outcome, duration: d, turnStart: now, body: jobBody{
		ID:        id,
		Source:    source{Repository: "https://github.com/acme/docs", Ref: "mintlify/" + id},
		Model:     "claude-sonnet-4-5",
		CreatedAt: now.UTC().Truncate(time.Millisecond),
	}}
	s.jobs[project+"/"+id] = j
	return j
}

// answerJob answers status with the job, or drops the answer when f says
// so.
func answerJob(w http.ResponseWriter, f Fault, status int, body jobBody) {
	if f.DropAnswer {
		dropAnswer(w)
		return
	}
	writeJSON(w, status, body)
}

// dropAnswer closes the connection without an answer.
func dropAnswer(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler) // HTTP/2: reset the stream
}

// readPrompt reads a {"prompt": "..."} body, answering 415 or 400 itself
// when it is not one.
func readPrompt(w http.ResponseWriter, r *http.Request) (string, bool) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
		return "", false
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, "reading body")
		return "", false
	}
	var req struct {
		Prompt *string `json:"prompt"`
	}
	if err := json.Unmarshal(data, &req); err != nil || req.Prompt == nil || *req.Prompt == "" {
		writeError(w, http.StatusBadRequest, "prompt is required and must be a non-empty string")
		return "", false
	}
	return *req.Prompt, true
}

// rateLimited spends a slot of a per-project hourly limit kept in log
// (limit 0 is def, negative is none); when none is free it answers 429
// with Retry-After and returns true. s.mu is held.
func (s *Server) rateLimited(w http.ResponseWriter, log map[string][]time.Time, project string, limit, def int, what string, now time.Time) bool {
	limit = orDefault(limit, def)
	return !takeSlot(w, log, project, limit, time.Hour, now, fmt.Sprintf("%d %s per hour per project", limit, what))
}

// handleMessage is POST .../job/{id}/message: a follow-up starts a new turn
// at once (the job is active again, then finishes after a while like a new
// job, scripted by the message's own #fake: directive), answered 200 with
// the job as it is then.
func (s *Server) handleMessage(w http.ResponseWriter, r *http.Request, project string, f Fault) {
	prompt, ok := readPrompt(w, r)
	if !ok {
		return
	}
	now := s.opts.Now()
	s.mu.Lock()
	j := s.jobs[project+"/"+r.PathValue("id")]
	if j == nil || j.gone {
		s.mu.Unlock()
		writeError(w, http.StatusNotFound, "job not found")
		return
	}
	if s.rateLimited(w, s.messaged, project, s.opts.MessageLimit, MessageLimit, "messages", now) {
		s.mu.Unlock()
		return
	}
	j.messages++
	j.outcome, j.duration = s.outcomeFor(fmt.Sprintf("%s/%d", j.body.ID, j.messages), prompt)
	j.turnStart = now
	j.override, j.overrideAt = "", time.Time{}
	j.body.ArchivedAt = nil
	body := s.view(j, now)
	s.mu.Unlock()
	answerJob(w, f, http.StatusOK, body)
}

// Messages is how many follow-ups a job received.
func (s *Server) Messages(project, id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j := s.jobs[project+"/"+id]; j != nil {
		return j.messages
	}
	return 0
}

// JobStatus is the status the API shows for a job now ("" for none).
func (s *Server) JobStatus(project, id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if j := s.jobs[project+"/"+id]; j != nil {
		return s.view(j, s.opts.Now()).Status
	}
	return ""
}

// JobIDs are the ids of the project's jobs, in creation order.
func (s *Server) JobIDs(project string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for _, j := range s.jobs {
		if j.project == project {
			ids = append(ids, j.body.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

func (s *Server) handleGetJob(w http.ResponseWriter, r *http.Request, project string, _ Fault) {
	s.mu.Lock()
	j := s.jobs[project+"/"+r.PathValue("id")]
	var body jobBody
	found := j != nil && !j.gone
	if found {
		body = s.view(j, s.opts.Now())
	}
	s.mu.Unlock()
	if !found {
		writeError(w, http.StatusNotFound, "job not found")
		return
	}
	writeJSON(w, http.StatusOK, body)
}

// SetJobStatus forces a job's status from now on (e.g. archive a completed
// job); an empty status returns it to its scripted course.
func (s *Server) SetJobStatus(project, id, status string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.jobs[project+"/"+id]
	if j == nil {
		return fmt.Errorf("fake API: no job %s/%s", project, id)
	}
	j.override, j.overrideAt = status, s.opts.Now()
	return nil
}

// ForgetJob makes a job answer 404 from now on.
func (s *Server) ForgetJob(project, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.jobs[project+"/"+id]
	if j == nil {
		return fmt.Errorf("fake API: no job %s/%s", project, id)
	}
	j.gone = true
	return nil
}

// Prompts counts the project's jobs by the prompt they were created with:
// a test that sends each prompt once finds a job created twice.
func (s *Server) Prompts(project string) map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for _, j := range s.jobs {
		if j.project == project {
			out[j.prompt]++
		}
	}
	return out
}

// JobCount is how many jobs were created.
func (s *Server) JobCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.jobs)
}
