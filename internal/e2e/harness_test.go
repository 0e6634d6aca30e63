//go:build e2e

package e2e

// Pieces of the end-to-end test: processes started and stopped by PID, a
// small Prometheus HTTP API client and the Alertmanager webhook receiver.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mintlify-exporter/mintlify_exporter/internal/fakeapi"
	"github.com/mintlify-exporter/mintlify_exporter/internal/testutil"
)

// proc is a program the test started. Its output goes to a file that is
// logged when the test fails.
type proc struct {
	name   string
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
	err    error // set before exited is closed
}

// startProc starts bin and registers its stop (SIGTERM to its PID, SIGKILL
// after 10s) with t.Cleanup, along with logging its output if t failed.
func startProc(t *testing.T, name, bin string, args, env []string) *proc {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	if err := testutil.Start(cmd); err != nil {
		f.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.exited)
	}()
	t.Logf("started %s (pid %d): %s %s", name, cmd.Process.Pid, bin, strings.Join(args, " "))
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			p.dumpLog(t)
		}
	})
	return p
}

func (p *proc) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

func (p *proc) stop(t *testing.T) {
	if !p.running() {
		return
	}
	pid := p.cmd.Process.Pid
	_ = syscall.Kill(pid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		t.Logf("%s (pid %d) ignored SIGTERM for 10s; killing it", p.name, pid)
		_ = syscall.Kill(pid, syscall.SIGKILL)
		<-p.exited
	}
}

// dumpLog logs the last 150 lines of the process' output.
func (p *proc) dumpLog(t *testing.T) {
	b, err := os.ReadFile(p.log)
	if err != nil {
		t.Logf("%s: reading log: %v", p.name, err)
		return
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 150 {
		lines = lines[len(lines)-150:]
	}
	t.Logf("---- last %d lines of %s output (pid %d, exit: %v) ----\n%s\n---- end of %s output ----",
		len(lines), p.name, p.cmd.Process.Pid, p.exitState(), strings.Join(lines, "\n"), p.name)
}

func (p *proc) exitState() string {
	if p.running() {
		return "running"
	}
	if p.err != nil {
		return p.err.Error()
	}
	return "exit status 0"
}

// mustRun fails the test when the process has exited.
func (p *proc) mustRun(t *testing.T) {
	t.Helper()
	if !p.running() {
		p.dumpLog(t)
		t.Fatalf("%s exited early: %s", p.name, p.exitState())
	}
}

// eventuallyRunning polls f every interval until it returns nil or timeout
// passes, and fails the test with f's last error. The processes must stay
// up. (blackbox.Eventually, of the untagged tests, waits on a condition alone.)
func eventuallyRunning(t *testing.T, what string, timeout, interval time.Duration, procs []*proc, f func() error) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		err := f()
		if err == nil {
			t.Logf("%s: after %s", what, time.Since(start).Round(100*time.Millisecond))
			return
		}
		for _, p := range procs {
			p.mustRun(t)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		time.Sleep(interval) // real time: Prometheus and Alertmanager run on the wall clock; interval spares them
	}
}

var httpClient = &http.Client{Timeout: 10 * time.Second}

func getJSON(u string, out any) error {
	resp, err := httpClient.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %.500s", u, resp.Status, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("GET %s: %w: %.500s", u, err, body)
	}
	return nil
}

func postJSON(u string, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	resp, err := httpClient.Post(u, "application/json", bytes.NewReader(b))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("POST %s: %s: %.500s", u, resp.Status, body)
	}
	return json.Unmarshal(body, out)
}

// promAPI queries a Prometheus server's HTTP API.
type promAPI struct{ base string }

// sample is one series of a query result.
type sample struct {
	Metric map[string]string `json:"metric"`
	Value  []any             `json:"value"`  // vector: [ts, "v"]
	Values [][]any           `json:"values"` // matrix: [[ts, "v"], ...]
}

type queryResult struct {
	ResultType string
	Series     []sample
}

// points returns how many samples the result holds and how many of those
// are numbers (not NaN).
func (r queryResult) points() (all, numbers int) {
	count := func(v []any) {
		if len(v) != 2 {
			return
		}
		all++
		s, _ := v[1].(string)
		if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) {
			numbers++
		}
	}
	for _, s := range r.Series {
		if s.Value != nil {
			count(s.Value)
		}
		for _, v := range s.Values {
			count(v)
		}
	}
	return all, numbers
}

