package blackbox

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
)

// Request is one request the fake API received.
type Request struct {
	Method, Project, Endpoint, Key string
	Status                         int
	// At is when the answer was written; Range is the dates asked for.
	At    time.Time
	Range string
}

// RecordingAPI serves a fake API and records every request: which
// project, which endpoint, with which key, and the answer's status.
type RecordingAPI struct {
	Fake *fakeapi.Server
	URL  string

	mu   sync.Mutex
	sent []Request
}

// NewRecordingAPI serves a fake API of opts until the test ends.
func NewRecordingAPI(t *testing.T, opts fakeapi.Options) *RecordingAPI {
	t.Helper()
	r := &RecordingAPI{Fake: fakeapi.New(opts)}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (r *RecordingAPI) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	r.Fake.ServeHTTP(rec, req)
	// /v1/analytics/{project}/{endpoint...} or /v2/agent/{project}/...
	parts := strings.SplitN(strings.TrimPrefix(req.URL.Path, "/"), "/", 4)
	s := Request{Method: req.Method, Status: rec.status, Key: strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer "),
		At: time.Now(), Range: req.URL.Query().Get("dateFrom") + ".." + req.URL.Query().Get("dateTo")}
	if len(parts) >= 3 {
		s.Project = parts[2]
	}
	if len(parts) == 4 {
		s.Endpoint = parts[0] + "/" + parts[1] + "/" + parts[3]
	}
	r.mu.Lock()
	r.sent = append(r.sent, s)
	r.mu.Unlock()
}

// Sent returns a copy of every request so far.
func (r *RecordingAPI) Sent() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.sent)
}

// Analytics returns the analytics requests of project ("" = every project).
func (r *RecordingAPI) Analytics(project string) []Request {
	var out []Request
	for _, s := range r.Sent() {
		if strings.HasPrefix(s.Endpoint, "v1/analytics/") && (project == "" || s.Project == project) {
			out = append(out, s)
		}
	}
	return out
}
