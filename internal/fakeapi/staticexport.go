package fakeapi

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// Static export endpoint names, as the exporter's metrics name them.
const (
	StartStaticExport  = "start_static_export"
	StaticExportStatus = "static_export_status"
	StaticExportBundle = "static_export_bundle"
)

// DefaultStaticExportDuration is how long a simulated export takes from
// its start to completed, unless Options.StaticExportDuration says
// otherwise.
const DefaultStaticExportDuration = time.Minute

// BundleLifetime is how long a bundle's presigned URL is valid.
const BundleLifetime = time.Hour

// An export's course is set by its domain and the time since its start,
// on the fake's clock (Options.Now), over the export's duration D:
//
//   - queued for the first tenth of D, at progress 0;
//   - running until D, progress (one decimal, 0-100) and pageCount
//     growing with the time;
//   - completed at D, with every page exported;
//   - a domain starting "fail" fails at D/2, progress and pages frozen;
//   - a domain starting "noexport" answers 403 as an organization without
//     static export does (and so does every domain for a key listed in
//     Options.StaticExportDisabled).
//
// It exports the paths asked for, or Options.Paths pages.
var (
	exportFails    = regexp.MustCompile(`^fail`)
	exportDisabled = regexp.MustCompile(`^noexport`)
	// exportHost is a hostname only, as the reference asks.
	exportHost = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$`)
)

// staticExport is one simulated export.
type staticExport struct {
	id, quota, domain string
	pages             int
	fail              bool
	createdAt         time.Time
}

// staticExportBody is the reference's StaticExportJob.
type staticExportBody struct {
	JobID     string  `json:"jobId"`
	Status    string  `json:"status"`
	Progress  float64 `json:"progress"`
	PageCount int     `json:"pageCount"`
	CreatedAt string  `json:"createdAt"`
	UpdatedAt string  `json:"updatedAt"`
	Error     *string `json:"error,omitempty"`
}

// routeStaticExports serves the three static export endpoints.
func (s *Server) routeStaticExports() {
	for _, e := range []string{StartStaticExport, StaticExportStatus, StaticExportBundle} {
		s.requests[e] = &atomic.Int64{}
	}
	s.mux.HandleFunc("POST /v1/static-export/jobs", s.handleStartStaticExport)
	s.mux.HandleFunc("GET /v1/static-export/jobs/{jobId}", s.handleStaticExportStatus)
	s.mux.HandleFunc("POST /v1/static-export/jobs/{jobId}/bundle", s.handleStaticExportBundle)
}

func (s *Server) exportDuration() time.Duration {
	if s.opts.StaticExportDuration > 0 {
		return s.opts.StaticExportDuration
	}
	return DefaultStaticExportDuration
}

// view is the export's state at now.
func (e *staticExport) view(d time.Duration, now time.Time) staticExportBody {
	b := staticExportBody{JobID: e.id, Status: "queued", CreatedAt: stamp(e.createdAt), UpdatedAt: stamp(e.createdAt)}
	elapsed, end := now.Sub(e.createdAt), d
	if e.fail {
		end = d / 2
	}
	if elapsed < d/10 {
		return b
	}
	at := min(elapsed, end)
	b.Status = "running"
	b.Progress = math.Floor(1000*float64(at-d/10)/float64(d-d/10)) / 10
	b.PageCount = int(float64(e.pages) * b.Progress / 100)
	b.UpdatedAt = stamp(e.createdAt.Add(at))
	switch {
	case elapsed < end:
	case e.fail:
		b.Status = "failed"
		msg := fmt.Sprintf("Rendering failed after %d pages: a page of %s could not be rendered", b.PageCount, e.domain)
		b.Error = &msg
	default:
		b.Status, b.Progress, b.PageCount = "completed", 100, e.pages
	}
	return b
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// readExportRequest reads a start's body, answering 400 itself when it is
// not one the reference allows: domain a hostname (required), version a
// string, paths an array of non-empty strings.
func readExportRequest(w http.ResponseWriter, r *http.Request) (domain string, paths []string, ok bool) {
	data, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var req struct {
		Domain  *string   `json:"domain"`
		Version *string   `json:"version"`
		Paths   *[]string `json:"paths"`
	}
	if err != nil || json.Unmarshal(data, &req) != nil {
		writeError(w, http.StatusBadRequest, "the body must be a JSON object with domain, and optionally version and paths")
		return "", nil, false
	}
	if req.Domain == nil || !exportHost.MatchString(*req.Domain) {
		writeError(w, http.StatusBadRequest, "domain is required: the deployment's hostname only, without protocol, slash or path")
		return "", nil, false
	}
	if req.Paths != nil {
		paths = *req.Paths
		if slices.Contains(paths, "") {
			writeError(w, http.StatusBadRequest, "paths entries must be page paths")
			return "", nil, false
		}
	}
	return *req.Domain, paths, true
}

// handleStartStaticExport is POST /v1/static-export/jobs: 202 with the
// queued job; 400 for a body the reference refuses; 403 for an
// organization without static export.
func (s *Server) handleStartStaticExport(w http.ResponseWriter, r *http.Request) {
	f, org, token, ok := s.precheck(StartStaticExport, w, r)
	if !ok {
		return
	}
	// An organization without static export is refused whatever it sends;
	// a "noexport" domain once it is read.
	const notEnabled = "Static export is not enabled for this organization"
	if slices.Contains(s.opts.StaticExportDisabled, token) {
		writeError(w, http.StatusForbidden, notEnabled)
		return
	}
	domain, paths, ok := readExportRequest(w, r)
	if !ok {
		return
	}
	if exportDisabled.MatchString(domain) {
		writeError(w, http.StatusForbidden, notEnabled)
		return
	}
	now := s.opts.Now().Truncate(time.Millisecond)
	e := &staticExport{id: "se_" + strings.TrimPrefix(s.opts.JobIDPrefix, "job_") + fmt.Sprintf("%06d", s.nextID.Add(1)) + f.IDSuffix,
		quota: s.quotaKey(org, token), domain: domain, pages: s.opts.Paths, fail: exportFails.MatchString(domain), createdAt: now}
	if len(paths) > 0 {
		e.pages = len(paths)
	}
	s.mu.Lock()
	if s.exports == nil {
		s.exports = map[string]*staticExport{}
	}
	s.exports[e.id] = e
	s.mu.Unlock()
	if f.DropAnswer {
		dropAnswer(w)
		return
	}
	writeJSON(w, http.StatusAccepted, e.view(s.exportDuration(), now))
}

// export is the export a request names, of the requester's organization;
// it answers 404 itself for none.
func (s *Server) export(endpoint string, w http.ResponseWriter, r *http.Request) (*staticExport, Fault, bool) {
	f, org, token, ok := s.precheck(endpoint, w, r)
	if !ok {
		return nil, f, false
	}
	s.mu.Lock()
	e := s.exports[r.PathValue("jobId")]
	s.mu.Unlock()
	if e == nil || e.quota != s.quotaKey(org, token) {
		writeError(w, http.StatusNotFound, "No job exists with the provided ID")
		return nil, f, false
	}
	return e, f, true
}

// handleStaticExportStatus is GET /v1/static-export/jobs/{jobId}.
func (s *Server) handleStaticExportStatus(w http.ResponseWriter, r *http.Request) {
	e, f, ok := s.export(StaticExportStatus, w, r)
	if !ok {
		return
	}
	d, now := s.exportDuration(), s.opts.Now()
	s.mu.Lock()
	if s.holdExports {
		now = e.createdAt.Add(d / 4) // running, a quarter of the way
	}
	s.mu.Unlock()
	body := e.view(d, now)
	if f.UnknownEnum {
		body.Status = UnknownEnumValue
	}
	answerState(w, f, body, `{"status": "runn`)
}

// handleStaticExportBundle is POST /v1/static-export/jobs/{jobId}/bundle:
// 409 until the export completed (and for a failed one), then a bundle
// behind a presigned-looking URL, newly signed on every call, valid for
// BundleLifetime.
func (s *Server) handleStaticExportBundle(w http.ResponseWriter, r *http.Request) {
	e, f, ok := s.export(StaticExportBundle, w, r)
	if !ok {
		return
	}
	now := s.opts.Now()
	switch e.view(s.exportDuration(), now).Status {
	case "completed":
	case "failed":
		writeError(w, http.StatusConflict, "The job failed, so a bundle cannot be generated")
		return
	default:
		writeError(w, http.StatusConflict, "The job has not finished yet, so a bundle cannot be generated")
		return
	}
	url := BundleURLPrefix + e.id + "/bundle.tar.gz?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAFAKE%2F" +
		now.UTC().Format("20060102") + "%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=" + now.UTC().Format("20060102T150405Z") +
		fmt.Sprintf("&X-Amz-Expires=%d&X-Amz-SignedHeaders=host&X-Amz-Signature=", int(BundleLifetime.Seconds())) + signature()
	// Cut after the link: a client that quotes what it cannot decode
	// would quote the link.
	answerState(w, f, map[string]any{"jobId": e.id, "bundleUrl": url, "sizeBytes": e.pages * 61440,
		"expiresAt": stamp(now.Add(BundleLifetime).Truncate(time.Second))},
		fmt.Sprintf(`{"jobId": %q, "bundleUrl": %q, "sizeBytes": `, e.id, url))
}

// BundleURLPrefix starts every bundle URL the fake signs.
const BundleURLPrefix = "https://mintlify-static-exports.s3.amazonaws.com/"

func signature() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// StaticExports is how many exports were started.
func (s *Server) StaticExports() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.exports)
}

// HoldStaticExports keeps every export running (a quarter of the way) while
// hold is true, whatever the clock says; released, each is where its time
// puts it.
func (s *Server) HoldStaticExports(hold bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holdExports = hold
}

// StaticExportIDs are the ids of the exports started, in order.
func (s *Server) StaticExportIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.exports))
	for id := range s.exports {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
