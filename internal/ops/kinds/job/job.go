// Package job is a kind of operation (engine.Kind): the agent jobs,
// created through the gateway (POST /api/v2/agent/{project}/job) or
// handed over by their id, followed on the engine's rounds to their end,
// and re-checked for a while after they completed, so that a later
// archive is counted. What they add to every kind's engine parts are their
// turns: a follow-up message (message.go) starts a new one, counted on its
// own.
package job

import (
	"context"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mintlify-exporter/mintlify_exporter/apiclient"
	"github.com/mintlify-exporter/mintlify_exporter/internal/bounded"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/engine"
	"github.com/mintlify-exporter/mintlify_exporter/internal/ops/store"
)

// Name is the name of the agent jobs (engine.Decl.Name).
const Name = "job"

// decl declares the agent jobs. Their records are in the bucket every
// state has (store.Jobs), their follow-ups' intents in their own.
var decl = &engine.Decl{Order: 10, Name: Name, What: "agent job", Request: "create", IDKey: "job", IDName: "job id",
	Records: store.Jobs, Intents: bucketIntents, Extra: []string{bucketMessageIntents}, IntentPrefix: "ci_", ReadEndpoint: apiclient.EndpointGetJob,
	Settle: "the job may have been created upstream; find it in the Mintlify dashboard, then track it with " +
		"POST /api/v2/agent/%[1]s/job/{jobId}/track?intent=%[2]s, or if no job was created dismiss the intent with " +
		"DELETE /api/v2/agent/%[1]s/unknown-creates/%[2]s",
	UnknownGauge: "mintlify_agent_create_unknown_outcomes", Doc: "agent-gateway.md",
	Routes: engine.Routes{Prefix: "/api/v2/agent/", Track: "/api/v2/agent/%[1]s/job/%[2]s/track", List: "/api/v2/agent/%[1]s/jobs",
		Unknown: "/api/v2/agent/%[1]s/unknown-creates", Flag: "web.enable-agent-api", Title: "Agent jobs",
		Help: "Serve the agent job gateway under /api/. Anyone who can reach it can open pull requests: protect it with --web.config.file."},
	Setting: engine.Setting{Key: "agent_jobs", Noun: "agent jobs"},
}

// The agent jobs' buckets beside store.Jobs (state schema versions 2 and
// 3).
const (
	bucketIntents        = "intents"
	bucketMessageIntents = "message_intents"
)

// statusUnread is the status of a job rebuilt from its id by state
// salvage, until its first poll reads it.
const statusUnread = "unread"

// counted is a bit set of the terminal statuses already counted for a job
// (finished_total), written with the status that set it, so a restart
// never counts a transition again.
type counted uint8

const (
	countedCompleted counted = 1 << iota
	countedFailed
	countedArchived
)

func countedBit(status string) counted {
	switch status {
	case apiclient.StatusCompleted:
		return countedCompleted
	case apiclient.StatusFailed:
		return countedFailed
	case apiclient.StatusArchived:
		return countedArchived
	}
	return 0
}

// Record is a followed agent job: the engine's part (engine.Op: its status
// and createdAt are the API's job's), the rest of the job, and its turns.
// Its state form is recordV1 (state.go), frozen.
type Record struct {
	engine.Op
	// Job is the API's job but its status and createdAt (Op's).
	Job apiclient.Job
	// Counts holds the terminal statuses already counted (or deliberately
	// not: the job was terminal when first seen); Op.Counted is unused.
	Counts counted
	// PRCounted: the job's pull request was counted (or deliberately not).
	PRCounted bool
	// WatchEnded: the archive watch of a completed job ended early (the API
	// no longer knows the job).
	WatchEnded bool
	// Turns is how many turns the job has had: 1 from its creation (or
	// first sighting), one more for each follow-up (sent through the
	// gateway, or noticed as the job turning active again after it
	// ended). 0 in records written before turns existed means 1.
	Turns int
	// TurnStartedAt is when the current turn started: zero for the first
	// (its start is the job's createdAt).
	TurnStartedAt time.Time
	// Messages are the follow-ups sent through the gateway: every one with
	// an Idempotency-Key (kept as long as the job, for replays), and the
	// others of the last hour (for the local message limit after a
	// restart).
	Messages []message
	// Rebuilt: state salvage rebuilt the record from the key of an
	// unreadable one; its idempotency keys, turns and submitter are lost.
	Rebuilt bool
}

