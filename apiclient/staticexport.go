package apiclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"strings"
	"unicode"
)

// The static export endpoints (OpenAPI static-export-openapi.json of the
// public reference; Enterprise plans, beta): start an export of a
// deployment, read its progress, and package a completed one into a
// bundle behind a presigned URL. None draws on the analytics quota, and
// the reference states no limit for them. An organization without static
// export answers 403 to a start (an *APIError with StatusCode 403).
var (
	EndpointStartStaticExport  = operationEndpoint("start_static_export")
	EndpointStaticExportStatus = operationEndpoint("static_export_status")
	EndpointStaticExportBundle = operationEndpoint("static_export_bundle")
)

// Static export statuses the reference documents. Any other value is not
// final (IsStaticExportFinal): it is followed further and kept as it is.
const (
	StaticExportQueued    = "queued"
	StaticExportRunning   = "running"
	StaticExportCompleted = "completed"
	StaticExportFailed    = "failed"
)

// IsStaticExportFinal reports whether an export in this status will not
// change again.
func IsStaticExportFinal(status string) bool {
	return status == StaticExportCompleted || status == StaticExportFailed
}

// ErrNoOperationID means the API accepted an operation (a 2xx) but
// answered no usable id to follow it by: it was started, and cannot be
// followed.
var ErrNoOperationID = errors.New("the API started the operation but answered no usable id to follow it")

// Bounds of what is sent (strict writer) and kept (bounded reader).
const (
	maxDomainLength  = 253 // a DNS name
	maxVersionLength = 128
	maxExportPaths   = 10000
	maxExportPathLen = 1024
	// maxStatusLength bounds a status the API adds (kept, not final).
	maxStatusLength = 64
	// maxExportErrorLength bounds a failed export's error text.
	maxExportErrorLength = 512
)

// StaticExportRequest is the body of a start. Domain is the deployment's
// primary domain as a hostname only (docs.example.com, acme.mintlify.app:
// no scheme, slash or path). Version, when set, tags the export (the API
// exports the latest published version either way). Paths, when not
// empty, limits the export to those pages; empty exports every published
// page (an empty list is not sent).
type StaticExportRequest struct {
	Domain  string   `json:"domain"`
	Version string   `json:"version,omitempty"`
	Paths   []string `json:"paths,omitempty"`
}

// hostname is a DNS name of letters, digits and hyphens in dot-separated
// labels, as the reference asks for ("the hostname only").
var hostname = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$`)

// Check refuses, before anything is sent, what the reference says the API
// refuses or what could not be sent as asked: StartStaticExport calls it,
// and so does a gateway that refuses a body before it takes anything of
// it further.
func (r StaticExportRequest) Check() error {
	if r.Domain == "" {
		return errors.New("empty domain")
	}
	if len(r.Domain) > maxDomainLength || !hostname.MatchString(r.Domain) {
		return fmt.Errorf("domain must be a hostname only (like docs.example.com: no scheme, port, slash or path, at most %d bytes)", maxDomainLength)
	}
	if err := checkText("version", r.Version, maxVersionLength); err != nil {
		return err
	}
	if len(r.Paths) > maxExportPaths {
		return fmt.Errorf("%d paths: at most %d (none exports every page)", len(r.Paths), maxExportPaths)
	}
	for i, p := range r.Paths {
		if p == "" {
			return fmt.Errorf("path %d is empty", i)
		}
		if err := checkText(fmt.Sprintf("path %d", i), p, maxExportPathLen); err != nil {
			return err
		}
	}
	return nil
}

// checkText refuses a value over max bytes or with a character that is
// not printable (a newline, a NUL).
func checkText(what, s string, max int) error {
	if len(s) > max {
		return fmt.Errorf("%s of %d bytes: at most %d", what, len(s), max)
	}
	if strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) || r == unicode.ReplacementChar }) {
		return fmt.Errorf("%s has an unprintable character or is not UTF-8", what)
	}
	return nil
}

// StaticExportJob is an export's state. The reference's fields, read
// tolerantly: progress is a number (42.5 is read), counts may come as
// 128.0, an unknown status is kept (bounded to 64 bytes, not final), and
// error (free text: never a label or a log line) is bounded.
type StaticExportJob struct {
	JobID  string `json:"jobId"`
	Status string `json:"status"`
	// Progress is the completion percentage, within 0-100.
	Progress float64 `json:"progress"`
	// PageCount is the number of pages exported so far.
	PageCount int64 `json:"pageCount"`
	// CreatedAt and UpdatedAt are zero when the API gives none.
	CreatedAt APITime `json:"createdAt"`
	UpdatedAt APITime `json:"updatedAt"`
	// Error is the API's message when the export failed, else "".
	Error string `json:"error,omitempty"`
	// Code is the HTTP status of the API's answer.
	Code int `json:"-"`
}

// UnmarshalJSON reads the reference's StaticExportJob tolerantly.
func (j *StaticExportJob) UnmarshalJSON(b []byte) error {
	var w struct {
		JobID     string   `json:"jobId"`
		Status    string   `json:"status"`
		Progress  *float64 `json:"progress"`
		PageCount *float64 `json:"pageCount"`
		CreatedAt APITime  `json:"createdAt"`
		UpdatedAt APITime  `json:"updatedAt"`
		Error     *string  `json:"error"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*j = StaticExportJob{JobID: w.JobID, Status: w.Status, CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt, Code: j.Code}
	if w.Progress != nil {
		j.Progress = math.Min(math.Max(*w.Progress, 0), 100)
	}
	if w.PageCount != nil {
		j.PageCount = count(*w.PageCount)
	}
	if w.Error != nil {
		j.Error = *w.Error
	}
	return nil
}

