// The API's public reference (the OpenAPI files of mintlify/docs,
// vendored under reference/) and a check of HTTP exchanges against it:
// every answer the fake serves and every request the client sends must be
// one the reference allows. It lives in test files, so neither the
// reference nor its validator can reach the exporter's binary.
//
// The validator is pb33f/libopenapi-validator, picked over
// getkin/kin-openapi because analytics.openapi.json is OpenAPI 3.1 (type
// arrays such as ["string", "null"]), which libopenapi-validator is built
// for while kin-openapi's openapi3 model is a 3.0 one (docs/development.md).

package conformance

import (
	"bytes"
	"embed"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	"github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/paths"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
)

//go:embed reference/*.json
var files embed.FS

// A spec is one file of the reference and the paths it answers for.
type spec struct {
	file string
	// prefixes are the request paths (as the client sends them, from the
	// API's root) the file describes.
	prefixes []string
	// base is its server URL's path: the file's paths are relative to it
	// ("/v1" for openapi.json, whose paths start "/project/...").
	base string
}

var specs = []spec{
	{file: "analytics.openapi.json", prefixes: []string{"/v1/analytics/"}},
	{file: "admin-openapi.json", prefixes: []string{"/v1/agent/", "/v2/agent/"}},
	{file: "openapi.json", prefixes: []string{"/v1/project/", "/v1/workflow/"}, base: "/v1"},
	{file: "static-export-openapi.json", prefixes: []string{"/v1/static-export/"}, base: "/v1"},
}

// Files lists the reference's files.
func Files() []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.file
	}
	return out
}

// Reference validates exchanges against the reference's files.
type Reference struct {
	validators map[string]validator.Validator
	models     map[string]*v3.Document
	// mu serialises validations: the validator's caches are filled as it
	// goes.
	mu sync.Mutex
}

var (
	loadOnce sync.Once
	loaded   *Reference
	loadErr  error
)

// Load parses the reference once per process.
func Load() (*Reference, error) {
	loadOnce.Do(func() { loaded, loadErr = load() })
	return loaded, loadErr
}

func load() (*Reference, error) {
	r := &Reference{validators: map[string]validator.Validator{}, models: map[string]*v3.Document{}}
	for _, s := range specs {
		data, err := files.ReadFile("reference/" + s.file)
		if err != nil {
			return nil, err
		}
		doc, err := libopenapi.NewDocument(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.file, err)
		}
		// Formats are asserted (a date-time must be one). The security
		// schemes are checked on requests too (an Authorization header
		// with the Bearer scheme); the tests that send wrong or no keys on
		// purpose check the answers alone (Transport.AnswersOnly).
		v, errs := validator.NewValidator(doc, config.WithFormatAssertions())
		if len(errs) > 0 {
			return nil, fmt.Errorf("%s: %v", s.file, errs)
		}
		model, err := doc.BuildV3Model()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.file, err)
		}
		r.models[s.file] = &model.Model
		if ok, verrs := v.ValidateDocument(); !ok {
			return nil, fmt.Errorf("%s is not a valid OpenAPI document: %s", s.file, describe(verrs))
		}
		r.validators[s.file] = v
	}
	return r, nil
}

// specFor is the file describing a request path, and the path relative to
// that file's server.
func specFor(path string) (spec, string, bool) {
	for _, s := range specs {
		for _, p := range s.prefixes {
			if strings.HasPrefix(path, p) {
				return s, strings.TrimPrefix(path, s.base), true
			}
		}
	}
	return spec{}, "", false
}

// FileOf is the reference file describing a request path (from the API's
// root), and that file's server path ("/v1": its paths are relative to it).
func FileOf(path string) (file, base string, ok bool) {
	s, _, ok := specFor(path)
	return s.file, s.base, ok
}

// Covers reports whether the reference describes a request path (from the
// API's root).
func Covers(path string) bool {
	_, _, ok := specFor(path)
	return ok
}

// CheckRequest validates a request (its path, query and body) against the
// reference: nil when it is one the reference allows. body is the
// request's body (nil for none); the request's own Body is not read.
func (r *Reference) CheckRequest(req *http.Request, body []byte) error {
	v, rel, err := r.route(req)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if ok, errs := v.ValidateHttpRequestSync(rel(req, body)); !ok {
		return fmt.Errorf("%s %s: the reference refuses the request: %s", req.Method, req.URL.Path, describe(errs))
	}
	return nil
}