// message is a follow-up sent through the gateway.
type message struct {
	IdemKey, RequestHash string
	At                   time.Time
	// Status is the HTTP status of the API's answer; 0 when the outcome is
	// unknown (the exporter stopped, or the request failed, before the
	// answer was recorded).
	Status int
	// Turn is the turn the message started; 0 when unknown (for a message
	// of unknown outcome: not yet re-checked), turnNotSeen when its
	// re-check found no turn it could have started.
	Turn int
	// By is who sent it (the gateway's basic-auth user).
	By string
}

// turnNotSeen is the Turn of a follow-up of unknown outcome whose re-check
// found the job ended: no turn is known to be its.
const turnNotSeen = -1

func (r *Record) ID() string  { return r.Job.ID }
func (r *Record) Valid() bool { return true }
func (r *Record) Final() bool { return r.Lost || apiclient.IsTerminal(r.Status) }

func (r *Record) Clone() engine.Record { c := *r; return &c }

// Polled: while it runs, while a follow-up of unknown outcome is not
// re-checked, and a completed one for ArchiveWatch after it completed.
func (r *Record) Polled(now time.Time, cfg *engine.Config) bool {
	if _, ok := r.pendingMessage(); ok {
		return true
	}
	switch {
	case r.Lost:
		return false
	case !apiclient.IsTerminal(r.Status):
		return true
	case r.Status == apiclient.StatusCompleted:
		return !r.WatchEnded && cfg.ArchiveWatch > 0 && now.Before(r.TerminalAt.Add(cfg.ArchiveWatch))
	}
	return false
}

// archiveWatchMaxInterval caps the re-check interval of completed jobs.
const archiveWatchMaxInterval = time.Hour

// archiveCheckInterval is the re-check interval of a job completed since
// ago: ago/10, clamped to [30×PollInterval, 1h] (and never below one poll
// interval, should the clamp invert): about 50 reads per job over the
// default 24h.
func archiveCheckInterval(cfg *engine.Config, ago time.Duration) time.Duration {
	d := min(max(ago/10, 30*cfg.PollInterval), archiveWatchMaxInterval)
	return max(d, cfg.PollInterval)
}

// Next: the next round while it runs (or a follow-up waits for its
// re-check), a completed one slowly (archiveCheckInterval), else never.
func (r *Record) Next(at, roundStart time.Time, cfg *engine.Config) time.Time {
	_, pending := r.pendingMessage()
	switch {
	case pending || !apiclient.IsTerminal(r.Status):
		return roundStart.Add(cfg.PollInterval)
	case r.Status == apiclient.StatusCompleted:
		return at.Add(archiveCheckInterval(cfg, at.Sub(r.TerminalAt)))
	}
	return time.Time{}
}

// Missing: a 404 ends the archive watch of a terminal job (the API no
// longer knows it); a running one is lost at the third.
func (r *Record) Missing(n int, at time.Time) (engine.Event, bool) {
	if apiclient.IsTerminal(r.Status) {
		ended := r.WatchEnded
		r.WatchEnded = true
		return engine.Event{}, !ended
	}
	return r.Op.Missing(n, at)
}

// Keys are the follow-ups' Idempotency-Keys.
func (r *Record) Keys() []string {
	var out []string
	for _, m := range r.Messages {
		if m.IdemKey != "" {
			out = append(out, m.IdemKey)
		}
	}
	return out
}

// Reached: a later turn is further than anything an earlier one reached.
func (r *Record) Reached() int {
	n := r.turn()*1000 + len(r.Messages)
	if r.Lost || apiclient.IsTerminal(r.Status) {
		n += 100
	}
	for c := r.Counts; c != 0; c &= c - 1 {
		n += 10
	}
	if r.PRCounted {
		n += 5
	}
	if r.WatchEnded {
		n++
	}
	if r.IdemKey != "" {
		n++
	}
	return n
}

// Event.Mark bits of the agent jobs' news.
const (
	markPR        uint8 = 1 << iota // a pull request seen on a completed job
	markNewTurn                     // seen active again after it ended
	markInferred                    // ... after a follow-up of unknown outcome
	markSubmitted                   // created through the gateway
	markMessage                     // a follow-up accepted upstream
)

