//go:build conformance

// Package conformance holds `make conformance` (issue 44, 3): the exporter
// and its gateway judged against the API's vendored reference by tools
// nobody here wrote, Stoplight Prism (a mock of random schema-valid
// answers, a validating proxy) and Portman with Newman (requests generated
// from the reference). scripts/conformance.sh installs the tools, pinned,
// and names their directory in CONFORMANCE_NPM. Every process a test
// starts runs in a process group of its own and is killed with it.
package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil/blackbox"
)

// key is the admin key every exporter here is given (the fake accepts any
// mint_ key; the mock checks only that one is sent).
const key = "mint_conformance"

// tool is the path of an installed npm tool's command.
func tool(t *testing.T, name string) string {
	t.Helper()
	dir := os.Getenv("CONFORMANCE_NPM")
	if dir == "" {
		t.Fatal("CONFORMANCE_NPM is not set: run make conformance (scripts/conformance.sh installs the tools)")
	}
	p := filepath.Join(dir, "node_modules", ".bin", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s: %v (run make conformance)", name, err)
	}
	return p
}

// proc is a process a test started, in a process group of its own.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *testutil.SyncBuffer
	done chan struct{}
}

// startProc starts name with args in a new process group (killed with the
// test, and by the kernel if the test binary dies first), in the test's
// temporary directory.
func startProc(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = t.TempDir()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p := &proc{name: filepath.Base(name), cmd: cmd, out: &testutil.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	go func() { _ = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("%s %s output:\n%s", p.name, strings.Join(args, " "), tail(p.out.String(), 4000))
		}
	})
	return p
}

// stop ends the process group: SIGTERM, then SIGKILL after 5 s.
func (p *proc) stop() {
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
}

// run runs name with args to its end (at most timeout) in a process group
// of its own and returns its output and exit error.
func run(t *testing.T, timeout time.Duration, name string, args ...string) (string, error) {
	t.Helper()
	p := startProc(t, name, args...)
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.stop()
		return p.out.String(), fmt.Errorf("%s did not end within %s", p.name, timeout)
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		return p.out.String(), fmt.Errorf("%s exited %d", p.name, code)
	}
	return p.out.String(), nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// prism starts `prism CMD ARGS` on a free loopback port and returns its URL
// once it listens.
func prism(t *testing.T, args ...string) string {
	t.Helper()
	host, port, err := net.SplitHostPort(testutil.FreeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	p := startProc(t, tool(t, "prism"), append(args, "-h", host, "-p", port)...)
	testutil.Eventually(t, 2*time.Minute, "prism "+args[0]+" listening", func() bool {
		select {
		case <-p.done:
			t.Fatalf("prism %s exited:\n%s", strings.Join(args, " "), tail(p.out.String(), 4000))
		default:
		}
		return strings.Contains(p.out.String(), "Prism is listening")
	})
	return "http://" + net.JoinHostPort(host, port)
}

// reference is the vendored reference's directory.
func reference() string {
	return filepath.Join(testutil.ModuleRoot(), "internal", "conformance", "reference")
}

// rootedSpec writes the reference file into dir with its paths from the
// API's root, so that every file shares one base URL: a server URL ending
// in /v1 (openapi.json, static-export-openapi.json) moves into the paths.
// keep, when not nil, keeps only the paths (from the root) it accepts.
func rootedSpec(t *testing.T, dir, file string, keep func(path string) bool) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(reference(), file))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	servers, _ := doc["servers"].([]any)
	base := ""
	if len(servers) > 0 {
		u, err := url.Parse(servers[0].(map[string]any)["url"].(string))
		if err != nil {
			t.Fatal(err)
		}
		base = strings.TrimSuffix(u.Path, "/")
		u.Path = ""
		doc["servers"] = []any{map[string]any{"url": u.String()}}
	}
	paths := map[string]any{}
	for p, item := range doc["paths"].(map[string]any) {
		if keep == nil || keep(base+p) {
			paths[base+p] = item
		}
	}
	doc["paths"] = paths
	out, err := json.MarshalIndent(doc, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, strings.TrimSuffix(file, ".json")+".rooted.json")
	if err := os.WriteFile(p, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// exchange is one request through the router and what the validating
// Prism said of it.
type exchange struct {
	Method, Path, Operation string
	Status                  int
	// Request and Response are the violations Prism found, by side.
	Request, Response []string
}

// router fronts one Prism per reference file on one base URL, routing by
// path as the reference (reference_test.go) maps paths to files, and records every
// exchange with the violations Prism reported (--errors: a request
// refused 422, an answer refused 500, both in application/problem+json;
// warnings in the sl-violations header).
type router struct {
	ref    *Reference
	byFile map[string]*httputil.ReverseProxy
	// plant, when set, may answer a request itself (a test's planted
	// fault) instead of the Prism behind it.
	plant func(w http.ResponseWriter, r *http.Request) bool

	mu  sync.Mutex
	log []exchange
}

// newRouter serves a router to the Prisms of upstreams (by reference
// file; "" for every file) until the test ends.
func newRouter(t *testing.T, upstreams map[string]string) (*router, string) {
	t.Helper()
	ref, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	rt := &router{ref: ref, byFile: map[string]*httputil.ReverseProxy{}}
	for file, up := range upstreams {
		u, err := url.Parse(up)
		if err != nil {
			t.Fatal(err)
		}
		p := httputil.NewSingleHostReverseProxy(u)
		p.ModifyResponse = rt.inspect
		rt.byFile[file] = p
	}
	srv := httptest.NewServer(rt)
	t.Cleanup(srv.Close)
	return rt, srv.URL
}

func (rt *router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if rt.plant != nil && rt.plant(w, r) {
		return
	}
	file, _, ok := FileOf(r.URL.Path)
	p := rt.byFile[file]
	if p == nil {
		p = rt.byFile[""]
	}
	if !ok || p == nil {
		rt.record(exchange{Method: r.Method, Path: r.URL.Path, Status: http.StatusNotFound, Request: []string{"a path the reference does not describe"}})
		http.NotFound(w, r)
		return
	}
	p.ServeHTTP(w, r)
}

func (rt *router) record(x exchange) {
	rt.mu.Lock()
	rt.log = append(rt.log, x)
	rt.mu.Unlock()
}

// exchanges is every exchange so far.
func (rt *router) exchanges() []exchange {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return slices.Clone(rt.log)
}

// violation is one entry of Prism's validation list.
type violation struct {
	Location []string `json:"location"`
	Severity string   `json:"severity"`
	Message  string   `json:"message"`
}

// prismErrors is the prefix of the type of Prism's own problem answers.
const prismErrors = "https://stoplight.io/prism/errors#"

// inspect records an answer with the violations Prism reported.
func (rt *router) inspect(resp *http.Response) error {
	req := resp.Request
	x := exchange{Method: req.Method, Path: req.URL.Path, Status: resp.StatusCode, Operation: rt.ref.Operation(req)}
	var vs []violation
	if h := resp.Header.Get("sl-violations"); h != "" {
		_ = json.Unmarshal([]byte(h), &vs)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") {
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		var problem struct {
			Type, Title, Detail string
			Validation          []violation
		}
		if json.Unmarshal(body, &problem) == nil && strings.HasPrefix(problem.Type, prismErrors) {
			switch kind := strings.TrimPrefix(problem.Type, prismErrors); kind {
			case "UNPROCESSABLE_ENTITY", "VIOLATIONS":
				if len(vs) == 0 {
					vs = problem.Validation
				}
			default: // no such path or method, no key: the request is outside the reference
				x.Request = append(x.Request, kind+": "+problem.Detail)
			}
		}
	}
	for _, v := range vs {
		if !strings.EqualFold(v.Severity, "error") {
			continue
		}
		msg := strings.Join(v.Location, ".") + ": " + v.Message
		if len(v.Location) > 0 && v.Location[0] == "response" {
			x.Response = append(x.Response, msg)
		} else {
			x.Request = append(x.Request, msg)
		}
	}
	if resp.StatusCode == http.StatusUnprocessableEntity && len(x.Request) == 0 && len(vs) == 0 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") {
		x.Request = append(x.Request, "refused by Prism")
	}
	rt.record(x)
	return nil
}

