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
	project  string
	body     jobBody
	outcome  string
	duration time.Duration
	gone     bool   // answers 404
	override string // status forced by SetJobStatus
	// overrideAt is when the override was set.
	overrideAt time.Time
}

// directive lets a test or a sandbox user script a job through its prompt:
// "#fake:fail", "#fake:nopr", "#fake:pr", "#fake:archive", "#fake:unknown",
// optionally with a duration: "#fake:fail:3s".
var directive = regexp.MustCompile(`#fake:(pr|nopr|fail|archive|unknown)(?::([0-9.]+[a-z]+))?`)

// outcomeFor picks a job's fate: the prompt's directive, else a stable
// pseudo-random draw from the id (70% PR, 12% no PR, 13% failed, 5% archived).
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
	end := b.CreatedAt.Add(j.duration)
	switch {
	case j.override != "":
		b.Status = j.override
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
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, "Content-Type must be application/json")
		return
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		writeError(w, http.StatusBadRequest, "reading body")
		return
	}
	var req struct {
		Prompt *string `json:"prompt"`
	}
	if err := json.Unmarshal(data, &req); err != nil || req.Prompt == nil || *req.Prompt == "" {
		writeError(w, http.StatusBadRequest, "prompt is required and must be a non-empty string")
		return
	}
	now := s.opts.Now()
	s.mu.Lock()
	recent := s.created[project][:0]
	for _, t := range s.created[project] {
		if now.Sub(t) < time.Hour {
			recent = append(recent, t)
		}
	}
	s.created[project] = recent
	limit := s.opts.CreateLimit
	if limit == 0 {
		limit = CreateJobLimit
	}
	if limit > 0 && len(recent) >= limit {
		retry := recent[0].Add(time.Hour).Sub(now)
		s.mu.Unlock()
		w.Header().Set("Retry-After", fmt.Sprint(int(retry.Seconds())+1))
		writeError(w, http.StatusTooManyRequests, fmt.Sprintf("rate limit: %d job creations per hour per project", limit))
		return
	}
	s.created[project] = append(recent, now)
	id := fmt.Sprintf("job_%s%06d", s.opts.JobIDPrefix, s.nextID.Add(1))
	outcome, d := s.outcomeFor(id, *req.Prompt)
	j := &job{project: project, outcome: outcome, duration: d, body: jobBody{
		ID:        id,
		Source:    source{Repository: "https://github.com/acme/docs", Ref: "mintlify/" + id},
		Model:     "claude-sonnet-4-5",
		CreatedAt: now.UTC().Truncate(time.Millisecond),
	}}
	s.jobs[project+"/"+id] = j
	body := s.view(j, now)
	s.mu.Unlock()
	if f.DropAnswer {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler) // HTTP/2: reset the stream
	}
	writeJSON(w, http.StatusOK, body)
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

// JobCount is how many jobs were created.
func (s *Server) JobCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.jobs)
}