// Saw applies a read job: a job seen live in a non-terminal status starts
// a new turn when its last turn had ended (a follow-up sent elsewhere), or
// when a follow-up of unknown outcome was sent before the round
// (roundStart): the job is running after it, whatever was believed before.
// A job rebuilt by state salvage is seen after the fact: whatever it
// reached, it may have been counted before.
func (r *Record) Saw(read any, at, roundStart time.Time, how engine.Sighting) (engine.Event, bool) {
	j := *read.(*apiclient.Job)
	j.ID = r.Job.ID // the key is what was asked for
	boundJob(&j)
	sentAt, pending := r.pendingMessage()
	if !pending || sentAt.After(roundStart) {
		sentAt = time.Time{} // one that may have left after the read
	}
	if r.Status == statusUnread {
		how = engine.SeenAfterTheFact
	}
	changed := !r.same(&j)
	ev := r.transition(j, at, how, sentAt)
	return ev, changed || ev.Mark&markNewTurn != 0 || !sentAt.IsZero()
}

// same reports whether j is what r holds of the job.
func (r *Record) same(j *apiclient.Job) bool {
	a := &r.Job
	return r.Status == j.Status && a.Model == j.Model && a.Source == j.Source && r.CreatedAt.Equal(j.CreatedAt) &&
		equalPtr(a.PRLink, j.PRLink) && equalPtr(a.ArchivedAt, j.ArchivedAt)
}

func equalPtr[T comparable](a, b *T) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// transition makes r the record after seeing job at time at, and returns
// the event to count. A job seen live in a non-terminal status starts a new
// turn when its last turn had ended, or when sentAt is not zero (a
// follow-up of unknown outcome was sent then); the turn starts at sentAt
// when given, else at. That follow-up's Turn is set either way: the turn
// it started, or turnNotSeen.
func (r *Record) transition(job apiclient.Job, at time.Time, how engine.Sighting, sentAt time.Time) engine.Event {
	running := how == engine.SeenLive && job.Status != "" && !apiclient.IsTerminal(job.Status)
	ended := r.Counts != 0 || apiclient.IsTerminal(r.Status)
	r.setJob(job)
	var ev engine.Event
	if running && (ended || !sentAt.IsZero()) {
		start := at
		if !sentAt.IsZero() && sentAt.Before(at) {
			start = sentAt
		}
		r.startTurn(start)
		ev.Mark |= markNewTurn
		if !sentAt.IsZero() {
			ev.Mark |= markInferred
		}
	}
	if !sentAt.IsZero() {
		r.settleFollowUp(sentAt, ev.Mark&markNewTurn != 0)
	}
	r.countTerminal(job.Status, at, how, &ev)
	if done := job.Status == apiclient.StatusCompleted || job.Status == apiclient.StatusArchived; done && job.PRLink != nil && *job.PRLink != "" && !r.PRCounted {
		// A pull request counts once its job completed (or was archived
		// after that); a link on a job active or failed is not a finished
		// change.
		r.PRCounted = true
		if how == engine.SeenLive {
			ev.Mark |= markPR
		}
	}
	return ev
}

// setJob keeps job in r: its status and createdAt in the engine's part.
func (r *Record) setJob(job apiclient.Job) {
	r.Status, r.CreatedAt = job.Status, job.CreatedAt
	job.Status, job.CreatedAt = "", time.Time{}
	r.Job = job
}

// job is the API's job r holds.
func (r *Record) job() apiclient.Job {
	j := r.Job
	j.Status, j.CreatedAt = r.Status, r.CreatedAt
	return j
}

// startTurn makes r a job whose new turn started at: active again, its
// terminal statuses not yet counted for this turn.
func (r *Record) startTurn(at time.Time) {
	r.Turns = r.turn() + 1
	r.TurnStartedAt = at
	r.TerminalAt = time.Time{}
	r.Counts = 0
	r.WatchEnded = false
	r.Lost = false // the API took a follow-up for it: it knows the job
}

// settleFollowUp sets the Turn of the follow-up of unknown outcome sent at
// sentAt: the turn it started, or turnNotSeen. Messages is copied first:
// the record in memory shares it.
func (r *Record) settleFollowUp(sentAt time.Time, startedTurn bool) {
	r.Messages = slices.Clone(r.Messages)
	for i := range r.Messages {
		if m := &r.Messages[i]; m.Status == 0 && m.Turn == 0 && m.At.Equal(sentAt) {
			m.Turn = turnNotSeen
			if startedTurn {
				m.Turn = r.Turns
			}
		}
	}
}

// countTerminal records a terminal status not counted yet and, when it was
// seen live, the event that counts it (with the turn's duration on the
// turn's first terminal read).
func (r *Record) countTerminal(status string, at time.Time, how engine.Sighting, ev *engine.Event) {
	bit := countedBit(status)
	if bit == 0 || r.Counts&bit != 0 {
		return
	}
	r.Counts |= bit
	first := r.TerminalAt.IsZero()
	if first {
		r.TerminalAt = at
	}
	if how != engine.SeenLive {
		return
	}
	ev.Finished = status
	if start := r.turnStart(); first && !start.IsZero() {
		ev.Timed, ev.Duration = true, at.Sub(start)
	}
}

