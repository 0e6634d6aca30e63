// Package fakeapi is the one simulation of the Mintlify API in this repo. The
// exporter's sandbox mode serves it on loopback, and every test that needs
// the API talks to it over real HTTP. Its data is synthetic but shaped like
// the real thing (hundreds of paths, human and AI traffic that moves through
// the day, deduplicated totals that are not sums, jobs that finish after a
// while), and it has switches for the faults a client must survive.
package fakeapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Endpoint names, as the exporter's metrics use them: the agent job ones
// here, each analytics endpoint in its handler's file (analyticsRoute).
const (
	CreateJob = "create_job"
	GetJob    = "get_job"
	// SendMessage is the follow-up message to an existing job.
	SendMessage = "send_message"
)

// analyticsRoutes are the analytics endpoints and their handlers, each
// declared in its handler's file; they all spend the organization's one
// analytics quota.
var analyticsRoutes []analyticsRouteDef

type analyticsRouteDef struct {
	// endpoint is the name (the metrics' endpoint label); pattern the
	// route below /v1/analytics/{project}.
	endpoint, pattern string
	handle            func(s *Server, w http.ResponseWriter, r *http.Request, project string, f Fault)
}

// analyticsRoute declares an analytics endpoint of the fake, served at
// GET /v1/analytics/{project}/pattern, and returns its name.
func analyticsRoute(endpoint, pattern string, handle func(s *Server, w http.ResponseWriter, r *http.Request, project string, f Fault)) string {
	analyticsRoutes = append(analyticsRoutes, analyticsRouteDef{endpoint, pattern, handle})
	return endpoint
}

// isAnalytics reports whether endpoint spends the analytics quota.
func isAnalytics(endpoint string) bool {
	return slices.ContainsFunc(analyticsRoutes, func(r analyticsRouteDef) bool { return r.endpoint == endpoint })
}

// CreateJobLimit is the documented create-job limit per project per hour.
const CreateJobLimit = 100

// MessageLimit is the documented follow-up message limit per project per
// hour.
const MessageLimit = 100

// Options configure a Server. The zero value is usable.
type Options struct {
	// Projects lists the project ids that exist; empty means any id exists.
	Projects []string
	// APIKey, when set, is the only accepted Bearer token. When empty, any
	// token with the documented mint_ prefix is accepted.
	APIKey string
	// Paths is the number of pages each project has (default 300).
	Paths int
	// PathsByProject overrides Paths per project; 0 is a site with no
	// traffic yet.
	PathsByProject map[string]int
	// PathBytes, when set, pads every path of the visitors pages served to
	// this many bytes (a site of long URLs: memory benchmarks and tests).
	PathBytes int
	// JobDuration is how long a job stays active (default 20s); each job
	// varies it by ±50% unless its prompt fixes it.
	JobDuration time.Duration
	// ArchiveAfter is how long after completing a job bound for archiving
	// is archived (default 30s).
	ArchiveAfter time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Location is the time zone of the API's dates: a day is over at its
	// midnight there (default UTC). The sandbox uses --analytics.timezone.
	Location *time.Location
	// CreateLimit overrides the create-job limit per project per hour:
	// 0 is CreateJobLimit (the documented 100), negative is no limit.
	CreateLimit int
	// MessageLimit overrides the follow-up message limit per project per
	// hour: 0 is MessageLimit (the documented 100), negative is no limit.
	MessageLimit int
	// AnalyticsBudget is how many analytics requests the organization (all
	// projects, any key) may send per AnalyticsWindow; beyond it the API
	// answers 429 with Retry-After. 0 is no limit; the sandbox uses the
	// real service's AnalyticsLimit.
	AnalyticsBudget int
	// AnalyticsWindow is the rolling window of AnalyticsBudget (default an
	// hour; tests shorten it).
	AnalyticsWindow time.Duration
	// Organizations, when set, are the accepted keys (APIKey is then not
	// used): each key reads and writes only its own projects (403 for
	// another's), and each has its own AnalyticsBudget, as every admin key
	// is one organization with its own quota.
	Organizations []Organization
	// QuotaPerKey, without Organizations, gives every accepted key its own
	// analytics quota, as if each were another organization's (the
	// sandbox, whose keys are made per configured organization).
	QuotaPerKey bool
	// JobIDPrefix starts every job id, before a 6-digit sequence number
	// (default "job_"). The sandbox makes it unique per run, so that a
	// state file kept across runs never meets an id again, as the real
	// API's ids are unique.
	JobIDPrefix string
	// UpdateLimit and PreviewLimit override the trigger limits per
	// organization (10 updates per 10 s, 5 previews a minute): 0 is the
	// documented one, negative is none.
	UpdateLimit, PreviewLimit int
	// DeployDuration is the build time a deployment reports (endedAt -
	// createdAt; default DefaultDeployDuration), or less when it is read
	// final sooner: endedAt is never in the future.
	DeployDuration time.Duration
	// Automations every project has (nil: DefaultAutomations).
	Automations []Automation
	// StaticExportDuration is how long an export takes to complete
	// (default DefaultStaticExportDuration), on the clock Now.
	StaticExportDuration time.Duration
	// StaticExportDisabled lists keys whose organization has no static
	// export: a start answers 403.
	StaticExportDisabled []string
	// FailEveryUpdate, when above 0, makes every Nth update of a project
	// end in failure whatever its branch (the sandbox's 3rd, 6th, ...:
	// MintlifyDeploymentFailed and the failed-deployments panels are seen
	// without a branch to name, since an update deploys the project's).
	FailEveryUpdate int
}