// count reads a count the API sends as a JSON number: the integer part,
// never negative.
func count(f float64) int64 {
	if f <= 0 {
		return 0
	}
	return int64(math.Min(f, math.MaxInt64/2))
}

// StaticExportBundle is a completed export's bundle. URL, the presigned
// link, is a Secret: it grants the download to whoever holds it until
// ExpiresAt, so it prints and marshals as "[redacted]" and only
// URL.Reveal() gives it, to be handed to the one who asked.
type StaticExportBundle struct {
	JobID     string  `json:"jobId"`
	URL       Secret  `json:"bundleUrl"`
	SizeBytes int64   `json:"sizeBytes"`
	ExpiresAt APITime `json:"expiresAt"`
}

// UnmarshalJSON reads the reference's BundleResponse tolerantly (sizeBytes
// as any number).
func (s *StaticExportBundle) UnmarshalJSON(b []byte) error {
	var w struct {
		JobID     string          `json:"jobId"`
		URL       Secret          `json:"bundleUrl"`
		SizeBytes *float64        `json:"sizeBytes"`
		ExpiresAt json.RawMessage `json:"expiresAt"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*s = StaticExportBundle{JobID: w.JobID, URL: w.URL}
	// A date's error quotes the value: not in an answer that holds a
	// secret, should the API put one where the date belongs.
	if len(w.ExpiresAt) > 0 && s.ExpiresAt.UnmarshalJSON(w.ExpiresAt) != nil {
		return errors.New("expiresAt: not a date-time")
	}
	if w.SizeBytes != nil {
		s.SizeBytes = count(*w.SizeBytes)
	}
	return nil
}

// StartStaticExport starts an export of req.Domain. It is not idempotent
// (each call is an export), so it is retried only when the request
// certainly did not reach the server. A 202 without a usable jobId returns
// the job and an error wrapping ErrNoOperationID: the export started, and
// cannot be followed. A 403 is an *APIError with StatusCode 403: static
// export not enabled for the organization, as the reference documents, or
// (as on every endpoint) a key without the write scope or used from
// outside its IP allowlist; its Message is the API's text.
func (c *Client) StartStaticExport(ctx context.Context, req StaticExportRequest) (StaticExportJob, error) {
	if err := req.Check(); err != nil {
		return StaticExportJob{}, fmt.Errorf("start static export: %w", err)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return StaticExportJob{}, fmt.Errorf("start static export: encoding request: %w", err)
	}
	var job StaticExportJob
	err = c.do(ctx, request{
		endpoint: EndpointStartStaticExport,
		method:   "POST",
		path:     "/v1/static-export/jobs",
		body:     body,
		status:   &job.Code,
	}, &job)
	if err != nil {
		return StaticExportJob{}, err
	}
	c.boundExport(&job)
	if job.JobID == "" {
		return job, fmt.Errorf("mintlify API %s: %w", EndpointStartStaticExport, ErrNoOperationID)
	}
	return job, nil
}

// GetStaticExport reads an export's state (404 when the API knows no such
// job).
func (c *Client) GetStaticExport(ctx context.Context, jobID string) (StaticExportJob, error) {
	id, err := idSegment("static export job id", jobID)
	if err != nil {
		return StaticExportJob{}, fmt.Errorf("static export status: %w", err)
	}
	var job StaticExportJob
	err = c.do(ctx, request{
		endpoint:   EndpointStaticExportStatus,
		method:     "GET",
		path:       "/v1/static-export/jobs/" + id,
		idempotent: true,
		status:     &job.Code,
	}, &job)
	if err != nil {
		return StaticExportJob{}, err
	}
	c.boundExport(&job)
	switch job.JobID {
	case "":
		job.JobID = jobID // required by the reference; the one asked for
	case jobID:
	default:
		return StaticExportJob{}, fmt.Errorf("mintlify API %s: the answer is another job's", EndpointStaticExportStatus)
	}
	return job, nil
}

// BundleStaticExport packages a completed export and returns its bundle.
// The API answers 409 until the export has completed and 404 for a job it
// does not know. Neither an error nor the bundle's %v ever holds the
// presigned URL: the answer is never quoted in an error, and an error
// answer's own body is not either (a redirect's body would hold it).
// Not idempotent (each call signs a new link), so not retried once sent.
func (c *Client) BundleStaticExport(ctx context.Context, jobID string) (StaticExportBundle, error) {
	id, err := idSegment("static export job id", jobID)
	if err != nil {
		return StaticExportBundle{}, fmt.Errorf("static export bundle: %w", err)
	}
	var b StaticExportBundle
	err = c.do(ctx, request{
		endpoint: EndpointStaticExportBundle,
		method:   "POST",
		path:     "/v1/static-export/jobs/" + id + "/bundle",
		private:  true,
		secret:   true,
	}, &b)
	if err != nil {
		return StaticExportBundle{}, err
	}
	if b.URL.IsZero() {
		return StaticExportBundle{}, fmt.Errorf("mintlify API %s: response has no bundleUrl", EndpointStaticExportBundle)
	}
	if !usableBundleURL(b.URL.Reveal()) {
		// Never quoted: a URL cut short may still grant the download.
		return StaticExportBundle{}, fmt.Errorf("mintlify API %s: response has a bundleUrl that is not an https URL of at most %d printable bytes",
			EndpointStaticExportBundle, maxBundleURLBytes)
	}
	if b.JobID = answeredID(b.JobID); b.JobID == "" {
		b.JobID = jobID
	}
	return b, nil
}

// maxBundleURLBytes bounds the presigned URL of a bundle, which the gateway
// answers as it is (it cannot be cut): a presigned S3 link is well under
// 2 KiB; one of megabytes is a broken answer, not a link to pass on.
const maxBundleURLBytes = 16 << 10

// usableBundleURL reports whether u can be answered as a bundle's link:
// an absolute https URL with a host, of at most maxBundleURLBytes bytes of
// printable ASCII (a presigned link is percent-encoded).
func usableBundleURL(u string) bool {
	if len(u) > maxBundleURLBytes || strings.IndexFunc(u, func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0 {
		return false
	}
	p, err := url.Parse(u)
	return err == nil && p.Scheme == "https" && p.Host != ""
}

// boundExport bounds what an answer holds before anyone keeps it: an id
// that fails CheckID is dropped, an unknown status and the error text are
// cut (the key masked first, should the API echo it).
func (c *Client) boundExport(j *StaticExportJob) {
	j.JobID = answeredID(j.JobID)
	j.Status = printable(j.Status, maxStatusLength)
	j.Error = printable(c.redactor.String(j.Error), maxExportErrorLength)
}

// printable replaces every rune that is not printable (a newline, a NUL,
// invalid UTF-8) with U+FFFD and cuts s to at most n bytes.
func printable(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) {
			return unicode.ReplacementChar
		}
		return r
	}, strings.ToValidUTF8(s, string(unicode.ReplacementChar)))
	return truncate(s, n)
}

// clamp refuses an export's page count beyond 2^53 and dates outside
// 2000-2199 (clamper).
func (j *StaticExportJob) clamp() (fields []string) {
	if j.PageCount > maxExactCount {
		j.PageCount, fields = 0, append(fields, "pageCount")
	}
	if !plausible(j.CreatedAt.Time) {
		j.CreatedAt, fields = APITime{}, append(fields, "createdAt")
	}
	if !plausible(j.UpdatedAt.Time) {
		j.UpdatedAt, fields = APITime{}, append(fields, "updatedAt")
	}
	return fields
}