// tally sums exchanges by operation ("METHOD /path" of the reference, or
// the raw path) and lists their violations, for the log and the judges.
type tally struct {
	exchanges, requestViolations, responseViolations int
	byOperation                                      map[string]int
	violations                                       []string
}

func tallyOf(xs []exchange) tally {
	t := tally{byOperation: map[string]int{}}
	for _, x := range xs {
		t.exchanges++
		op := x.Operation
		if op == "" {
			op = x.Method + " " + x.Path
		}
		t.byOperation[op]++
		t.requestViolations += len(x.Request)
		t.responseViolations += len(x.Response)
		for _, v := range x.Request {
			t.violations = append(t.violations, fmt.Sprintf("request %s %s (%d): %s", x.Method, x.Path, x.Status, v))
		}
		for _, v := range x.Response {
			t.violations = append(t.violations, fmt.Sprintf("answer to %s %s (%d): %s", x.Method, x.Path, x.Status, v))
		}
	}
	return t
}

func (t tally) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d exchanges over %d operations, %d request and %d response violations", t.exchanges, len(t.byOperation), t.requestViolations, t.responseViolations)
	for _, op := range slices.Sorted(maps.Keys(t.byOperation)) {
		fmt.Fprintf(&b, "\n  %4d %s", t.byOperation[op], op)
	}
	for _, v := range t.violations {
		fmt.Fprintf(&b, "\n  violation: %s", v)
	}
	return b.String()
}

// exporter starts the built exporter with the key and args.
func exporter(t *testing.T, args ...string) *testutil.Exporter {
	t.Helper()
	bin, err := testutil.ExporterBinary()
	if err != nil {
		t.Fatal(err)
	}
	x := testutil.StartExporter(t, bin, []string{"MINTLIFY_API_KEY=" + key}, args...)
	testutil.WaitHTTP(t, x.Base+"/-/ready", 30*time.Second, nil)
	return x
}

// walked waits until every demand of the exporter at base ended a walk
// and none runs, and returns the status report then.
func walked(t *testing.T, base string) []statusDemand {
	t.Helper()
	var demands []statusDemand
	blackbox.Eventually(t, 3*time.Minute, "every demand walked", func() bool {
		rep, err := blackbox.TryStatusReport(base)
		if err != nil || len(rep.Demands) == 0 {
			return false
		}
		demands = demands[:0]
		for _, d := range rep.Demands {
			if d.Result == "" || d.Running {
				return false
			}
			demands = append(demands, statusDemand{d.Project, d.Source, d.Window, d.Result, d.SkippedRows, d.TotalsSkipped})
		}
		return true
	})
	return demands
}

// statusDemand is what the judges read of a status page demand.
type statusDemand struct {
	Project, Source, Window, Result string
	SkippedRows                     int
	TotalsSkipped                   bool
}

// post sends a JSON body (or none) to url and returns the status and the
// answer's JSON fields.
func post(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return do(t, req)
}

func get(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (int, map[string]any) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}