// Organization is one admin key and the projects it may read.
type Organization struct {
	Key      string
	Projects []string
}

// AnalyticsLimit is the analytics quota per organization per hour that
// independent integrations report for the real service.
const AnalyticsLimit = 100

// Fault makes the server misbehave for one endpoint.
type Fault struct {
	// Status, when non-zero, is returned with a JSON error body.
	Status int
	// RetryAfter is sent as the Retry-After header with Status.
	RetryAfter string
	// Latency delays the response (the request's context still wins).
	Latency time.Duration
	// MalformedJSON answers 200 with a body that is not JSON.
	MalformedJSON bool
	// EndlessHasMore makes a paged endpoint (visitors, views, feedback,
	// searches, assistant) say there is more forever, inventing rows past
	// the real ones and a new cursor on every page.
	EndlessHasMore bool
	// RepeatedCursor (cursor endpoints) answers every page with the same
	// next cursor and hasMore: a loop.
	RepeatedCursor bool
	// MissingCursor (feedback, assistant) says hasMore with a null
	// nextCursor.
	MissingCursor bool
	// UnknownEnum (feedback, assistant, caller stats) gives the first item
	// of every page UnknownEnumValue as its source and status, or response
	// type and resolution; caller stats gain a caller of that name.
	UnknownEnum bool
	// DuplicatePath repeats, at the top of every page after the first, a
	// row of the page before it (with other counts for visitors and views:
	// the first row; for cursor endpoints: the last item), and on
	// feedback/by-page its first row at the end.
	DuplicatePath bool
	// NegativeCounts puts a negative count in the first row of a page.
	NegativeCounts bool
	// NegativeTotals makes the site totals negative: visitors' and views'
	// human count, totalSearches, the caller stats' total.
	NegativeTotals bool
	// FractionalCounts writes every whole number of a successful answer
	// with a fraction (10 as 10.0): the reference types counts as JSON
	// numbers, so a reader must take it.
	FractionalCounts bool
	// CursorURL gives a cursor endpoint's nextCursor as the full URL of
	// the next page, with the cursor in its cursor parameter.
	CursorURL bool
	// NullCreatedAt (feedback) gives the first item of every page a null
	// createdAt, as the reference allows.
	NullCreatedAt bool
	// DropAnswer (create job, send message and the deployment triggers) does the work, then
	// closes the connection without answering: the client cannot know the
	// outcome.
	DropAnswer bool
	// IDSuffix (create job, the deployment triggers, the automation trigger's ids, a static export's start) is appended to the id
	// of what is created: an API that answers a 1 MB id, or one with a NUL
	// or a newline, which the exporter must refuse to keep.
	IDSuffix string
	// Remaining is how many requests the fault applies to; 0 is all until
	// cleared.
	Remaining int
}