// pendingMessage returns when the follow-up of unknown outcome was sent
// that may have started a turn not seen yet: one without an answer
// (Status 0) and not yet re-checked (Turn 0), sent after the current turn
// started. Kept in the record, so a restart re-checks it.
func (r *Record) pendingMessage() (time.Time, bool) {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if m := &r.Messages[i]; m.Status == 0 && m.Turn == 0 && m.At.After(r.turnStart()) {
			return m.At, true
		}
	}
	return time.Time{}, false
}

// turn is the number of the current turn.
func (r *Record) turn() int { return max(r.Turns, 1) }

// turnStart is when the current turn started, zero when unknown.
func (r *Record) turnStart() time.Time {
	if !r.TurnStartedAt.IsZero() {
		return r.TurnStartedAt
	}
	return r.CreatedAt
}

// viewStatus is the status its view and the jobs gauge show.
func (r *Record) viewStatus() string { return r.ViewStatus("") }

// boundJob bounds every string of a job the API answered (bounded.Text:
// a 1 MB status is kept, written and served as a few hundred bytes) and
// interns those that repeat. Its id is checked where it enters (a create,
// a track): polls and follow-ups keep the id they asked for.
func boundJob(j *apiclient.Job) {
	j.Status = engine.Intern(bounded.Text(j.Status))
	j.Model = engine.Intern(bounded.Text(j.Model))
	j.Source.Repository = engine.Intern(bounded.Text(j.Source.Repository))
	j.Source.Ref = bounded.Text(j.Source.Ref)
	if j.PRLink != nil {
		pr := bounded.Text(*j.PRLink)
		j.PRLink = &pr
	}
}

// Intent is a create's intent: its own state form (version 2, intentV2):
// the engine's and an excerpt of the prompt, enough to find the job in
// the platform's dashboard.
type Intent struct {
	engine.IntentBase
	PromptExcerpt string `json:"promptExcerpt"`
}

func (in *Intent) Valid() bool { return true }

func (in *Intent) Record(id string) engine.Record { return &Record{Job: apiclient.Job{ID: id}} }

// promptExcerptLen is how much of a prompt an intent keeps, in runes.
const promptExcerptLen = 120

func excerpt(prompt string) string {
	prompt = strings.ToValidUTF8(strings.TrimSpace(prompt), "\uFFFD")
	if utf8.RuneCountInString(prompt) <= promptExcerptLen {
		return prompt
	}
	return string([]rune(prompt)[:promptExcerptLen]) + "…"
}

// API is the agent job endpoints: an *apiclient.Client, or one per
// project's organization (perOrg).
type API interface {
	CreateJobWithStatus(ctx context.Context, project, prompt string) (*apiclient.Job, int, error)
	GetJob(ctx context.Context, project, id string) (*apiclient.Job, error)
	SendMessage(ctx context.Context, project, id, prompt string) (*apiclient.Job, int, error)
	ThrottledUntil(endpoint string) time.Time
}

// perOrg is the API of several organizations: every call with the
// project's organization's client (a read, also after a reload removed
// the project).
type perOrg struct{ engine.Clients }

func (o perOrg) CreateJobWithStatus(ctx context.Context, project, prompt string) (*apiclient.Job, int, error) {
	c, err := engine.ClientOf(o.Clients, project, false)
	if err != nil {
		return nil, 0, err
	}
	return c.CreateJobWithStatus(ctx, project, prompt)
}

func (o perOrg) GetJob(ctx context.Context, project, id string) (*apiclient.Job, error) {
	c, err := engine.ClientOf(o.Clients, project, true)
	if err != nil {
		return nil, err
	}
	return c.GetJob(ctx, project, id)
}

func (o perOrg) SendMessage(ctx context.Context, project, id, prompt string) (*apiclient.Job, int, error) {
	c, err := engine.ClientOf(o.Clients, project, false)
	if err != nil {
		return nil, 0, err
	}
	return c.SendMessage(ctx, project, id, prompt)
}

// ThrottledUntil is zero: each organization's client keeps its own pause
// (a call to a paused one fails at once, nothing sent).
func (perOrg) ThrottledUntil(string) time.Time { return time.Time{} }

// APIOf is api's agent job endpoints (nil: it has none).
func APIOf(api any) API {
	switch a := api.(type) {
	case API:
		return a
	case engine.Clients:
		return perOrg{a}
	}
	return nil
}