// CheckResponse validates an answer (status, content type and body)
// against what the reference documents for its request.
func (r *Reference) CheckResponse(req *http.Request, status int, header http.Header, body []byte) error {
	v, rel, err := r.route(req)
	if err != nil {
		return err
	}
	resp := &http.Response{StatusCode: status, Header: header.Clone(), Body: io.NopCloser(bytes.NewReader(body)), Request: req}
	if resp.Header == nil {
		resp.Header = http.Header{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if ok, errs := v.ValidateHttpResponse(rel(req, nil), resp); !ok {
		return fmt.Errorf("%s %s: HTTP %d: the reference refuses the answer: %s", req.Method, req.URL.Path, status, describe(errs))
	}
	return nil
}

// Documented lists, as "METHOD /path STATUS" (the path as file writes it,
// relative to its server), every status the reference file documents for
// the operations of the given paths: what a test must have seen answered
// (Transport.Answered) to have checked them all.
func (r *Reference) Documented(file string, opPaths ...string) ([]string, error) {
	model, ok := r.models[file]
	if !ok {
		return nil, fmt.Errorf("no reference file %s", file)
	}
	var out []string
	for _, p := range opPaths {
		item, ok := model.Paths.PathItems.Get(p)
		if !ok {
			return nil, fmt.Errorf("%s documents no path %s", file, p)
		}
		for method, op := range item.GetOperations().FromOldest() {
			for status := range op.Responses.Codes.KeysFromOldest() {
				out = append(out, strings.ToUpper(method)+" "+p+" "+status)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// Operation is "METHOD /path" of a request, the path as its file writes
// it (empty when the reference describes no such operation).
func (r *Reference) Operation(req *http.Request) string {
	s, _, ok := specFor(req.URL.Path)
	if !ok {
		return ""
	}
	_, rel, _ := r.route(req)
	r.mu.Lock()
	defer r.mu.Unlock()
	_, errs, path := paths.FindPath(rel(req, nil), r.models[s.file], nil)
	if path == "" || len(errs) > 0 {
		return ""
	}
	return req.Method + " " + path
}

// route finds the validator of req's path and a function giving req with
// its path relative to that file's server.
func (r *Reference) route(req *http.Request) (validator.Validator, func(*http.Request, []byte) *http.Request, error) {
	s, rel, ok := specFor(req.URL.Path)
	if !ok {
		return nil, nil, fmt.Errorf("%s %s: the reference describes no such path", req.Method, req.URL.Path)
	}
	return r.validators[s.file], func(req *http.Request, body []byte) *http.Request {
		out := req.Clone(req.Context())
		u := *req.URL
		u.Path, u.RawPath = rel, ""
		out.URL = &u
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.ContentLength = int64(len(body))
		return out
	}, nil
}

// describe lists a validation's errors, each with its reason and the
// schema's complaints.
func describe(errs []*errors.ValidationError) string {
	var b strings.Builder
	for i, e := range errs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(e.Message)
		if e.Reason != "" {
			b.WriteString(" (" + e.Reason + ")")
		}
		for _, se := range e.SchemaValidationErrors {
			fmt.Fprintf(&b, " [%s: %s]", se.FieldPath, se.Reason)
		}
	}
	return b.String()
}

// Transport is an http.RoundTripper that validates every request it sends
// and every answer it receives against the reference, and reports each
// refusal to Fail (a test's Errorf). Paths the reference does not describe
// are reported too: the client must not call what the API does not have.
type Transport struct {
	Ref  *Reference
	Base http.RoundTripper
	Fail func(format string, args ...any)
	// AnswersOnly checks the answers alone: for a test that sends a
	// request the reference refuses on purpose, to see the error answer.
	AnswersOnly bool
	mu          sync.Mutex
	exchanges   int
	answered    map[string]bool
}

// Exchanges is how many exchanges were checked.
func (t *Transport) Exchanges() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.exchanges
}

// Answered is every "METHOD /path STATUS" answered through the transport,
// the path as the reference writes it (compare with Reference.Documented).
func (t *Transport) Answered() map[string]bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.answered)
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		_ = req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	if err := t.Ref.CheckRequest(req, body); err != nil && !t.AnswersOnly {
		t.Fail("%v", err)
	}
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(data))
	if err := t.Ref.CheckResponse(req, resp.StatusCode, resp.Header, data); err != nil {
		t.Fail("%v", err)
	}
	op := t.Ref.Operation(req)
	t.mu.Lock()
	t.exchanges++
	if op != "" {
		if t.answered == nil {
			t.answered = map[string]bool{}
		}
		t.answered[fmt.Sprintf("%s %d", op, resp.StatusCode)] = true
	}
	t.mu.Unlock()
	return resp, nil
}