func (p promAPI) call(path string, params url.Values) (queryResult, error) {
	var resp struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
		Data      struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	u := p.base + path + "?" + params.Encode()
	r, err := httpClient.Get(u)
	if err != nil {
		return queryResult{}, err
	}
	defer r.Body.Close()
	if err := json.NewDecoder(r.Body).Decode(&resp); err != nil {
		return queryResult{}, fmt.Errorf("%s: decoding answer (%s): %w", path, r.Status, err)
	}
	if resp.Status != "success" {
		return queryResult{}, fmt.Errorf("%s %s: %s", resp.ErrorType, resp.Error, params.Get("query"))
	}
	out := queryResult{ResultType: resp.Data.ResultType}
	switch resp.Data.ResultType {
	case "vector", "matrix":
		if err := json.Unmarshal(resp.Data.Result, &out.Series); err != nil {
			return queryResult{}, err
		}
	case "scalar", "string":
		var v []any
		if err := json.Unmarshal(resp.Data.Result, &v); err != nil {
			return queryResult{}, err
		}
		out.Series = []sample{{Value: v}}
	}
	return out, nil
}

func (p promAPI) query(q string, at time.Time) (queryResult, error) {
	return p.call("/api/v1/query", url.Values{"query": {q}, "time": {fmtTime(at)}})
}

func (p promAPI) queryRange(q string, start, end time.Time, step time.Duration) (queryResult, error) {
	return p.call("/api/v1/query_range", url.Values{
		"query": {q}, "start": {fmtTime(start)}, "end": {fmtTime(end)}, "step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)},
	})
}

// labelValues returns the values of label on the series matching match.
func (p promAPI) labelValues(label, match string) ([]string, error) {
	var resp struct {
		Status string   `json:"status"`
		Data   []string `json:"data"`
	}
	u := p.base + "/api/v1/label/" + url.PathEscape(label) + "/values?" + url.Values{"match[]": {match}}.Encode()
	if err := getJSON(u, &resp); err != nil {
		return nil, err
	}
	return resp.Data, nil
}

func fmtTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}

// webhookAlert is one alert of an Alertmanager webhook notification.
type webhookAlert struct {
	Status      string            `json:"status"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	StartsAt    time.Time         `json:"startsAt"`
	EndsAt      time.Time         `json:"endsAt"`
}

// webhookMessage is the body Alertmanager posts to a webhook receiver.
type webhookMessage struct {
	Version  string         `json:"version"`
	Receiver string         `json:"receiver"`
	Status   string         `json:"status"`
	Alerts   []webhookAlert `json:"alerts"`
}

// receiver records the notifications Alertmanager posts.
type receiver struct {
	srv  *httptest.Server
	mu   sync.Mutex
	msgs []webhookMessage
	t    *testing.T
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{t: t}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var m webhookMessage
		if err := json.NewDecoder(req.Body).Decode(&m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			t.Errorf("webhook: undecodable notification: %v", err)
			return
		}
		r.mu.Lock()
		r.msgs = append(r.msgs, m)
		r.mu.Unlock()
		for _, a := range m.Alerts {
			t.Logf("webhook %s: %s %s %v", req.URL.Path, a.Status, a.Labels["alertname"], a.Labels)
		}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// find returns the first alert with the status whose labels include want.
func (r *receiver) find(status string, want map[string]string) (webhookAlert, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.msgs {
		for _, a := range m.Alerts {
			if a.Status != status {
				continue
			}
			ok := true
			for k, v := range want {
				if a.Labels[k] != v {
					ok = false
					break
				}
			}
			if ok {
				return a, true
			}
		}
	}
	return webhookAlert{}, false
}

// summary lists what was received, for failure messages.
func (r *receiver) summary() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, m := range r.msgs {
		for _, a := range m.Alerts {
			fmt.Fprintf(&b, "\n  %s %s %v", a.Status, a.Labels["alertname"], a.Labels)
		}
	}
	if b.Len() == 0 {
		return " nothing"
	}
	return b.String()
}

// alertnames returns the names of received alerts other than those expected.
func (r *receiver) alertnames(expected ...string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, m := range r.msgs {
		for _, a := range m.Alerts {
			if n := a.Labels["alertname"]; !slices.Contains(expected, n) && !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// fakeAndExporter serves the fake API of the e2e projects in this process
// (so that a test can inject faults; it stops with the test) and builds
// the exporter binary TestMain found (testutil.ExporterBinary).
func fakeAndExporter(t *testing.T, began time.Time) (fake *fakeapi.Server, apiURL, bin string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	// An export takes seconds, not the sandbox's minute: the run waits for one to complete.
	fake = fakeapi.New(fakeapi.Options{Projects: projects, APIKey: apiKey, Paths: 40, StaticExportDuration: 4 * time.Second})
	apiURL, waitFake, err := fake.Serve(ctx, "127.0.0.1:0")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = waitFake() })
	t.Logf("started the fake in %s", time.Since(began).Round(100*time.Millisecond))
	return fake, apiURL, exporterBin
}