// Server is the fake API. Create it with New; it is an http.Handler.
type Server struct {
	opts     Options
	mux      *http.ServeMux
	mu       sync.Mutex
	faults   map[string]*Fault
	jobs     map[string]*job // by project + "/" + id
	created  map[string][]time.Time
	messaged map[string][]time.Time
	queries  []url.Values
	requests map[string]*atomic.Int64
	nextID   atomic.Int64
	// analytics holds, per key, the times of analytics requests served
	// within the last AnalyticsWindow, oldest first; analyticsByKey counts
	// every analytics request a key sent.
	analytics      map[string][]time.Time
	analyticsByKey map[string]int
	rejections     atomic.Int64
	rowsMu         sync.Mutex
	rows           map[rowsKey]rowsValue
	// memo holds generated days of the other analytics endpoints (see
	// memoize).
	memoMu sync.Mutex
	memo   map[string]any
	// deployments by status id; updates and previews the trigger times
	// per organization (quotaKey); deployBranches the branch an update of
	// a project deploys; holdDeploys: see HoldDeployments.
	deployments       map[string]*deployment
	updates, previews map[string][]time.Time
	deployBranches    map[string]string
	holdDeploys       bool
	// holdExports: see HoldStaticExports.
	holdExports bool
	// holdRuns: see HoldAutomationRuns, since when.
	holdRuns  bool
	holdSince time.Time
	// updateCount counts the updates triggered per project, for
	// FailEveryUpdate.
	updateCount map[string]int
	// automationRuns counts the triggered runs; exports are the static
	// exports by job id (made on the first start).
	automationRuns int
	// runJobs are the jobIds of each project's automation runs.
	runJobs map[string][]string
	exports map[string]*staticExport
}

