package fakeapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

const key = "mint_fake_test"

func fixedNow() time.Time { return time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC) }

type clock = testutil.Clock

func newClock() *clock { return testutil.NewClock(fixedNow()) }

type env struct {
	t    *testing.T
	fake *fakeapi.Server
	url  string
}

// start serves a fake with key and project "docs" unless opts say otherwise.
func start(t *testing.T, opts fakeapi.Options) *env {
	t.Helper()
	if opts.APIKey == "" {
		opts.APIKey = key
	}
	if opts.Projects == nil {
		opts.Projects = []string{"docs"}
	}
	if opts.Now == nil {
		opts.Now = fixedNow
	}
	fake := fakeapi.New(opts)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	return &env{t: t, fake: fake, url: srv.URL}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request; hdr may set headers ("" deletes). Authorization is
// the Bearer key unless hdr sets it.
func (e *env) do(method, path, body string, hdr map[string]string) response {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: data}
}

func (e *env) get(path string) response { e.t.Helper(); return e.do("GET", path, "", nil) }

// decode decodes a 200 body into v.
func (e *env) decode(r response, v any) {
	e.t.Helper()
	e.decodeStatus(r, http.StatusOK, v)
}

// decodeStatus decodes a body of the given status into v.
func (e *env) decodeStatus(r response, status int, v any) {
	e.t.Helper()
	if r.status != status {
		e.t.Fatalf("status %d: %s", r.status, r.body)
	}
	if err := json.Unmarshal(r.body, v); err != nil {
		e.t.Fatalf("decoding %s: %v", r.body, err)
	}
}

// wantError checks status and the {"error": "..."} body shape.
func (e *env) wantError(r response, status int, what string) {
	e.t.Helper()
	if r.status != status {
		e.t.Errorf("%s: status %d, want %d (body %s)", what, r.status, status, r.body)
		return
	}
	var body struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil || body.Error == "" {
		e.t.Errorf("%s: body %s, want {\"error\": \"...\"}", what, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		e.t.Errorf("%s: Content-Type %q", what, ct)
	}
}

type counts struct {
	Human int64 `json:"human"`
	AI    int64 `json:"ai"`
	Total int64 `json:"total"`
}

type row struct {
	Path string `json:"path"`
	counts
}

type page struct {
	Totals   counts `json:"totals"`
	Visitors []row  `json:"visitors"`
	HasMore  *bool  `json:"hasMore"`
}

type job struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Source struct {
		Repository string `json:"repository"`
		Ref        string `json:"ref"`
	} `json:"source"`
	Model      string     `json:"model"`
	PRLink     *string    `json:"prLink"`
	CreatedAt  time.Time  `json:"createdAt"`
	ArchivedAt *time.Time `json:"archivedAt"`
}