// New returns a fake API server.
func New(opts Options) *Server {
	if opts.Paths == 0 {
		opts.Paths = 300
	}
	if opts.JobDuration <= 0 {
		opts.JobDuration = 20 * time.Second
	}
	if opts.ArchiveAfter <= 0 {
		opts.ArchiveAfter = 30 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Location == nil {
		opts.Location = time.UTC
	}
	if opts.JobIDPrefix == "" {
		opts.JobIDPrefix = "job_"
	}
	if opts.AnalyticsWindow <= 0 {
		opts.AnalyticsWindow = time.Hour
	}
	if opts.DeployDuration <= 0 {
		opts.DeployDuration = DefaultDeployDuration
	}
	s := &Server{
		opts:     opts,
		mux:      http.NewServeMux(),
		faults:   map[string]*Fault{},
		jobs:     map[string]*job{},
		created:  map[string][]time.Time{},
		messaged: map[string][]time.Time{},
		requests: map[string]*atomic.Int64{},
		rows:     map[rowsKey]rowsValue{},
		// One quota per key: without Organizations, every key is the one
		// organization's, so they share one log.
		analytics:      map[string][]time.Time{},
		analyticsByKey: map[string]int{},
		memo:           map[string]any{},
		deployments:    map[string]*deployment{},
		updates:        map[string][]time.Time{},
		updateCount:    map[string]int{},
		previews:       map[string][]time.Time{},
		deployBranches: map[string]string{},
		runJobs:        map[string][]string{},
	}
	for _, e := range []string{CreateJob, GetJob, SendMessage, TriggerUpdate, TriggerPreview, DeploymentStatus} {
		s.requests[e] = &atomic.Int64{}
	}
	for _, rt := range analyticsRoutes {
		s.requests[rt.endpoint] = &atomic.Int64{}
		handle := rt.handle
		s.mux.HandleFunc("GET /v1/analytics/{project}/"+rt.pattern, s.withChecks(rt.endpoint,
			func(w http.ResponseWriter, r *http.Request, project string, f Fault) { handle(s, w, r, project, f) }))
	}
	s.mux.HandleFunc("POST /v2/agent/{project}/job", s.withChecks(CreateJob, s.handleCreateJob))
	s.mux.HandleFunc("GET /v2/agent/{project}/job/{id}", s.withChecks(GetJob, s.handleGetJob))
	s.mux.HandleFunc("POST /v2/agent/{project}/job/{id}/message", s.withChecks(SendMessage, s.handleMessage))
	s.mux.HandleFunc("POST /v1/project/update/{project}", s.withChecks(TriggerUpdate, s.handleTriggerUpdate))
	s.mux.HandleFunc("POST /v1/project/preview/{project}", s.withChecks(TriggerPreview, s.handleTriggerPreview))
	s.mux.HandleFunc("GET /v1/project/update-status/{statusId}", s.handleDeploymentStatus)
	s.routeAutomations()
	s.routeStaticExports()
	return s
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// SetFault installs a fault on an endpoint (any of the endpoint
// constants), replacing any earlier one there.
func (s *Server) SetFault(endpoint string, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[endpoint] = &f
}

// ClearFaults removes every fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = map[string]*Fault{}
}

// Requests is how many requests reached an endpoint, faulty ones included.
func (s *Server) Requests(endpoint string) int64 { return s.requests[endpoint].Load() }

// AnalyticsRequests is how many requests reached the analytics endpoints,
// all of them together.
func (s *Server) AnalyticsRequests() int64 {
	var n int64
	for _, rt := range analyticsRoutes {
		n += s.Requests(rt.endpoint)
	}
	return n
}

// VisitorsQueries returns the query strings of every visitors request.
func (s *Server) VisitorsQueries() []url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]url.Values(nil), s.queries...)
}

// takeFault returns the endpoint's active fault, consuming one use.
func (s *Server) takeFault(endpoint string) Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.faults[endpoint]
	if f == nil {
		return Fault{}
	}
	out := *f
	if f.Remaining > 0 {
		f.Remaining--
		if f.Remaining == 0 {
			delete(s.faults, endpoint)
		}
	}
	return out
}

type handler func(w http.ResponseWriter, r *http.Request, project string, f Fault)

// withChecks counts the request, applies latency and status faults, and
// checks auth and the project before the endpoint's own handler runs.
func (s *Server) withChecks(endpoint string, h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		f, org, token, ok := s.precheck(endpoint, w, r)
		if !ok {
			return
		}
		project := r.PathValue("project")
		if !s.projectExists(project) {
			writeError(w, http.StatusNotFound, "project not found")
			return
		}
		if org != nil && !slices.Contains(org.Projects, project) {
			writeError(w, http.StatusForbidden, "this key belongs to another organization")
			return
		}
		if isAnalytics(endpoint) && !s.spendAnalytics(w, s.quotaKey(org, token)) {
			return
		}
		if f.MalformedJSON {
			writeCut(w, `{"totals": {"human": 1,, <html>`)
			return
		}
		if f.rewrites() {
			serveRewritten(w, r, f, func(w http.ResponseWriter) { h(w, r, project, f) })
			return
		}
		h(w, r, project, f)
	}
}

// precheck counts the request, applies latency and status faults and
// checks the key: what every endpoint does first. It answers itself, and
// returns false, when the request goes no further.
func (s *Server) precheck(endpoint string, w http.ResponseWriter, r *http.Request) (f Fault, org *Organization, token string, ok bool) {
	s.requests[endpoint].Add(1)
	f = s.takeFault(endpoint)
	if f.Latency > 0 {
		t := time.NewTimer(f.Latency)
		select {
		case <-r.Context().Done():
			t.Stop()
			return f, nil, "", false
		case <-t.C:
		}
	}
	if f.Status != 0 {
		if f.RetryAfter != "" {
			w.Header().Set("Retry-After", f.RetryAfter)
		}
		writeError(w, f.Status, fmt.Sprintf("injected fault: %s", http.StatusText(f.Status)))
		return f, nil, "", false
	}
	token, bearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	org, known := s.organization(token)
	if !bearer || !known {
		writeError(w, http.StatusUnauthorized, "invalid or missing API key")
		return f, nil, "", false
	}
	return f, org, token, true
}

// organization is the organization token belongs to: nil (and true) for
// any accepted key when no Organizations are configured.
func (s *Server) organization(token string) (*Organization, bool) {
	if len(s.opts.Organizations) > 0 {
		for i := range s.opts.Organizations {
			if o := &s.opts.Organizations[i]; o.Key == token {
				return o, true
			}
		}
		return nil, false
	}
	if s.opts.APIKey != "" {
		return nil, token == s.opts.APIKey
	}
	return nil, strings.HasPrefix(token, "mint_")
}

// quotaKey names the analytics quota a request with token draws on.
func (s *Server) quotaKey(org *Organization, token string) string {
	switch {
	case org != nil:
		return org.Key
	case s.opts.QuotaPerKey:
		return token
	}
	return ""
}

// AnalyticsRequestsByKey is how many analytics requests key sent (every
// key's together, under "", without Organizations).
func (s *Server) AnalyticsRequestsByKey(key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.analyticsByKey[key]
}

// spendAnalytics counts one analytics request against the quota of the
// organization quota names, or answers 429 with the seconds until a slot
// frees.
func (s *Server) spendAnalytics(w http.ResponseWriter, quota string) bool {
	now := s.opts.Now()
	s.mu.Lock()
	s.analyticsByKey[quota]++
	if s.opts.AnalyticsBudget <= 0 {
		s.mu.Unlock()
		return true
	}
	sent := s.analytics[quota]
	cut := 0
	for cut < len(sent) && !sent[cut].After(now.Add(-s.opts.AnalyticsWindow)) {
		cut++
	}
	sent = append(sent[:0], sent[cut:]...)
	s.analytics[quota] = sent
	if len(sent) >= s.opts.AnalyticsBudget {
		wait := sent[0].Add(s.opts.AnalyticsWindow).Sub(now)
		s.mu.Unlock()
		s.rejections.Add(1)
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		writeError(w, http.StatusTooManyRequests, "analytics rate limit exceeded")
		return false
	}
	s.analytics[quota] = append(sent, now)
	s.mu.Unlock()
	return true
}

// AnalyticsRejections is how many analytics requests were refused with 429
// for the organization's quota.
func (s *Server) AnalyticsRejections() int64 { return s.rejections.Load() }

func (s *Server) projectExists(p string) bool {
	if len(s.opts.Projects) == 0 {
		return p != ""
	}
	return slices.Contains(s.opts.Projects, p)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers in the {"error": "..."} shape. The real API's error
// shape is undocumented; the client must cope with any body.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

// writeCut answers 200 with text, JSON cut short (the MalformedJSON fault).
func writeCut(w http.ResponseWriter, text string) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(text))
}

// answerState answers 200 with an operation's state (a deployment's, an
// export's), or with cut when f is MalformedJSON.
func answerState(w http.ResponseWriter, f Fault, body any, cut string) {
	if f.MalformedJSON {
		writeCut(w, cut)
		return
	}
	writeJSON(w, http.StatusOK, body)
}

// Serve runs the fake on a loopback listener until ctx ends; it returns the
// base URL once the listener is open and a function that waits for shutdown.
func (s *Server) Serve(ctx context.Context, addr string) (baseURL string, wait func() error, err error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("fake API: listen on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan error, 1)
	go func() {
		err := srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		done <- err
	}()
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()
	return "http://" + ln.Addr().String(), func() error { return <-done }, nil
}
